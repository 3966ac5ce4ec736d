//! The repair: fixes what the validator finds, without inventing content, and says what it did.
//!
//! A repair only removes messages, or (for a tool result whose content is `null`) sets the
//! content to an empty string. It never invents a result, never renames an id and never
//! reorders, so it returns a [`Plan`] over the caller's own messages:
//!
//! 1. A message that carries nothing (an [`EmptyMessage`](ProblemKind::EmptyMessage)) and a
//!    tool message naming no call are dropped first, so that they cannot separate a call from
//!    its results.
//! 2. Every result that cannot stand is dropped: an orphan, a second answer to one call, a
//!    result out of its place (results are never moved).
//! 3. A calling message that is left with a call nobody answers in place, or that uses one call
//!    id twice, is dropped together with all its results (its *unit*), even when it also has
//!    text: the calls cannot be removed from a message without rewriting it, and a result is
//!    never made up. Where a format wants ids unique across messages, of two calls sharing an
//!    id the earlier unit goes: results pair with the latest call, and recent context is worth
//!    more.
//!
//! Problems of message order that only merging or moving messages could fix
//! ([`ConsecutiveSameRole`](ProblemKind::ConsecutiveSameRole),
//! [`FirstMessageNotUser`](ProblemKind::FirstMessageNotUser)) are left as they are: validate
//! the result to see them.

use crate::error::{Error, ErrorKind};
use crate::model::format::{Format, Rules};
use crate::model::message::{quote, Message, Role};
use crate::model::tokens::{message_tokens, Encoding};
use crate::output::validate::{emptiness, scan, ProblemKind};
use crate::plan::{Plan, Replacement};

/// What a repair did to one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairAction {
  /// The message was left out.
  Drop,
  /// The message was returned as a copy with its `null` content set to an empty string.
  Replace,
}

/// One change a repair made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
  /// The index of the message in the input.
  pub index: usize,
  /// The problem that the change fixes.
  pub kind: ProblemKind,
  /// What was done.
  pub action: RepairAction,
  /// A sentence saying what was done and why (lower-case, no trailing period).
  pub message: String,
}

/// A repaired conversation: the plan to apply to the caller's messages, and what it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
  /// A decision per message.
  pub plan: Plan,
  /// The changes, in message order (one per changed message).
  pub repairs: Vec<Repair>,
  /// Set when the repaired conversation has no message a provider accepts a request with: none
  /// was given, every one was dropped, or (where the instructions travel apart, Anthropic) only
  /// instructions are left. Says which, as a sentence; see [`Repaired::check_not_empty`].
  pub nothing_left: Option<String>,
}

impl Repaired {
  /// Refuses a repair that leaves nothing to send: every provider rejects a request without
  /// messages, so returning one would only move the error to the provider.
  ///
  /// # Errors
  ///
  /// An [`ErrorKind::EmptyConversation`] error saying why nothing is left.
  pub fn check_not_empty(&self) -> Result<(), Error> {
    match &self.nothing_left {
      None => Ok(()),
      Some(why) => Err(Error::new(ErrorKind::EmptyConversation, "messages", why.clone())),
    }
  }
}

/// Repairs `messages` for `format` (see the module documentation for the rules). A valid
/// conversation comes back unchanged with no repair; what a repair returns always passes
/// [`crate::output::validate::validate`] but for the order problems it leaves.
pub fn repair<M: std::borrow::Borrow<Message>>(messages: &[M], format: Format) -> Repaired {
  let refs: Vec<&Message> = messages.iter().map(std::borrow::Borrow::borrow).collect();
  repair_with(&refs, &format.rules())
}

