//! The validator: what in a conversation a provider would reject, each problem with the index
//! of the message, a kind and a sentence.
//!
//! The pairing checks are the same for every [`Format`]: a tool result must answer an earlier
//! call, each call is answered exactly once, call ids are not reused. The rest follows the
//! format's [`Rules`]: where results must be, what counts as an empty message, whether roles
//! must alternate, whether the first message must be a user message. One pass, O(n).
//!
//! ```
//! use context_trim::{output::validate::validate, Format, Message, Role};
//! let mut result = Message::text(Role::Tool, "42");
//! result.answers.push("call_1".into());
//! let problems = validate(&[Message::text(Role::User, "hi"), result], Format::OpenAi);
//! assert_eq!(problems[0].message, "tool result for call \"call_1\" answers no earlier tool call");
//! ```

use std::collections::HashMap;

use std::borrow::Borrow;

use crate::model::format::{Format, Placement, Rules};
use crate::model::message::{quote, Content, Message, Part, Role};
use crate::plan::{Action, Plan, Step};

/// The kinds of [`Problem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ProblemKind {
  /// A tool result whose call id no earlier message calls.
  OrphanResult,
  /// A tool call that no result answers.
  CallWithoutResult,
  /// A tool result that answers an earlier call but not where the format wants it (OpenAI:
  /// among the tool messages directly after the calling message).
  MisplacedResult,
  /// A tool call whose id an earlier call of the same message already uses (or of an earlier
  /// message, in a format whose ids must be unique).
  DuplicateCallId,
  /// A second result for a call that is already answered.
  DuplicateResult,
  /// A tool message that names no call (OpenAI: no `tool_call_id`).
  MissingToolCallId,
  /// A message without content (and without tool calls) where the provider requires some.
  EmptyMessage,
  /// Two consecutive messages with the same role, where the format wants them to alternate.
  ConsecutiveSameRole,
  /// A first message (after the instructions) that is not a user message, where the format
  /// requires one.
  FirstMessageNotUser,
  /// A conversation with no message (or, where the instructions travel apart, none besides
  /// them): every provider rejects a request without one. Reported at index 0.
  EmptyConversation,
}

impl ProblemKind {
  /// Every kind.
  pub const ALL: [ProblemKind; 10] = [
    ProblemKind::OrphanResult,
    ProblemKind::CallWithoutResult,
    ProblemKind::MisplacedResult,
    ProblemKind::DuplicateCallId,
    ProblemKind::DuplicateResult,
    ProblemKind::MissingToolCallId,
    ProblemKind::EmptyMessage,
    ProblemKind::ConsecutiveSameRole,
    ProblemKind::FirstMessageNotUser,
    ProblemKind::EmptyConversation,
  ];

  /// The kind's stable name, as JavaScript sees it (`orphan-result`…).
  pub fn as_str(self) -> &'static str {
    match self {
      ProblemKind::OrphanResult => "orphan-result",
      ProblemKind::CallWithoutResult => "call-without-result",
      ProblemKind::MisplacedResult => "misplaced-result",
      ProblemKind::DuplicateCallId => "duplicate-call-id",
      ProblemKind::DuplicateResult => "duplicate-result",
      ProblemKind::MissingToolCallId => "missing-tool-call-id",
      ProblemKind::EmptyMessage => "empty-message",
      ProblemKind::ConsecutiveSameRole => "consecutive-same-role",
      ProblemKind::FirstMessageNotUser => "first-message-not-user",
      ProblemKind::EmptyConversation => "empty-conversation",
    }
  }
}

/// Something in a conversation that the provider would reject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
  /// The index of the offending message.
  pub index: usize,
  /// What is wrong.
  pub kind: ProblemKind,
  /// The other message involved, if any: the call of a misplaced result, the first answer of a
  /// duplicate result, the earlier call of a repeated id, the previous message of the same role.
  pub related: Option<usize>,
  /// A sentence saying what is wrong (lower-case, no trailing period).
  pub message: String,
}

/// Checks `messages` against the rules of `format`. Problems come in message order (and, for
/// one message, in the order they were found); an empty list means the provider accepts the
/// conversation as far as its structure goes.
pub fn validate<M: Borrow<Message>>(messages: &[M], format: Format) -> Vec<Problem> {
  let refs: Vec<&Message> = messages.iter().map(Borrow::borrow).collect();
  scan(&refs, &format.rules(), None).problems
}

