//! Phase 1 trimming: drop the oldest messages first.
//!
//! Units (a call with its results, or a single message) are dropped from the oldest until the
//! request fits `target` tokens. A unit holding a `system`/`developer` message or the last
//! message is never dropped; when the budget cannot be met without them the outcome is
//! `over_budget`. In a format that wants a user message first (Anthropic), the user message the
//! result must open with (see [`Plan::conform`]) is counted while deciding what to drop, so the
//! budget is met whenever the instructions, that opening and the last unit fit.

use crate::model::conversation::Conversation;
use crate::plan::{Opening, Plan};
use crate::strategy::{Outcome, Tally};

/// Trims `conv` to `target` tokens, oldest units first.
pub fn trim_by_age(conv: &Conversation<'_>, target: usize) -> Outcome {
  Outcome::new(conv, drop_oldest(conv, Plan::keep_all(conv.len()), target), target)
}

/// Continues `plan` the way [`trim_by_age`] trims: drops the oldest units it still returns
/// until the request fits `target` tokens, never a unit holding a `system`/`developer` message
/// or the last message. What `plan` already dropped or replaced stays so.
pub fn drop_oldest(conv: &Conversation<'_>, plan: Plan, target: usize) -> Plan {
  drop_oldest_keeping(conv, plan, target, &[])
}

