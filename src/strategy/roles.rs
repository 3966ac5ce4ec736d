//! `applyMaxContextTokens`: a hard cap on a request's tokens, met by dropping whole units,
//! oldest first (TU.2) or by role priority (TU.3 `truncationPriority`).
//!
//! **A role listed first is dropped first**: `['assistant', 'user', 'system']` drops assistant
//! units, then user ones, then system ones; roles not listed are dropped last. Within one rank,
//! the oldest unit goes first. A unit's role is the role of its first message, so a tool call
//! and its results count as `assistant` (an orphan result alone is `tool`).
//!
//! What is never dropped: the unit of the last message (even when it alone exceeds the cap),
//! the first `system`/`developer` message with `keep_first_system`, and the units of the last
//! `n` messages of a role with `min_keep`. Within the cap nothing changes. The candidates are
//! sorted once by (rank, position) and walked once: O(n log n).

use crate::error::{Error, Result};
use crate::model::conversation::Conversation;
use crate::model::message::{quote, Role};
use crate::plan::{Opening, Plan};

/// The options of [`apply_max_context_tokens`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaxContextOptions {
  /// Roles in the order their units are dropped, the first listed first; roles not listed are
  /// dropped last. Empty: oldest first whatever the role.
  pub drop_order: Vec<Role>,
  /// Never drop the first `system` or `developer` message.
  pub keep_first_system: bool,
  /// For a role, keep at least its last `n` messages (with their units).
  pub min_keep: Vec<(Role, usize)>,
}

impl MaxContextOptions {
  /// Resolves the two spellings of the drop order: `truncationPriority` and `dropOrder` mean
  /// the same (the first listed is dropped first); either may be given, or both if equal.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming the option when a name is not a role, a role is listed
  /// twice, or both options are given and differ.
  pub fn drop_order_from(
    truncation_priority: Option<&[String]>,
    drop_order: Option<&[String]>,
  ) -> Result<Vec<Role>> {
    let priority = truncation_priority.map(|p| parse_roles("truncationPriority", p)).transpose()?;
    let order = drop_order.map(|d| parse_roles("dropOrder", d)).transpose()?;
    match (priority, order) {
      (Some(p), Some(o)) if p != o => Err(Error::option(
        "dropOrder",
        "differs from truncationPriority: they mean the same (listed first, dropped first), give one",
      )),
      (Some(p), _) => Ok(p),
      (None, Some(o)) => Ok(o),
      (None, None) => Ok(Vec::new()),
    }
  }
}

fn parse_roles(field: &str, names: &[String]) -> Result<Vec<Role>> {
  let mut roles: Vec<Role> = Vec::with_capacity(names.len());
  for (k, name) in names.iter().enumerate() {
    let role = Role::parse(name).ok_or_else(|| {
      Error::option(
        format!("{field}[{k}]"),
        format!("must be one of system, developer, user, assistant, tool, got {}", quote(name)),
      )
    })?;
    if roles.contains(&role) {
      return Err(Error::option(field, format!("lists {} twice", quote(name))));
    }
    roles.push(role);
  }
  Ok(roles)
}

/// The position of `role` in [`Role::ALL`], to index per-role tables.
fn slot(role: Role) -> usize {
  match role {
    Role::System => 0,
    Role::Developer => 1,
    Role::User => 2,
    Role::Assistant => 3,
    Role::Tool => 4,
  }
}