/// Whether `messages` has no [`Problem`] in `format`.
pub fn is_valid<M: Borrow<Message>>(messages: &[M], format: Format) -> bool {
  validate(messages, format).is_empty()
}

/// Validates what `plan` returns for `messages` (a replaced message gets its new text, an
/// inserted one is checked in its place), with every index in the problems mapped back to the
/// input: a problem of an inserted message carries the index of the input message it is
/// inserted before. Strategies' tests use it to check that their output is valid:
/// `assert_eq!(validate_plan(&msgs, &plan, Format::OpenAi), vec![])`.
pub fn validate_plan<M: Borrow<Message>>(
  messages: &[M],
  plan: &Plan,
  format: Format,
) -> Vec<Problem> {
  let inputs: Vec<&Message> = messages.iter().map(Borrow::borrow).collect();
  let mut output: Vec<Message> = Vec::with_capacity(inputs.len() + plan.insertions().len());
  let mut dropped = Vec::with_capacity(output.capacity());
  // For each output position, the input index it reports as.
  let mut index = Vec::with_capacity(output.capacity());
  let mut next = 0;
  plan.walk(&inputs, |step| match step {
    Step::Input(m, action) => {
      output.push(match action {
        Action::Replace(r) => crate::plan::replaced_message(m, r),
        Action::Keep | Action::Drop => (*m).clone(),
      });
      dropped.push(matches!(action, Action::Drop));
      index.push(next);
      next += 1;
    }
    Step::Inserted(m) => {
      output.push(m.message());
      dropped.push(false);
      index.push(next);
    }
  });
  let refs: Vec<&Message> = output.iter().collect();
  let at = |i: usize| index.get(i).copied().unwrap_or(i);
  let mut problems = scan(&refs, &format.rules(), Some(&dropped)).problems;
  if !plan.insertions().is_empty() {
    for p in &mut problems {
      p.index = at(p.index);
      p.related = p.related.map(at);
    }
  }
  problems
}

/// Why message `m` counts as empty under `rules`, if it does.
pub(crate) fn emptiness(m: &Message, rules: &Rules) -> Option<String> {
  if m.has_tool_calls() {
    return None;
  }
  let nothing = match &m.content {
    Content::Empty => true,
    Content::Parts(parts) if parts.is_empty() => true,
    Content::Text(t) => rules.blank_text_is_empty && t.trim().is_empty(),
    Content::Parts(parts) => {
      rules.blank_text_is_empty
        && parts.iter().all(|p| match p {
          Part::Text(t) => t.trim().is_empty(),
          Part::Attachment { .. } => false,
          Part::ToolResult { .. } | Part::Other { .. } => false,
          // Not sent to the model: a message of approvals alone is no content for it, but the
          // SDK needs the message (it answers the approval), so it is never empty.
          Part::Approval { .. } => false,
        })
    }
  };
  if !nothing {
    None
  } else if m.role == Role::Assistant {
    Some("assistant message has neither content nor tool calls".into())
  } else {
    Some(format!("{} message has no content", m.role.as_str()))
  }
}

/// One tool call seen by the scan.
struct CallSlot<'m> {
  /// The calling message.
  msg: usize,
  id: &'m str,
  name: &'m str,
  /// The first message answering it.
  answered_by: Option<usize>,
  /// An earlier call of the same message with the same id, which the next result of that id
  /// answers once this one is answered.
  earlier_same_id: Option<usize>,
}

/// What one pass over a conversation found.
pub(crate) struct Scan {
  /// The problems, in message order.
  pub problems: Vec<Problem>,
  /// Every result answered in its place: (result message, calling message); and every AI SDK
  /// approval response with the message that asked for the approval.
  pub in_place: Vec<(usize, usize)>,
}