/// [`repair`] under explicit rules.
pub(crate) fn repair_with(messages: &[&Message], rules: &Rules) -> Repaired {
  let n = messages.len();
  let mut changes: Vec<Option<(ProblemKind, RepairAction, String)>> = vec![None; n];
  let mut replaced = vec![false; n];

  // 1. Messages that carry nothing, or that answer no call at all.
  let mut skip = vec![false; n];
  for (i, m) in messages.iter().enumerate() {
    let change = if m.role == Role::Tool && !m.answers_anything() {
      Some((
        ProblemKind::MissingToolCallId,
        RepairAction::Drop,
        "dropped: tool message has no tool_call_id, so it answers no call".to_string(),
      ))
    } else if let Some(why) = emptiness(m, rules) {
      // An empty string is content where blank text counts as content: a result keeps its
      // place (and its call) with it. Elsewhere the message goes.
      if m.is_tool_result() && !rules.blank_text_is_empty {
        replaced[i] = true;
        Some((
          ProblemKind::EmptyMessage,
          RepairAction::Replace,
          format!("set the content to an empty string: {why}"),
        ))
      } else {
        Some((ProblemKind::EmptyMessage, RepairAction::Drop, format!("dropped: {why}")))
      }
    } else {
      None
    };
    if let Some(c) = change {
      skip[i] = c.1 == RepairAction::Drop;
      changes[i] = Some(c);
    }
  }

  // 2. Results that cannot stand, and the calls they leave unanswered.
  let found = scan(messages, rules, Some(&skip));
  let mut dead: Vec<Option<(ProblemKind, String)>> = vec![None; n];
  let mut kill = |j: usize, kind: ProblemKind, why: String| {
    if let Some(slot @ None) = dead.get_mut(j) {
      *slot = Some((kind, why));
    }
  };
  for p in &found.problems {
    match p.kind {
      ProblemKind::OrphanResult | ProblemKind::DuplicateResult => {
        set_drop(&mut changes, p.index, p.kind, format!("dropped: {}", p.message));
      }
      ProblemKind::MisplacedResult => {
        set_drop(&mut changes, p.index, p.kind, format!("dropped: {}", p.message));
        if let Some(j) = p.related {
          let why = format!(
            "its tool call is answered only by the misplaced result in message {}",
            p.index
          );
          kill(j, p.kind, why);
        }
      }
      ProblemKind::CallWithoutResult => kill(p.index, p.kind, p.message.clone()),
      ProblemKind::DuplicateCallId => match p.related {
        Some(j) if j == p.index => kill(j, p.kind, p.message.clone()),
        Some(j) => {
          let why = match shared_call_id(messages, j, p.index) {
            Some(id) => {
              format!("its tool call id {} is used again by message {}", quote(id), p.index)
            }
            None => format!("one of its tool call ids is used again by message {}", p.index),
          };
          kill(j, p.kind, why);
        }
        None => {}
      },
      // Dropped in step 1: a scan that skips them cannot see them.
      ProblemKind::EmptyMessage | ProblemKind::MissingToolCallId => {}
      // Only merging or moving messages would fix these: left for the caller.
      ProblemKind::ConsecutiveSameRole | ProblemKind::FirstMessageNotUser => {}
      // Nothing to fix by dropping: `nothing_left` reports it.
      ProblemKind::EmptyConversation => {}
    }
  }
  // A result dropped for one of its answers leaves its other, in-place answers missing (a
  // format whose results answer several calls per message).
  for &(r, j) in &found.in_place {
    if let Some(Some((kind, RepairAction::Drop, _))) = changes.get(r) {
      let kind = *kind;
      kill(j, kind, format!("its result in message {r} was dropped"));
    }
  }

  // 3. Calling messages that lost a result, with every result they still have.
  for (j, reason) in dead.iter().enumerate() {
    if let Some((kind, why)) = reason {
      set_drop(&mut changes, j, *kind, format!("dropped with its results: {why}"));
    }
  }
  for &(r, j) in &found.in_place {
    if let Some(Some((kind, why))) = dead.get(j) {
      set_drop(&mut changes, r, *kind, format!("dropped with its call in message {j}: {why}"));
    }
  }
  follow_drops(&mut changes, &found.in_place);

  let mut plan = Plan::keep_all(n);
  let mut repairs = Vec::new();
  for (i, change) in changes.into_iter().enumerate() {
    let Some((kind, action, message)) = change else { continue };
    match action {
      RepairAction::Drop => plan.drop_message(i),
      RepairAction::Replace => {
        if let (Some(m), true) = (messages.get(i), replaced[i]) {
          // `null` and `''` both count zero tokens: the message costs what it did.
          let tokens = message_tokens(m, Encoding::default());
          plan.replace(i, Replacement::new("".into(), Vec::new(), tokens));
        }
      }
    }
    repairs.push(Repair { index: i, kind, action, message });
  }
  let nothing_left = nothing_left(messages, rules, &plan, &repairs);
  Repaired { plan, repairs, nothing_left }
}