/// [`drop_oldest`] that also never drops the units flagged `true` in `keep` (indexed by unit;
/// missing entries are `false`), e.g. the current task's.
pub fn drop_oldest_keeping(
  conv: &Conversation<'_>,
  mut plan: Plan,
  target: usize,
  keep: &[bool],
) -> Plan {
  let mut tally = Tally::of(conv, &plan);
  let last = conv.len().checked_sub(1);
  // In a format that wants a user message first, the opening user message `Plan::conform`
  // brings back is counted before anything else is dropped for it.
  let mut opening = Opening::new(conv);
  for (u, unit) in conv.units().iter().enumerate() {
    if tally.total() + plan.conform_tokens(conv, &mut opening) <= target {
      break;
    }
    let protected = keep.get(u).copied().unwrap_or(false)
      || unit.members.iter().any(|&i| Some(i) == last || conv.messages()[i].role.is_instruction());
    if !protected {
      tally.drop_unit(conv, &mut plan, u);
    }
  }
  if let Some(room) = target.checked_sub(tally.total()) {
    plan.open_within(conv, &mut opening, room);
  }
  plan
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::testing::{call, result};

  #[test]
  fn drops_oldest_units_first_keeping_system_and_the_last_message() {
    let msgs = vec![
      Message::text(Role::System, "system prompt"),
      Message::text(Role::User, "old question ".repeat(20)),
      call("a", "bash", "{}"),
      result("a", &"output ".repeat(50)),
      Message::text(Role::User, "recent question"),
      Message::text(Role::Assistant, "recent answer"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let everything_but_1 = conv.total_tokens() - conv.tokens(1);
    let out = trim_by_age(&conv, everything_but_1);
    assert_eq!(out.plan.dropped(), vec![1]);
    assert!(!out.over_budget);
    assert_eq!(out.total_tokens, everything_but_1);
    assert_eq!(out.saved_tokens, conv.tokens(1));
    // One token less: the call and its result go together.
    let out = trim_by_age(&conv, everything_but_1 - 1);
    assert_eq!(out.plan.dropped(), vec![1, 2, 3]);
    assert!(out.plan.check_units(&conv).is_ok());
    // Nothing fits: the system prompt and the last message stay, over budget.
    let out = trim_by_age(&conv, 0);
    assert_eq!(out.plan.dropped(), vec![1, 2, 3, 4]);
    assert!(out.over_budget);
    assert_eq!(out.total_tokens, out.plan.total_tokens(&conv));
    assert_eq!(out.dropped, vec![1, 2, 3, 4]);
  }

  #[test]
  fn drop_oldest_continues_a_plan() {
    let msgs = vec![
      Message::text(Role::System, "system prompt"),
      Message::text(Role::User, "old question ".repeat(20)),
      Message::text(Role::User, "another question ".repeat(20)),
      Message::text(Role::User, "recent question"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut start = Plan::keep_all(4);
    start.drop_unit(&conv, 2);
    // Message 2 is already gone: fitting without message 1 drops message 1 only.
    let target = conv.tokens(0) + conv.tokens(3) + 3;
    let plan = drop_oldest(&conv, start.clone(), target);
    assert_eq!(plan.dropped(), vec![1, 2]);
    assert_eq!(plan.total_tokens(&conv), target);
    // Already within the target: unchanged.
    assert_eq!(drop_oldest(&conv, start.clone(), conv.total_tokens()), start);
  }

  /// An Anthropic tool result: a user message answering `id`.
  fn anthropic_result(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::User, text);
    m.answers.push(id.into());
    m
  }

  /// An Anthropic agent run: instructions, one task, then tool steps.
  fn anthropic_run(task_words: usize) -> Vec<Message> {
    vec![
      Message::text(Role::System, "you are an agent"),
      Message::text(Role::User, "fix the bug ".repeat(task_words)),
      call("a", "bash", "{}"),
      anthropic_result("a", &"output a ".repeat(60)),
      call("b", "bash", "{}"),
      anthropic_result("b", &"output b ".repeat(60)),
      call("c", "bash", "{}"),
      anthropic_result("c", &"output c ".repeat(10)),
    ]
  }

  #[test]
  fn anthropic_counts_the_opening_user_message_before_dropping_for_it() {
    let msgs = anthropic_run(30);
    let conv = Conversation::new(&msgs, Encoding::O200kBase).with_format(crate::Format::Anthropic);
    // Instructions, the task and the last step: the smallest valid request.
    let floor = conv.tokens(0) + conv.tokens(1) + conv.tokens(6) + conv.tokens(7) + 3;
    let mut previous = 0;
    for target in floor..conv.total_tokens() + 2 {
      let out = trim_by_age(&conv, target);
      assert!(out.total_tokens <= target, "target {target}: {} tokens", out.total_tokens);
      assert!(!out.over_budget, "target {target}");
      assert!(!out.plan.is_dropped(1), "target {target}: the task opens the request");
      assert!(out.plan.check_units(&conv).is_ok());
      // A larger budget never returns less.
      assert!(out.total_tokens >= previous, "target {target}");
      previous = out.total_tokens;
    }
    // Dropping the task and one step would fit the raw count at the floor, but the task comes
    // back: the step goes instead.
    let out = trim_by_age(&conv, floor);
    assert_eq!(out.plan.dropped(), vec![2, 3, 4, 5]);
    assert_eq!(out.total_tokens, floor);
    // Below the floor: over budget, and says so.
    assert!(trim_by_age(&conv, floor - 1).over_budget);
  }

  #[test]
  fn anthropic_opens_with_an_earlier_shorter_user_message_when_the_latest_does_not_fit() {
    let mut msgs = anthropic_run(2);
    // A long second turn after the first step: the latest user message before the last step.
    msgs.insert(4, Message::text(Role::User, "now also do this ".repeat(80)));
    let conv = Conversation::new(&msgs, Encoding::O200kBase).with_format(crate::Format::Anthropic);
    let last_step = conv.tokens(7) + conv.tokens(8);
    let target = conv.tokens(0) + conv.tokens(1) + last_step + 3;
    let out = trim_by_age(&conv, target);
    assert_eq!(out.plan.dropped(), vec![2, 3, 4, 5, 6]);
    assert_eq!(out.total_tokens, target);
    assert!(!out.over_budget);
    assert_eq!(
      crate::output::validate::validate_plan(&msgs, &out.plan, crate::Format::Anthropic),
      vec![]
    );
  }

  #[test]
  fn a_budget_already_met_changes_nothing() {
    let msgs = vec![Message::text(Role::User, "hi")];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let out = trim_by_age(&conv, conv.total_tokens());
    assert!(out.plan.is_identity() && !out.over_budget && out.saved_tokens == 0);
    let empty = Conversation::new(&[], Encoding::O200kBase);
    assert_eq!(trim_by_age(&empty, 0).total_tokens, 0);
  }
}