/// Scans the messages not marked in `skip` (indices stay those of `messages`).
pub(crate) fn scan<'m>(messages: &'m [&'m Message], rules: &Rules, skip: Option<&[bool]>) -> Scan {
  let skipped = |i: usize| skip.and_then(|s| s.get(i).copied()).unwrap_or(false);
  let mut problems = Vec::new();
  let mut in_place = Vec::new();
  let mut calls: Vec<CallSlot<'m>> = Vec::new();
  // Call id -> its latest call. Only looked up, never iterated: the output stays deterministic.
  let mut by_id: HashMap<&'m str, usize> = HashMap::new();
  // The calling message whose results may come next, and whether the previous message is it.
  let mut owner: Option<usize> = None;
  let mut previous_is_owner = false;
  // For each calling message, the first message after it that is not one of its results.
  let mut closed_by: Vec<Option<usize>> = vec![None; messages.len()];
  let mut previous: Option<(usize, Role)> = None;
  let mut seen_conversation = false;

  // Whether a message counts towards a request's messages (see `Rules::instructions_apart`),
  // and whether an instruction was seen.
  let mut seen_any = false;
  let mut seen_instructions = false;
  // AI SDK tool approvals: approval id -> (asking message, call id), and the approvals the
  // last message responds to (the SDK runs, or refuses, those calls itself before the model
  // sees the request: their results may still be missing).
  let mut approvals: HashMap<&'m str, (usize, &'m str)> = HashMap::new();
  let last = (0..messages.len()).rev().find(|&i| !skipped(i));
  let mut pending: Vec<(usize, &'m str)> = Vec::new();
  for (i, m) in messages.iter().enumerate().filter(|&(i, _)| !skipped(i)) {
    if rules.instructions_apart && m.role.is_instruction() {
      seen_instructions = true;
    } else {
      seen_any = true;
    }
    let is_result = m.is_tool_result();
    let continues = is_result
      && match rules.placement {
        Placement::FollowingResults => true,
        Placement::NextMessage => previous_is_owner,
      };
    if let (Some(j), false) = (owner, continues) {
      if let Some(slot) = closed_by.get_mut(j) {
        *slot = Some(i);
      }
      owner = None;
    }

    if let Some(why) = emptiness(m, rules) {
      problems.push(problem(i, ProblemKind::EmptyMessage, None, why));
    }
    if rules.first_must_be_user && !seen_conversation && !m.role.is_instruction() {
      seen_conversation = true;
      if m.role != Role::User {
        problems.push(problem(
          i,
          ProblemKind::FirstMessageNotUser,
          None,
          format!(
            "the first message after the instructions must be a user message, got {}",
            m.role.as_str()
          ),
        ));
      }
    }
    if let (true, Some((p, role))) = (rules.alternating_roles, previous) {
      if role == m.role {
        problems.push(problem(
          i,
          ProblemKind::ConsecutiveSameRole,
          Some(p),
          format!("{0} message follows another {0} message (message {p})", role.as_str()),
        ));
      }
    }

    for id in m.approval_responses() {
      match approvals.get(id) {
        Some(&(asker, call)) => {
          in_place.push((i, asker));
          if Some(i) == last {
            pending.push((asker, call));
          }
        }
        None => problems.push(problem(
          i,
          ProblemKind::OrphanResult,
          None,
          format!("tool approval response {} answers no earlier approval request", quote(id)),
        )),
      }
    }
    for (id, call) in m.approval_requests() {
      approvals.insert(id, (i, call));
    }
    if m.role == Role::Tool && !m.answers_anything() {
      problems.push(problem(
        i,
        ProblemKind::MissingToolCallId,
        None,
        "tool message has no tool_call_id, so it answers no call".into(),
      ));
    }
    for id in &m.answers {
      let Some(&s) = by_id.get(id.as_str()) else {
        problems.push(problem(
          i,
          ProblemKind::OrphanResult,
          None,
          format!("tool result for call {} answers no earlier tool call", quote(id)),
        ));
        continue;
      };
      let Some(call) = calls.get_mut(s) else { continue };
      if let Some(first) = call.answered_by {
        problems.push(problem(
          i,
          ProblemKind::DuplicateResult,
          Some(first),
          format!("call {} is already answered by message {first}", quote(id)),
        ));
        continue;
      }
      call.answered_by = Some(i);
      if let Some(e) = call.earlier_same_id {
        by_id.insert(call.id, e);
      }
      if owner == Some(call.msg) {
        in_place.push((i, call.msg));
        continue;
      }
      let j = call.msg;
      let message = match (rules.placement, closed_by.get(j).copied().flatten()) {
        (Placement::FollowingResults, Some(k)) => format!(
          "tool result for call {} does not directly follow its call in message {j}: message {k} comes between",
          quote(id)
        ),
        _ => format!(
          "tool result for call {} is not in the message right after its call in message {j}",
          quote(id)
        ),
      };
      problems.push(problem(i, ProblemKind::MisplacedResult, Some(j), message));
    }

    if m.has_tool_calls() {
      for call in &m.tool_calls {
        let s = calls.len();
        calls.push(CallSlot {
          msg: i,
          id: call.id.as_str(),
          name: call.name.as_str(),
          answered_by: None,
          earlier_same_id: None,
        });
        // Results pair with the latest call of their id: a reused id is unambiguous as long as
        // each call's results come in its own place.
        let Some(earlier) = by_id.insert(call.id.as_str(), s) else { continue };
        let Some(e) = calls.get(earlier).map(|e| e.msg) else { continue };
        let message = if e == i {
          // Results of the id answer these calls latest first.
          if let Some(slot) = calls.get_mut(s) {
            slot.earlier_same_id = Some(earlier);
          }
          format!("tool call id {} is used twice in this message", quote(&call.id))
        } else if rules.unique_call_ids {
          format!("tool call id {} is already used by message {e}", quote(&call.id))
        } else {
          continue;
        };
        let related = Some(e);
        problems.push(problem(i, ProblemKind::DuplicateCallId, related, message));
      }
      owner = Some(i);
      previous_is_owner = true;
    } else {
      previous_is_owner = false;
    }
    previous = Some((i, m.role));
  }

  if !seen_any {
    let message = if rules.instructions_apart && seen_instructions {
      "the conversation has no message besides the instructions, and the provider requires one"
    } else {
      "the conversation has no message, and every provider requires one"
    };
    problems.push(problem(0, ProblemKind::EmptyConversation, None, message.into()));
  }
  let awaits_the_sdk = |c: &CallSlot<'_>| pending.contains(&(c.msg, c.id));
  for call in calls.iter().filter(|c| c.answered_by.is_none() && !awaits_the_sdk(c)) {
    problems.push(problem(
      call.msg,
      ProblemKind::CallWithoutResult,
      None,
      format!("tool call {} ({}) has no tool result", quote(call.id), call.name),
    ));
  }
  problems.sort_by_key(|p| p.index);
  Scan { problems, in_place }
}