/// Drops whole units until the request's estimate (reply priming included) is at most
/// `max_tokens`, in the order of `options` (see the module documentation). Never reorders; a
/// tool call and its results go together.
pub fn apply_max_context_tokens(
  conv: &Conversation<'_>,
  max_tokens: usize,
  options: &MaxContextOptions,
) -> Plan {
  let n = conv.len();
  let mut plan = Plan::keep_all(n);
  let mut total = conv.total_tokens();
  if total <= max_tokens || n == 0 {
    return plan;
  }
  let messages = conv.messages();
  let units = conv.units();
  let mut protected = vec![false; units.len()];
  let mut protect = |i: usize| {
    if let Some(p) = protected.get_mut(conv.unit_of(i)) {
      *p = true;
    }
  };
  protect(n - 1);
  if options.keep_first_system {
    if let Some(i) = messages.iter().position(|m| m.role.is_instruction()) {
      protect(i);
    }
  }
  let mut wanted = [0usize; 5];
  for &(role, count) in &options.min_keep {
    wanted[slot(role)] = wanted[slot(role)].max(count);
  }
  if wanted.iter().any(|&w| w > 0) {
    for (i, m) in messages.iter().enumerate().rev() {
      let w = &mut wanted[slot(m.role)];
      if *w > 0 {
        *w -= 1;
        protect(i);
      }
    }
  }

  let mut rank = [options.drop_order.len(); 5];
  for (r, &role) in options.drop_order.iter().enumerate() {
    rank[slot(role)] = r;
  }
  let mut candidates: Vec<(usize, usize, usize)> = units
    .iter()
    .enumerate()
    .filter(|&(u, _)| !protected[u])
    .map(|(u, unit)| {
      let first = unit.first();
      (rank[slot(messages[first].role)], first, u)
    })
    .collect();
  // (rank, first index) is unique per unit: the order is total and deterministic.
  candidates.sort_unstable();
  // In a format that wants a user message first, the opening user message `Plan::conform`
  // brings back is counted before anything else is dropped for it.
  let mut opening = Opening::new(conv);
  for (_, _, u) in candidates {
    if total + plan.conform_tokens(conv, &mut opening) <= max_tokens {
      break;
    }
    let freed: usize = units[u].members.iter().map(|&i| conv.tokens(i)).sum();
    plan.drop_unit(conv, u);
    total -= freed;
  }
  if let Some(room) = max_tokens.checked_sub(total) {
    plan.open_within(conv, &mut opening, room);
  }
  plan
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::format::Format;
  use crate::model::message::Message;
  use crate::model::tokens::{Encoding, REPLY_PRIMING};
  use crate::output::validate::tests::{call, result, user};
  use crate::output::validate::validate_plan;

  fn text(role: Role, t: &str) -> Message {
    Message::text(role, t)
  }

  /// The dropped indices for a cap of the listed messages' tokens (plus reply priming).
  fn dropped_to_fit(msgs: &[Message], fit: &[usize], options: &MaxContextOptions) -> Vec<usize> {
    let conv = Conversation::new(msgs, Encoding::O200kBase);
    let cap = fit.iter().map(|&i| conv.tokens(i)).sum::<usize>() + REPLY_PRIMING;
    let plan = apply_max_context_tokens(&conv, cap, options);
    assert!(plan.total_tokens(&conv) <= cap);
    assert_eq!(validate_plan(msgs, &plan, Format::OpenAi), vec![]);
    assert!(plan.check_units(&conv).is_ok());
    plan.dropped()
  }

  fn order(roles: &[Role]) -> MaxContextOptions {
    MaxContextOptions { drop_order: roles.to_vec(), ..Default::default() }
  }

  /// system, user, assistant, user, assistant, user: every text the same size.
  fn chat() -> Vec<Message> {
    vec![
      text(Role::System, "rules of the house"),
      text(Role::User, "first question here"),
      text(Role::Assistant, "first answer given"),
      text(Role::User, "second question here"),
      text(Role::Assistant, "second answer given"),
      text(Role::User, "third question here"),
    ]
  }

  #[test]
  fn within_the_cap_nothing_changes() {
    let msgs = chat();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let plan = apply_max_context_tokens(&conv, conv.total_tokens(), &order(&[Role::User]));
    assert!(plan.is_identity());
    let empty: Vec<Message> = vec![];
    let conv = Conversation::new(&empty, Encoding::O200kBase);
    assert!(apply_max_context_tokens(&conv, 0, &MaxContextOptions::default()).is_identity());
  }

  #[test]
  fn without_priority_the_oldest_units_go_first() {
    let msgs = chat();
    let none = MaxContextOptions::default();
    assert_eq!(dropped_to_fit(&msgs, &[3, 4, 5], &none), vec![0, 1, 2]);
    assert_eq!(dropped_to_fit(&msgs, &[1, 2, 3, 4, 5], &none), vec![0]);
  }

  #[test]
  fn the_last_message_stays_even_when_it_alone_exceeds_the_cap() {
    let msgs = chat();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    for options in [MaxContextOptions::default(), order(&[Role::User])] {
      let plan = apply_max_context_tokens(&conv, 0, &options);
      assert_eq!(plan.dropped(), vec![0, 1, 2, 3, 4]);
    }
    // The last message's unit stays whole.
    let msgs = vec![user("u"), call(&["a", "b"]), result("a"), result("b")];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(apply_max_context_tokens(&conv, 0, &order(&[Role::Assistant])).dropped(), vec![0]);
  }

  #[test]
  fn listed_roles_are_dropped_first_in_list_order() {
    let msgs = chat();
    let priority = order(&[Role::Assistant, Role::User, Role::System]);
    // Both assistant messages go before the older user and system messages.
    assert_eq!(dropped_to_fit(&msgs, &[0, 1, 3, 5], &priority), vec![2, 4]);
    // Then users, oldest first; the system message last.
    assert_eq!(dropped_to_fit(&msgs, &[0, 3, 5], &priority), vec![1, 2, 4]);
    assert_eq!(dropped_to_fit(&msgs, &[5], &priority), vec![0, 1, 2, 3, 4]);
  }

  #[test]
  fn unlisted_roles_are_dropped_last_oldest_first() {
    let msgs = chat();
    // Only users listed: assistants and the system message are kept longest.
    let users_first = order(&[Role::User]);
    assert_eq!(dropped_to_fit(&msgs, &[0, 2, 4, 5], &users_first), vec![1, 3]);
    assert_eq!(dropped_to_fit(&msgs, &[2, 4, 5], &users_first), vec![0, 1, 3]);
    // An empty list is oldest-first.
    assert_eq!(dropped_to_fit(&msgs, &[3, 4, 5], &order(&[])), vec![0, 1, 2]);
  }

  #[test]
  fn keep_first_system_protects_the_first_instruction_message() {
    let mut msgs = chat();
    msgs.insert(1, text(Role::System, "more rules here"));
    let keep = MaxContextOptions { keep_first_system: true, ..Default::default() };
    assert_eq!(dropped_to_fit(&msgs, &[0, 6], &keep), vec![1, 2, 3, 4, 5]);
    let mut dev = chat();
    dev[0] = text(Role::Developer, "rules of the house");
    assert_eq!(dropped_to_fit(&dev, &[0, 5], &keep), vec![1, 2, 3, 4]);
  }

  #[test]
  fn min_keep_keeps_the_last_messages_of_a_role() {
    let msgs = chat();
    let keep_two_users =
      MaxContextOptions { min_keep: vec![(Role::User, 2)], ..Default::default() };
    // Oldest-first would drop message 3; the last two users (3 and 5) stay.
    assert_eq!(dropped_to_fit(&msgs, &[3, 4, 5], &keep_two_users), vec![0, 1, 2]);
    assert_eq!(dropped_to_fit(&msgs, &[3, 5], &keep_two_users), vec![0, 1, 2, 4]);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(apply_max_context_tokens(&conv, 0, &keep_two_users).dropped(), vec![0, 1, 2, 4]);
  }

  #[test]
  fn a_call_and_its_results_go_together_and_rank_as_assistant() {
    let msgs = vec![
      text(Role::System, "rules"),
      user("task"),
      call(&["a", "b"]),
      result("a"),
      result("b"),
      user("and now"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let cap = [0, 1, 5].iter().map(|&i| conv.tokens(i)).sum::<usize>() + REPLY_PRIMING;
    let plan = apply_max_context_tokens(&conv, cap, &order(&[Role::Assistant]));
    assert_eq!(plan.dropped(), vec![2, 3, 4]);
    // Listing `tool` does not single out results that belong to a call: their unit ranks as
    // assistant, so here every unit is unlisted and they go oldest first.
    let plan = apply_max_context_tokens(&conv, cap, &order(&[Role::Tool]));
    assert_eq!(plan.dropped(), vec![0, 1, 2, 3, 4]);
  }

  #[test]
  fn the_same_input_gives_the_same_plan() {
    let msgs = chat();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let options = order(&[Role::Assistant, Role::User]);
    let a = apply_max_context_tokens(&conv, 40, &options);
    let b = apply_max_context_tokens(&conv, 40, &options);
    assert_eq!(a, b);
  }

  #[test]
  fn the_two_spellings_of_the_order_resolve_or_say_what_is_wrong() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (ab, ba) = (s(&["assistant", "user"]), s(&["user", "assistant"]));
    assert_eq!(
      MaxContextOptions::drop_order_from(Some(&ab), None).unwrap(),
      vec![Role::Assistant, Role::User]
    );
    assert_eq!(
      MaxContextOptions::drop_order_from(None, Some(&ba)).unwrap(),
      vec![Role::User, Role::Assistant]
    );
    assert_eq!(MaxContextOptions::drop_order_from(Some(&ab), Some(&ab)).unwrap().len(), 2);
    assert!(MaxContextOptions::drop_order_from(None, None).unwrap().is_empty());
    for (p, d, text) in [
      (Some(s(&["user", "robot"])), None, "truncationPriority[1]: must be one of system, developer, user, assistant, tool, got \"robot\""),
      (None, Some(s(&["user", "user"])), "dropOrder: lists \"user\" twice"),
      (Some(ab.clone()), Some(ba.clone()), "dropOrder: differs from truncationPriority: they mean the same (listed first, dropped first), give one"),
    ] {
      let err = MaxContextOptions::drop_order_from(p.as_deref(), d.as_deref()).unwrap_err();
      assert_eq!(err.to_string(), text);
      assert_eq!(err.code(), "INVALID_OPTION");
    }
  }

  #[test]
  fn anthropic_counts_the_opening_user_message_before_dropping_for_it() {
    let answer = |id: &str, t: &str| {
      let mut m = text(Role::User, t);
      m.answers.push(id.into());
      m
    };
    let step = |id: &str| {
      let mut m = text(Role::Assistant, "");
      m.tool_calls.push(crate::model::message::ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: "{}".into(),
      });
      m
    };
    let msgs = vec![
      text(Role::System, "you are an agent"),
      text(Role::User, &"fix the bug ".repeat(30)),
      step("a"),
      answer("a", &"output a ".repeat(60)),
      step("b"),
      answer("b", &"output b ".repeat(60)),
      text(Role::User, &"and this ".repeat(5)),
      step("c"),
      answer("c", &"output c ".repeat(10)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase).with_format(Format::Anthropic);
    let options = MaxContextOptions { keep_first_system: true, ..Default::default() };
    let by_role =
      MaxContextOptions { drop_order: vec![Role::User, Role::Assistant], ..options.clone() };
    // The instructions, the shortest opening and the last step: the smallest valid request.
    let floor = conv.tokens(0) + conv.tokens(6) + conv.tokens(7) + conv.tokens(8) + REPLY_PRIMING;
    for options in [&options, &by_role] {
      for cap in floor..conv.total_tokens() + 2 {
        let mut plan = apply_max_context_tokens(&conv, cap, options);
        plan.conform(&conv);
        let total = plan.total_tokens(&conv);
        assert!(total <= cap, "{options:?} cap {cap}: {total} tokens");
        assert_eq!(validate_plan(&msgs, &plan, Format::Anthropic), vec![], "cap {cap}");
      }
    }
  }
}