/// Why the repaired conversation has no message a request can be made of, if it has none.
fn nothing_left(
  messages: &[&Message],
  rules: &Rules,
  plan: &Plan,
  repairs: &[Repair],
) -> Option<String> {
  let kept = |i: usize| !plan.is_dropped(i);
  let counts =
    |(i, m): (usize, &&Message)| kept(i) && !(rules.instructions_apart && m.role.is_instruction());
  if messages.iter().enumerate().any(counts) {
    return None;
  }
  let dropped = repairs.iter().filter(|r| r.action == RepairAction::Drop).count();
  Some(if messages.is_empty() {
    "the conversation has no message, and every provider requires one".into()
  } else if (0..messages.len()).any(kept) {
    format!(
      "the repair leaves only the instructions ({dropped} of {} messages dropped), and the provider requires a message besides them",
      messages.len()
    )
  } else {
    format!(
      "the repair drops every message ({dropped} of {}), and every provider requires one",
      messages.len()
    )
  })
}

/// Makes every drop take its partners along, whatever the reason for the drop: a dropped calling
/// message takes the results it has in place, and a dropped result takes its calling message
/// (which then takes its other results). A message can be both: a tool message that also
/// carries tool calls, or an orphan result that calls (found by fuzzing), so the drops are
/// followed through a worklist until none is left. O(n + results).
fn follow_drops(
  changes: &mut [Option<(ProblemKind, RepairAction, String)>],
  in_place: &[(usize, usize)],
) {
  let n = changes.len();
  let dropped =
    |c: &Option<(ProblemKind, RepairAction, String)>| matches!(c, Some((_, RepairAction::Drop, _)));
  // partners[i]: (partner, whether i is the calling message of the pair).
  let mut partners: Vec<Vec<(usize, bool)>> = vec![Vec::new(); n];
  for &(r, j) in in_place {
    if r < n && j < n {
      partners[j].push((r, true));
      partners[r].push((j, false));
    }
  }
  let mut work: Vec<usize> = (0..n).filter(|&i| dropped(&changes[i])).collect();
  while let Some(i) = work.pop() {
    let kind = match &changes[i] {
      Some((kind, _, _)) => *kind,
      None => continue,
    };
    for &(p, i_calls) in &partners[i] {
      if dropped(&changes[p]) {
        continue;
      }
      let why = if i_calls {
        format!("dropped with its call in message {i}, which is dropped")
      } else {
        format!("dropped with its results: its result in message {i} is dropped")
      };
      changes[p] = Some((kind, RepairAction::Drop, why));
      work.push(p);
    }
  }
}

/// Marks message `i` dropped, unless it already is (the first reason stays).
fn set_drop(
  changes: &mut [Option<(ProblemKind, RepairAction, String)>],
  i: usize,
  kind: ProblemKind,
  message: String,
) {
  if let Some(slot) = changes.get_mut(i) {
    if !matches!(slot, Some((_, RepairAction::Drop, _))) {
      *slot = Some((kind, RepairAction::Drop, message));
    }
  }
}