fn problem(index: usize, kind: ProblemKind, related: Option<usize>, message: String) -> Problem {
  Problem { index, kind, related, message }
}

#[cfg(test)]
pub(crate) mod tests {
  use super::*;
  use crate::model::conversation::Conversation;
  use crate::model::tokens::Encoding;

  pub(crate) fn user(text: &str) -> Message {
    Message::text(Role::User, text)
  }

  pub(crate) use crate::model::conversation::tests::call;

  pub(crate) fn result(id: &str) -> Message {
    crate::model::conversation::tests::result(id, &format!("result of {id}"))
  }

  /// (index, kind, related) of each problem.
  fn found(messages: &[Message]) -> Vec<(usize, ProblemKind, Option<usize>)> {
    validate(messages, Format::OpenAi).into_iter().map(|p| (p.index, p.kind, p.related)).collect()
  }

  fn sentences(messages: &[Message]) -> Vec<String> {
    validate(messages, Format::OpenAi).into_iter().map(|p| p.message).collect()
  }

  use ProblemKind::*;

  #[test]
  fn a_well_formed_conversation_has_no_problem() {
    let msgs = vec![
      Message::text(Role::System, "s"),
      user("task"),
      call(&["a", "b"]),
      result("a"),
      result("b"),
      Message::text(Role::Assistant, "done"),
      user(""),
      Message::text(Role::Assistant, ""),
    ];
    assert_eq!(found(&msgs), vec![]);
    assert!(is_valid(&msgs, Format::OpenAi));
  }

  #[test]
  fn an_empty_conversation_is_a_problem_in_every_format() {
    for format in Format::ALL {
      let problems = validate::<Message>(&[], format);
      assert_eq!(problems.len(), 1, "{format:?}");
      assert_eq!(problems[0].kind, ProblemKind::EmptyConversation);
      assert_eq!(problems[0].index, 0);
      assert_eq!(
        problems[0].message,
        "the conversation has no message, and every provider requires one"
      );
    }
    // Instructions alone: Anthropic takes them apart (the `system` parameter), so nothing is
    // left for `messages`; OpenAI and the AI SDK send them as messages.
    let system = [Message::text(Role::System, "be brief")];
    assert_eq!(
      validate(&system, Format::Anthropic).iter().map(|p| p.message.as_str()).collect::<Vec<_>>(),
      ["the conversation has no message besides the instructions, and the provider requires one"]
    );
    assert!(is_valid(&system, Format::OpenAi));
    assert!(is_valid(&system, Format::AiSdk));
  }

  #[test]
  fn an_orphan_result_answers_no_earlier_call() {
    let msgs = vec![user("u"), result("x"), call(&["x"]), result("x")];
    assert_eq!(found(&msgs), vec![(1, OrphanResult, None)]);
    assert_eq!(sentences(&msgs), vec!["tool result for call \"x\" answers no earlier tool call"]);
  }

  #[test]
  fn a_call_without_result_is_reported_at_the_call_even_at_the_end() {
    let msgs = vec![user("u"), call(&["a", "b"]), result("b"), user("next"), call(&["c"])];
    assert_eq!(found(&msgs), vec![(1, CallWithoutResult, None), (4, CallWithoutResult, None)]);
    assert_eq!(sentences(&msgs)[0], "tool call \"a\" (read_file) has no tool result");
  }

  #[test]
  fn a_result_after_another_message_is_misplaced() {
    let msgs = vec![user("u"), call(&["a"]), user("interrupt"), result("a")];
    assert_eq!(found(&msgs), vec![(3, MisplacedResult, Some(1))]);
    assert_eq!(
      sentences(&msgs),
      vec!["tool result for call \"a\" does not directly follow its call in message 1: message 2 comes between"]
    );
    // After the next call's message, an earlier call's result is misplaced too.
    let msgs = vec![call(&["a"]), call(&["b"]), result("a"), result("b")];
    assert_eq!(found(&msgs), vec![(2, MisplacedResult, Some(0))]);
  }

  #[test]
  fn a_call_id_used_twice_in_one_message_is_a_duplicate() {
    let msgs = vec![call(&["a", "a"]), result("a"), result("a")];
    assert_eq!(found(&msgs), vec![(0, DuplicateCallId, Some(0))]);
    assert_eq!(sentences(&msgs), vec!["tool call id \"a\" is used twice in this message"]);
    // With one result, one of the two calls is unanswered; with three, one is a duplicate.
    assert_eq!(
      found(&msgs[..2]),
      vec![(0, DuplicateCallId, Some(0)), (0, CallWithoutResult, None)]
    );
    let three = vec![call(&["a", "a"]), result("a"), result("a"), result("a")];
    assert_eq!(found(&three), vec![(0, DuplicateCallId, Some(0)), (3, DuplicateResult, Some(2))]);
  }

  #[test]
  fn a_call_id_reused_by_a_later_message_pairs_by_position_unless_ids_must_be_unique() {
    let msgs = vec![call(&["a"]), result("a"), call(&["a"]), result("a")];
    assert_eq!(found(&msgs), vec![]);
    // The later call takes the id over: an earlier call answered only after it is unanswered.
    let late = vec![call(&["a"]), call(&["a"]), result("a")];
    assert_eq!(found(&late), vec![(0, CallWithoutResult, None)]);
    let unique = Rules { unique_call_ids: true, ..Format::OpenAi.rules() };
    let p = scan(&msgs.iter().collect::<Vec<_>>(), &unique, None).problems;
    assert_eq!(
      p.iter().map(|p| (p.index, p.kind, p.related)).collect::<Vec<_>>(),
      vec![(2, DuplicateCallId, Some(0))]
    );
    assert_eq!(p[0].message, "tool call id \"a\" is already used by message 0");
  }

  #[test]
  fn a_second_result_for_one_call_is_a_duplicate() {
    let msgs = vec![call(&["a"]), result("a"), result("a")];
    assert_eq!(found(&msgs), vec![(2, DuplicateResult, Some(1))]);
    assert_eq!(sentences(&msgs), vec!["call \"a\" is already answered by message 1"]);
  }

  #[test]
  fn a_tool_message_without_tool_call_id_is_reported() {
    let msgs = vec![user("u"), Message::text(Role::Tool, "out")];
    assert_eq!(found(&msgs), vec![(1, MissingToolCallId, None)]);
    assert_eq!(sentences(&msgs), vec!["tool message has no tool_call_id, so it answers no call"]);
  }