/// A tool call id that messages `a` and `b` both use.
fn shared_call_id<'m>(messages: &[&'m Message], a: usize, b: usize) -> Option<&'m str> {
  let (ma, mb) = (messages.get(a)?, messages.get(b)?);
  mb.tool_calls.iter().map(|c| c.id.as_str()).find(|id| ma.tool_calls.iter().any(|c| c.id == *id))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::Content;
  use crate::output::validate::tests::{call, result, user};
  use crate::output::validate::{validate, validate_plan};
  use crate::plan::Action;

  fn dropped(msgs: &[Message]) -> Vec<usize> {
    repair(msgs, Format::OpenAi).plan.dropped()
  }

  fn sentences(msgs: &[Message]) -> Vec<(usize, ProblemKind, String)> {
    repair(msgs, Format::OpenAi).repairs.into_iter().map(|r| (r.index, r.kind, r.message)).collect()
  }

  #[test]
  fn a_dropped_result_that_also_calls_takes_its_results_along() {
    // Found by fuzzing: an orphan tool message carrying tool calls was dropped alone, leaving
    // the result of its call an orphan.
    let mut orphan_caller = result("ghost");
    orphan_caller.tool_calls = call(&["b"]).tool_calls;
    let msgs = vec![user("u"), orphan_caller, result("b"), user("v")];
    let r = repair(&msgs, Format::OpenAi);
    assert_eq!(r.plan.dropped(), vec![1, 2]);
    assert_eq!(r.repairs[1].message, "dropped with its call in message 1, which is dropped");
    assert_eq!(validate_plan(&msgs, &r.plan, Format::OpenAi), vec![]);
    // A chain: the call of message 1 is answered by message 2, which calls again.
    let mut chained = result("a");
    chained.tool_calls = call(&["c"]).tool_calls;
    let msgs = vec![user("u"), call(&["a", "x"]), chained, result("c"), user("v")];
    let r = repair(&msgs, Format::OpenAi);
    assert_eq!(r.plan.dropped(), vec![1, 2, 3]);
    assert_eq!(validate_plan(&msgs, &r.plan, Format::OpenAi), vec![]);
  }

  #[test]
  fn a_valid_conversation_is_left_alone() {
    let msgs = vec![user("u"), call(&["a", "b"]), result("a"), result("b"), user("v")];
    let r = repair(&msgs, Format::OpenAi);
    assert!(r.plan.is_identity());
    assert!(r.repairs.is_empty());
  }

  #[test]
  fn orphans_and_duplicate_results_are_dropped_alone() {
    let msgs = vec![user("u"), result("x"), call(&["a"]), result("a"), result("a"), user("v")];
    assert_eq!(dropped(&msgs), vec![1, 4]);
    assert_eq!(
      sentences(&msgs),
      vec![
        (
          1,
          ProblemKind::OrphanResult,
          "dropped: tool result for call \"x\" answers no earlier tool call".into()
        ),
        (
          4,
          ProblemKind::DuplicateResult,
          "dropped: call \"a\" is already answered by message 3".into()
        ),
      ]
    );
  }

  #[test]
  fn a_call_missing_one_result_goes_with_the_results_it_has() {
    let mut with_text = call(&["a", "b"]);
    with_text.content = Content::Text("let me look at both files".into());
    let msgs = vec![user("u"), with_text, result("a"), user("v")];
    assert_eq!(dropped(&msgs), vec![1, 2]);
    assert_eq!(
      sentences(&msgs),
      vec![
        (
          1,
          ProblemKind::CallWithoutResult,
          "dropped with its results: tool call \"b\" (read_file) has no tool result".into()
        ),
        (
          2,
          ProblemKind::CallWithoutResult,
          "dropped with its call in message 1: tool call \"b\" (read_file) has no tool result"
            .into()
        ),
      ]
    );
    // A pending call at the very end goes too: the provider rejects it as well.
    assert_eq!(dropped(&[user("u"), call(&["z"])]), vec![1]);
  }

  #[test]
  fn a_misplaced_result_is_dropped_and_takes_its_call_along() {
    let msgs = vec![user("u"), call(&["a", "b"]), result("a"), user("hey"), result("b")];
    assert_eq!(dropped(&msgs), vec![1, 2, 4]);
    assert_eq!(
      sentences(&msgs)[0].2,
      "dropped with its results: its tool call is answered only by the misplaced result in message 4"
    );
  }

  #[test]
  fn an_empty_message_between_a_call_and_its_result_is_dropped_first() {
    let mut empty = Message::text(Role::Assistant, "");
    empty.content = Content::Empty;
    let msgs = vec![user("u"), call(&["a"]), empty, result("a")];
    assert_eq!(dropped(&msgs), vec![2]);
    assert_eq!(
      sentences(&msgs),
      vec![(
        2,
        ProblemKind::EmptyMessage,
        "dropped: assistant message has neither content nor tool calls".into()
      )]
    );
  }

  #[test]
  fn a_null_tool_result_gets_an_empty_string_and_keeps_its_pair() {
    let mut null = result("a");
    null.content = Content::Empty;
    let msgs = vec![user("u"), call(&["a"]), null, Message::text(Role::Tool, "no id")];
    let r = repair(&msgs, Format::OpenAi);
    assert_eq!(r.plan.dropped(), vec![3]);
    match r.plan.action(2) {
      Action::Replace(rep) => assert_eq!(&*rep.content, ""),
      other => panic!("expected a replacement, got {other:?}"),
    }
    assert_eq!(r.repairs[0].action, RepairAction::Replace);
    assert_eq!(
      r.repairs[0].message,
      "set the content to an empty string: tool message has no content"
    );
    assert_eq!(
      r.repairs[1].message,
      "dropped: tool message has no tool_call_id, so it answers no call"
    );
    assert_eq!(validate_plan(&msgs, &r.plan, Format::OpenAi), vec![]);
  }

  #[test]
  fn a_message_using_one_id_twice_goes_with_its_results() {
    let twice = vec![user("u"), call(&["a", "a"]), result("a"), result("a"), user("v")];
    assert_eq!(dropped(&twice), vec![1, 2, 3]);
    assert_eq!(
      sentences(&twice)[0].2,
      "dropped with its results: tool call id \"a\" is used twice in this message"
    );
  }

  #[test]
  fn where_ids_must_be_unique_the_earlier_of_two_units_goes() {
    let msgs = vec![user("u"), call(&["a"]), result("a"), call(&["a"]), result("a")];
    assert!(dropped(&msgs).is_empty());
    let unique = Rules { unique_call_ids: true, ..Format::OpenAi.rules() };
    let r = repair_with(&msgs.iter().collect::<Vec<_>>(), &unique);
    assert_eq!(r.plan.dropped(), vec![1, 2]);
    assert_eq!(
      r.repairs[0].message,
      "dropped with its results: its tool call id \"a\" is used again by message 3"
    );
  }

  #[test]
  fn a_repair_that_leaves_nothing_says_so() {
    let orphan = result("x");
    let r = repair(&[orphan], Format::OpenAi);
    assert!(r.plan.is_dropped(0));
    let err = r.check_not_empty().unwrap_err();
    assert_eq!(err.code(), "EMPTY_CONVERSATION");
    assert_eq!(
      err.to_string(),
      "messages: the repair drops every message (1 of 1), and every provider requires one"
    );
    let none = repair::<Message>(&[], Format::OpenAi).check_not_empty().unwrap_err();
    assert_eq!(
      none.to_string(),
      "messages: the conversation has no message, and every provider requires one"
    );
    // Anthropic sends the instructions apart: instructions alone are nothing to send.
    let left = repair(&[Message::text(Role::System, "s"), result("x")], Format::Anthropic);
    assert_eq!(
      left.nothing_left.as_deref(),
      Some("the repair leaves only the instructions (1 of 2 messages dropped), and the provider requires a message besides them")
    );
    // OpenAI takes a system message alone.
    assert_eq!(
      repair(&[Message::text(Role::System, "s"), result("x")], Format::OpenAi).nothing_left,
      None
    );
    assert_eq!(repair(&[user("u")], Format::OpenAi).check_not_empty(), Ok(()));
  }

  /// Parses JSON messages in `format`.
  fn parsed(format: Format, messages: serde_json::Value) -> Vec<Message> {
    crate::model::format::parse_messages(&messages, Some(format)).unwrap().1
  }

  #[test]
  fn server_side_tools_are_valid_and_kept() {
    // Anthropic: server tools run by the provider, call and result in the same assistant turn.
    let anthropic = parsed(
      Format::Anthropic,
      serde_json::json!([
        {"role": "user", "content": "what is new in rust?"},
        {"role": "assistant", "content": [
          {"type": "text", "text": "searching"},
          {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust release"}},
          {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "url": "https://blog.rust-lang.org", "title": "Rust"}]},
          {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch", "input": {"url": "https://blog.rust-lang.org"}},
          {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {"type": "web_fetch_result", "url": "https://blog.rust-lang.org"}},
          {"type": "server_tool_use", "id": "srvtoolu_3", "name": "code_execution", "input": {"code": "print(1)"}},
          {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_3", "content": {"type": "code_execution_result", "stdout": "1", "stderr": "", "return_code": 0}},
          {"type": "text", "text": "Rust 2.0 is out"}
        ]},
        {"role": "user", "content": "thanks"}
      ]),
    );
    assert_eq!(validate(&anthropic, Format::Anthropic), vec![]);
    let r = repair(&anthropic, Format::Anthropic);
    assert!(r.plan.is_identity() && r.repairs.is_empty());
    // A client tool in the same turn still pairs with the next user message's tool_result.
    let mixed = parsed(
      Format::Anthropic,
      serde_json::json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
          {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
          {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
          {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}
      ]),
    );
    assert_eq!(validate(&mixed, Format::Anthropic), vec![]);
    assert_eq!(validate(&mixed[..2], Format::Anthropic)[0].kind, ProblemKind::CallWithoutResult);
    // AI SDK: a provider-executed tool call with its result in the assistant message.
    let ai_sdk = parsed(
      Format::AiSdk,
      serde_json::json!([
        {"role": "user", "content": "search"},
        {"role": "assistant", "content": [
          {"type": "tool-call", "toolCallId": "ws_1", "toolName": "web_search", "input": {"query": "q"}, "providerExecuted": true},
          {"type": "tool-result", "toolCallId": "ws_1", "toolName": "web_search", "output": {"type": "json", "value": {"results": []}}},
          {"type": "text", "text": "found nothing"}
        ]},
        {"role": "user", "content": "ok"}
      ]),
    );
    assert_eq!(validate(&ai_sdk, Format::AiSdk), vec![]);
    assert!(repair(&ai_sdk, Format::AiSdk).plan.is_identity());
    // Their text is counted.
    assert!(crate::model::tokens::message_tokens(&anthropic[1], Encoding::default()) > 20);
  }

  #[test]
  fn repaired_outputs_validate_on_many_broken_conversations() {
    // Every conversation of up to 6 messages drawn from a small alphabet: calls with one or
    // two ids, results (sometimes for unknown or repeated ids), user text, empty messages.
    let mut empty = Message::text(Role::Assistant, "");
    empty.content = Content::Empty;
    let alphabet = vec![
      user("u"),
      call(&["a"]),
      call(&["b", "c"]),
      call(&["a", "b"]),
      result("a"),
      result("b"),
      result("c"),
      Message::text(Role::Tool, "no id"),
      empty,
    ];
    let mut checked = 0;
    let mut stack: Vec<Vec<usize>> = vec![vec![]];
    while let Some(word) = stack.pop() {
      let msgs: Vec<Message> = word.iter().map(|&k| alphabet[k].clone()).collect();
      let r = repair(&msgs, Format::OpenAi);
      // A repair that leaves nothing says so (the binding throws EMPTY_CONVERSATION); what it
      // returns otherwise validates.
      let problems = validate_plan(&msgs, &r.plan, Format::OpenAi);
      match &r.nothing_left {
        Some(_) => assert!(
          problems.iter().all(|p| p.kind == ProblemKind::EmptyConversation) && !problems.is_empty(),
          "{word:?}"
        ),
        None => assert_eq!(problems, vec![], "{word:?}"),
      }
      let valid = validate(&msgs, Format::OpenAi).is_empty();
      assert_eq!(r.plan.is_identity(), valid || msgs.is_empty(), "{word:?}");
      checked += 1;
      if word.len() < 5 {
        for k in 0..alphabet.len() {
          let mut next = word.clone();
          next.push(k);
          stack.push(next);
        }
      }
    }
    assert_eq!(checked, (0..=5).map(|l| 9usize.pow(l)).sum::<usize>());
  }

  /// AI SDK 6 tool approvals: a call whose approval the last message answers is run (or
  /// refused) by the SDK before the model sees the request, so it needs no result yet, and the
  /// response answers the request, not a call. A response that answers no request is dropped;
  /// a call still without a result once the conversation went on is dropped with its response.
  #[test]
  fn tool_approvals_pair_their_request_and_response() {
    use crate::testing::approval_session;
    use serde_json::json;
    let kinds = |msgs: &[Message]| -> Vec<(usize, ProblemKind)> {
      validate(msgs, Format::AiSdk).into_iter().map(|p| (p.index, p.kind)).collect()
    };
    let repaired = |msgs: &[Message]| repair(msgs, Format::AiSdk).plan.dropped();
    // Approved, waiting for the SDK to run the call.
    let pending = approval_session(json!([]));
    assert_eq!(kinds(&pending), []);
    assert_eq!(repaired(&pending), Vec::<usize>::new());
    let conv = crate::model::conversation::Conversation::new(
      &pending,
      crate::model::tokens::Encoding::O200kBase,
    );
    assert_eq!(conv.unit_of(2), conv.unit_of(3), "the response goes with its request");
    // Run: its result follows in a tool message of its own.
    let result = json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "deleteFile", "output": {"type": "text", "value": "deleted"}}]});
    let done = approval_session(json!([result, {"role": "assistant", "content": "Deleted."}]));
    assert_eq!(kinds(&done), []);
    // Went on without a result: the call is unanswered, and goes with its response.
    let stuck = approval_session(json!([{"role": "user", "content": "and?"}]));
    assert_eq!(kinds(&stuck), [(2, ProblemKind::CallWithoutResult)]);
    assert_eq!(repaired(&stuck), [2, 3]);
    // A response to no request.
    let orphan = approval_session(
      json!([{"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "a9", "approved": false}]}]),
    );
    assert_eq!(
      kinds(&orphan),
      [(2, ProblemKind::CallWithoutResult), (4, ProblemKind::OrphanResult)]
    );
    assert_eq!(
      validate(&orphan, Format::AiSdk)[1].message,
      "tool approval response \"a9\" answers no earlier approval request"
    );
    assert_eq!(repaired(&orphan), [2, 3, 4]);
  }
}