  #[test]
  fn messages_without_content_are_empty_but_empty_text_is_not_in_openai() {
    let mut null_user = user("");
    null_user.content = Content::Empty;
    let mut null_assistant = Message::text(Role::Assistant, "");
    null_assistant.content = Content::Parts(vec![]);
    let mut null_tool = result("a");
    null_tool.content = Content::Empty;
    let msgs = vec![null_user, null_assistant, call(&["a"]), null_tool, user("")];
    assert_eq!(
      found(&msgs),
      vec![(0, EmptyMessage, None), (1, EmptyMessage, None), (3, EmptyMessage, None)]
    );
    assert_eq!(
      sentences(&msgs),
      vec![
        "user message has no content",
        "assistant message has neither content nor tool calls",
        "tool message has no content"
      ]
    );
  }

  #[test]
  fn format_rules_plug_in_alternation_first_user_blank_text_and_next_message_placement() {
    let rules = Rules {
      placement: Placement::NextMessage,
      blank_text_is_empty: true,
      alternating_roles: true,
      first_must_be_user: true,
      unique_call_ids: true,
      instructions_apart: false,
    };
    let kinds = |msgs: &[Message]| -> Vec<(usize, ProblemKind)> {
      scan(&msgs.iter().collect::<Vec<_>>(), &rules, None)
        .problems
        .into_iter()
        .map(|p| (p.index, p.kind))
        .collect()
    };
    let msgs = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::Assistant, "hi"),
      user("a"),
      user("  "),
      call(&["x", "y"]),
      result("x"),
      result("y"),
    ];
    assert_eq!(
      kinds(&msgs),
      vec![
        (1, FirstMessageNotUser),
        (3, EmptyMessage),
        (3, ConsecutiveSameRole),
        (6, ConsecutiveSameRole),
        (6, MisplacedResult)
      ]
    );
    let p = scan(&msgs.iter().collect::<Vec<_>>(), &rules, None).problems;
    assert_eq!(p[3].message, "tool message follows another tool message (message 5)");
    assert_eq!(
      p[4].message,
      "tool result for call \"y\" is not in the message right after its call in message 4"
    );
  }

  #[test]
  fn skipped_messages_are_not_seen() {
    let msgs = [call(&["a"]), user("between"), result("a")];
    let rules = Format::OpenAi.rules();
    assert_eq!(scan(&msgs.iter().collect::<Vec<_>>(), &rules, None).problems.len(), 1);
    let s = scan(&msgs.iter().collect::<Vec<_>>(), &rules, Some(&[false, true, false]));
    assert!(s.problems.is_empty());
    assert_eq!(s.in_place, vec![(2, 0)]);
  }

  #[test]
  fn validate_plan_checks_the_output_with_input_indices() {
    let msgs = vec![user("u"), call(&["a"]), result("a"), user("v")];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut plan = Plan::keep_all(4);
    plan.drop_unit(&conv, conv.unit_of(1));
    assert_eq!(validate_plan(&msgs, &plan, Format::OpenAi), vec![]);
    let mut broken = Plan::keep_all(4);
    broken.drop_message(1);
    assert_eq!(
      validate_plan(&msgs, &broken, Format::OpenAi),
      vec![problem(
        2,
        OrphanResult,
        None,
        "tool result for call \"a\" answers no earlier tool call".into()
      )]
    );
    // An inserted message is checked in its place: an assistant message first breaks
    // Anthropic's rule, a user message does not.
    let mut first = Plan::keep_all(4);
    first.drop_message(0);
    let inserted = |role| crate::plan::Inserted::new(role, "s".into(), vec![], Encoding::O200kBase);
    first.insert_before(0, inserted(Role::Assistant));
    assert_eq!(
      validate_plan(&msgs, &first, Format::Anthropic)
        .iter()
        .map(|p| (p.index, p.kind))
        .collect::<Vec<_>>(),
      vec![(0, FirstMessageNotUser)]
    );
    first.take_insertions();
    first.insert_before(0, inserted(Role::User));
    assert_eq!(validate_plan(&msgs, &first, Format::Anthropic), vec![]);
  }

  #[test]
  fn kinds_have_distinct_kebab_names() {
    let names: Vec<&str> = ProblemKind::ALL.iter().map(|k| k.as_str()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
    assert!(names.iter().all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '-')));
  }
}
