//! Property tests: random conversations in the three formats, every strategy at random budgets
//! and options, with the invariants of `context_trim::fuzzing` (the same checks the fuzz
//! targets assert): whole units, protected messages returned, valid output for valid input,
//! the budget met unless only protected messages are left, nothing changed within the budget,
//! determinism, idempotence; and the validator's and the repair's own invariants.
//!
//! The generator builds an abstract agent session (instructions, AGENTS.md, user tasks with
//! text or parts, assistant text with reasoning, parallel tool calls with `str_replace_editor`
//! style file reads and edits, errors, `null` contents; in AI SDK format a step's results in one
//! tool message or one each, tool approvals, a last call awaiting the SDK after its approval)
//! and renders it in each format. A quarter
//! of the sessions are broken on purpose (orphan, missing, duplicate and misplaced results,
//! reused ids, empty messages), so the checks that only hold for valid input are run on valid
//! sessions and the others on everything.
//!
//! `PROPTEST_CASES` raises the case count for a longer run.

mod common;

use context_trim::analysis::classify::{classify_conversation, ClassifyOptions};
use context_trim::fuzzing::{check_strategies, check_validator, Knobs};
use context_trim::model::conversation::Conversation;
use context_trim::model::format::parse_messages;
use context_trim::model::message::{Content, Part};
use context_trim::output::validate::validate;
use context_trim::plan::{replaced_message, Action};
use context_trim::strategy::rolling::{truncate_old_tool_outputs, TruncationConfig};
use context_trim::{Encoding, Format};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

const WORDS: &[&str] = &[
  "the",
  "build",
  "fails",
  "on",
  "main",
  "fix",
  "it",
  "please",
  "tests",
  "pass",
  "now",
  "error",
  "cannot",
  "find",
  "module",
  "let",
  "me",
  "check",
  "first",
  "東京",
  "汉字",
  "🚀",
  "👩‍👩‍👧",
  "naïve",
  "{\"json\": [1, 2]}",
  "<|endoftext|>",
  "\\n",
  "fn main() {}",
  "   ",
  "\u{200b}",
];
const PATHS: &[&str] = &["/repo/src/lib.rs", "/repo/README.md", "src/app.ts", "/repo/tests/a.py"];

/// A message's text: a word that is not blank, more words, sometimes repeated into a long text.
fn text() -> impl Strategy<Value = String> {
  let first = prop::sample::select(&WORDS[..WORDS.len() - 2]);
  let rest = prop::collection::vec(prop::sample::select(WORDS), 0..12);
  (first, rest, prop_oneof![4 => Just(1usize), 1 => 2..60usize]).prop_map(
    |(first, rest, repeat)| {
      let mut words = vec![first];
      words.extend(rest);
      words.join(" ").repeat(repeat)
    },
  )
}

#[derive(Debug, Clone)]
enum Instruction {
  System,
  Developer,
  AgentsMd,
}

/// What a tool call does, with `str_replace_editor`-style arguments for files.
#[derive(Debug, Clone)]
enum Tool {
  View(usize),
  StrReplace(usize, String, String),
  Create(usize, String),
  ReadFile(usize),
  Bash(String),
}

/// What becomes of a call's result.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
  /// Answered once, right after the call.
  Once,
  /// Never answered (broken sessions only).
  Missing,
  /// Answered twice (broken sessions only).
  Twice,
}

/// An AI SDK 6 tool approval (`needsApproval`), rendered in that format only.
#[derive(Debug, Clone, PartialEq)]
enum Approval {
  /// None asked.
  None,
  /// Asked by a `tool-approval-request` beside the call, answered by a
  /// `tool-approval-response` before its result.
  Asked,
  /// A response naming no request (broken sessions only).
  Orphan,
}

#[derive(Debug, Clone)]
struct Call {
  tool: Tool,
  output: Option<String>,
  error: bool,
  answer: Answer,
  approval: Approval,
}

#[derive(Debug, Clone)]
enum Turn {
  Instruction(Instruction, String),
  /// A user message: text, or text parts with an image.
  User(String, bool),
  /// An assistant message: text, with a reasoning part or not.
  Assistant(String, bool),
  /// An assistant message calling tools (text or none), then the results.
  Tools(Option<String>, Vec<Call>),
  /// A tool result answering no call (broken sessions only).
  Orphan(String),
  /// A user message with no content (broken sessions only).
  Empty,
  /// A call, answered by a message that also calls a tool, then that call's result (broken
  /// sessions only: no provider accepts a message that both answers and calls, though the
  /// validator may not see it).
  AnswerAndCall(Call, Call),
}

#[derive(Debug, Clone)]
struct Session {
  turns: Vec<Turn>,
  /// AI SDK: a step's results in one tool message (as the SDK writes them), else one each.
  grouped: bool,
  /// AI SDK: a last call whose approval the last message gives, its result still to come.
  pending: Option<Tool>,
  /// Where a broken session reuses a call id.
  reuse_id: bool,
  /// A broken session puts a user message between a call and its results.
  misplace: bool,
}

fn tool() -> impl Strategy<Value = Tool> {
  let path = 0..PATHS.len();
  prop_oneof![
    path.clone().prop_map(Tool::View),
    (path.clone(), text(), text()).prop_map(|(p, a, b)| Tool::StrReplace(p, a, b)),
    (path.clone(), text()).prop_map(|(p, t)| Tool::Create(p, t)),
    path.prop_map(Tool::ReadFile),
    text().prop_map(Tool::Bash),
  ]
}

fn call(broken: bool) -> impl Strategy<Value = Call> {
  let answer = if broken {
    prop_oneof![3 => Just(Answer::Once), 1 => Just(Answer::Missing), 1 => Just(Answer::Twice)]
      .boxed()
  } else {
    Just(Answer::Once).boxed()
  };
  // A `null` output is an empty result, which OpenAI rejects: only in broken sessions.
  let output = if broken {
    prop::option::weighted(0.8, text()).boxed()
  } else {
    text().prop_map(Some).boxed()
  };
  let approval = if broken {
    prop_oneof![6 => Just(Approval::None), 2 => Just(Approval::Asked), 1 => Just(Approval::Orphan)]
      .boxed()
  } else {
    prop_oneof![3 => Just(Approval::None), 1 => Just(Approval::Asked)].boxed()
  };
  (tool(), output, prop::bool::weighted(0.15), answer, approval).prop_map(
    |(tool, output, error, answer, approval)| Call { tool, output, error, answer, approval },
  )
}

fn turn(broken: bool) -> impl Strategy<Value = Turn> {
  let instruction = prop_oneof![
    Just(Instruction::System),
    Just(Instruction::Developer),
    Just(Instruction::AgentsMd)
  ];
  let normal = prop_oneof![
    1 => (instruction, text()).prop_map(|(k, t)| Turn::Instruction(k, t)),
    4 => (text(), prop::bool::weighted(0.2)).prop_map(|(t, image)| Turn::User(t, image)),
    3 => (text(), prop::bool::weighted(0.3)).prop_map(|(t, reasoning)| Turn::Assistant(t, reasoning)),
    6 => (prop::option::weighted(0.4, text()), prop::collection::vec(call(broken), 1..4)).prop_map(|(t, calls)| Turn::Tools(t, calls)),
  ];
  if broken {
    prop_oneof![
      12 => normal,
      1 => text().prop_map(Turn::Orphan),
      1 => Just(Turn::Empty),
      1 => (call(false), call(false)).prop_map(|(a, b)| Turn::AnswerAndCall(a, b)),
    ]
    .boxed()
  } else {
    normal.boxed()
  }
}

/// A session: instructions first, a user task, then turns; broken on purpose a quarter of the
/// time.
fn session() -> impl Strategy<Value = Session> {
  prop::bool::weighted(0.25).prop_flat_map(|broken| {
    (
      prop::collection::vec(
        (
          prop_oneof![
            Just(Instruction::System),
            Just(Instruction::Developer),
            Just(Instruction::AgentsMd)
          ],
          text(),
        ),
        0..3,
      ),
      text(),
      prop::collection::vec(turn(broken), 0..24),
      any::<bool>().prop_map(move |b| b && broken),
      any::<bool>().prop_map(move |b| b && broken),
      any::<bool>(),
      prop::option::weighted(0.2, tool()),
    )
      .prop_map(|(instructions, task, rest, reuse_id, misplace, grouped, pending)| {
        let mut turns: Vec<Turn> =
          instructions.into_iter().map(|(k, t)| Turn::Instruction(k, t)).collect();
        turns.push(Turn::User(task, false));
        turns.extend(rest);
        Session { turns, grouped, pending, reuse_id, misplace }
      })
  })
}

fn knobs() -> impl Strategy<Value = Knobs> {
  let encoding = prop_oneof![
    6 => Just(Encoding::Approximate),
    1 => Just(Encoding::O200kBase),
    1 => Just(Encoding::Cl100kBase),
  ];
  // Budgets cluster below the total (where trimming happens), with some above it.
  let budget = prop_oneof![3 => 0..32_768u16, 1 => any::<u16>(), 1 => Just(0u16)];
  (encoding, budget, any::<u64>()).prop_map(|(encoding, budget, bits)| Knobs {
    encoding,
    budget,
    bits,
  })
}

impl Tool {
  fn name(&self) -> &'static str {
    match self {
      Tool::View(_) | Tool::StrReplace(..) | Tool::Create(..) => "str_replace_editor",
      Tool::ReadFile(_) => "read_file",
      Tool::Bash(_) => "execute_bash",
    }
  }

  fn input(&self) -> Value {
    match self {
      Tool::View(p) => json!({"command": "view", "path": PATHS[*p]}),
      Tool::StrReplace(p, old, new) => {
        json!({"command": "str_replace", "path": PATHS[*p], "old_str": old, "new_str": new})
      }
      Tool::Create(p, t) => json!({"command": "create", "path": PATHS[*p], "file_text": t}),
      Tool::ReadFile(p) => json!({"path": PATHS[*p]}),
      Tool::Bash(c) => json!({"command": c}),
    }
  }
}

/// One result to render: the call id, the tool, the output (`None` = `null`), the error flag.
struct Result<'a> {
  id: String,
  call: &'a Call,
}

impl Session {
  /// The session's messages in `format`.
  fn render(&self, format: Format) -> Value {
    let mut out = Vec::new();
    let mut next_id = 0;
    for turn in &self.turns {
      match turn {
        Turn::Instruction(kind, t) => out.push(match (kind, format) {
          (Instruction::AgentsMd, _) => json!({"role": "user", "content": format!("# AGENTS.md\n{t}")}),
          (Instruction::Developer, Format::OpenAi) => json!({"role": "developer", "content": t}),
          _ => json!({"role": "system", "content": t}),
        }),
        Turn::User(t, image) => out.push(match (image, format) {
          (false, _) => json!({"role": "user", "content": t}),
          (true, Format::OpenAi) => json!({"role": "user", "content": [
            {"type": "text", "text": t}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}),
          (true, Format::Anthropic) => json!({"role": "user", "content": [
            {"type": "text", "text": t}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}),
          (true, Format::AiSdk) => json!({"role": "user", "content": [
            {"type": "text", "text": t}, {"type": "image", "image": "data:image/png;base64,AA=="}]}),
        }),
        Turn::Assistant(t, reasoning) => out.push(match (reasoning, format) {
          (false, _) | (true, Format::OpenAi) => json!({"role": "assistant", "content": t}),
          (true, Format::Anthropic) => json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "let me think", "signature": "sig"}, {"type": "text", "text": t}]}),
          (true, Format::AiSdk) => json!({"role": "assistant", "content": [
            {"type": "reasoning", "text": "let me think"}, {"type": "text", "text": t}]}),
        }),
        Turn::Orphan(t) => out.push(match format {
          Format::OpenAi => json!({"role": "tool", "tool_call_id": "ghost", "content": t}),
          Format::Anthropic => json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": t}]}),
          Format::AiSdk => json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "ghost", "toolName": "x", "output": {"type": "text", "value": t}}]}),
        }),
        Turn::Empty => out.push(json!({"role": "user", "content": null})),
        Turn::AnswerAndCall(first, second) => {
          let first = Result { id: format!("call_{next_id}"), call: first };
          let second = Result { id: format!("call_{}", next_id + 1), call: second };
          next_id += 2;
          out.push(assistant_calls(None, std::slice::from_ref(&first), format));
          let (tool, input) = (second.call.tool.name(), second.call.tool.input());
          out.push(match format {
            Format::OpenAi => json!({"role": "tool", "tool_call_id": first.id, "content": "both", "tool_calls": [
              {"id": second.id, "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}),
            Format::Anthropic => json!({"role": "assistant", "content": [
              {"type": "tool_result", "tool_use_id": first.id, "content": "both"},
              {"type": "tool_use", "id": second.id, "name": tool, "input": input}]}),
            Format::AiSdk => json!({"role": "assistant", "content": [
              {"type": "tool-result", "toolCallId": first.id, "toolName": first.call.tool.name(), "output": {"type": "text", "value": "both"}},
              {"type": "tool-call", "toolCallId": second.id, "toolName": tool, "input": input}]}),
          });
          out.extend(tool_results(&[&second], format, false));
        }
        Turn::Tools(t, calls) => {
          let results: Vec<Result> = calls
            .iter()
            .map(|call| {
              // A broken session reuses the first id of the session once in a while.
              let id = if self.reuse_id && next_id % 5 == 4 { "call_0".to_string() } else { format!("call_{next_id}") };
              next_id += 1;
              Result { id, call }
            })
            .collect();
          out.push(assistant_calls(t.as_deref(), &results, format));
          if self.misplace {
            out.push(json!({"role": "user", "content": "interrupting"}));
          }
          let answered: Vec<&Result> = results
            .iter()
            .flat_map(|r| match r.call.answer {
              Answer::Once => vec![r],
              Answer::Missing => vec![],
              Answer::Twice => vec![r, r],
            })
            .collect();
          out.extend(tool_results(&answered, format, self.grouped));
        }
      }
    }
    if let (Some(tool), Format::AiSdk) = (&self.pending, format) {
      let id = format!("call_{next_id}");
      out.push(json!({"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": id, "toolName": tool.name(), "input": tool.input()},
        {"type": "tool-approval-request", "approvalId": format!("ap_{id}"), "toolCallId": id}]}));
      out.push(json!({"role": "tool", "content": [
        {"type": "tool-approval-response", "approvalId": format!("ap_{id}"), "approved": true}]}));
    }
    Value::Array(out)
  }
}

fn assistant_calls(text: Option<&str>, results: &[Result], format: Format) -> Value {
  match format {
    Format::OpenAi => {
      json!({"role": "assistant", "content": text, "tool_calls": results.iter().map(|r| json!({
      "id": r.id, "type": "function",
      "function": {"name": r.call.tool.name(), "arguments": r.call.tool.input().to_string()}
    })).collect::<Vec<_>>()})
    }
    Format::Anthropic => {
      let mut blocks: Vec<Value> =
        text.map(|t| json!({"type": "text", "text": t})).into_iter().collect();
      blocks.extend(results.iter().map(|r| json!({"type": "tool_use", "id": r.id, "name": r.call.tool.name(), "input": r.call.tool.input()})));
      json!({"role": "assistant", "content": blocks})
    }
    Format::AiSdk => {
      let mut parts: Vec<Value> =
        text.map(|t| json!({"type": "text", "text": t})).into_iter().collect();
      for r in results {
        parts.push(json!({"type": "tool-call", "toolCallId": r.id, "toolName": r.call.tool.name(), "input": r.call.tool.input()}));
        if r.call.approval == Approval::Asked {
          parts.push(json!({"type": "tool-approval-request", "approvalId": format!("ap_{}", r.id), "toolCallId": r.id}));
        }
      }
      json!({"role": "assistant", "content": parts})
    }
  }
}

fn tool_results(results: &[&Result], format: Format, grouped: bool) -> Vec<Value> {
  match format {
    Format::OpenAi => results
      .iter()
      .map(|r| {
        let mut m = json!({"role": "tool", "tool_call_id": r.id, "content": r.call.output});
        if r.call.error {
          m["is_error"] = json!(true);
        }
        m
      })
      .collect(),
    // Anthropic: every result of the turn in the one user message that follows the call.
    Format::Anthropic if results.is_empty() => vec![],
    Format::Anthropic => vec![json!({"role": "user", "content": results.iter().map(|r| json!({
      "type": "tool_result", "tool_use_id": r.id, "is_error": r.call.error,
      "content": match &r.call.output { Some(t) => json!([{"type": "text", "text": t}]), None => json!("(no output)") }
    })).collect::<Vec<_>>()})],
    // AI SDK: a step's results in one tool message, or one tool message per result; an
    // approved call's result after its approval response.
    Format::AiSdk => {
      let parts = |r: &Result| {
        let mut parts = Vec::new();
        match r.call.approval {
          Approval::None => {}
          Approval::Asked => parts.push(json!({"type": "tool-approval-response", "approvalId": format!("ap_{}", r.id), "approved": true})),
          Approval::Orphan => parts.push(json!({"type": "tool-approval-response", "approvalId": "ap_ghost", "approved": false})),
        }
        parts.push(json!({
          "type": "tool-result", "toolCallId": r.id, "toolName": r.call.tool.name(),
          "output": {"type": if r.call.error { "error-text" } else { "text" }, "value": r.call.output.clone().unwrap_or_default()}
        }));
        parts
      };
      if grouped && !results.is_empty() {
        vec![
          json!({"role": "tool", "content": results.iter().flat_map(|r| parts(r)).collect::<Vec<_>>()}),
        ]
      } else {
        results.iter().map(|r| json!({"role": "tool", "content": parts(r)})).collect()
      }
    }
  }
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
  TestCaseError::fail(e.to_string())
}

/// Whether the session was generated without a deliberate defect.
fn intact(s: &Session) -> bool {
  !s.reuse_id
    && !s.misplace
    && s.turns.iter().all(|t| match t {
      Turn::Orphan(_) | Turn::Empty | Turn::AnswerAndCall(..) => false,
      Turn::Tools(_, calls) => calls
        .iter()
        .all(|c| c.answer == Answer::Once && c.output.is_some() && c.approval != Approval::Orphan),
      _ => true,
    })
}

proptest! {
  #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

  #[test]
  fn every_strategy_keeps_its_invariants_in_every_format(s in session(), knobs in knobs()) {
    for format in Format::ALL {
      let (_, messages) = parse_messages(&s.render(format), Some(format)).map_err(fail)?;
      check_strategies(&messages, format, &knobs).map_err(fail)?;
    }
  }

  /// The incremental window equals the one-pass analysis on any session, defects included
  /// (a message answering and calling, orphans, reused ids).
  #[test]
  fn a_window_grown_message_by_message_is_the_whole_conversation(s in session()) {
    for format in Format::ALL {
      let (_, messages) = parse_messages(&s.render(format), Some(format)).map_err(fail)?;
      common::check_window_growth(&messages, 1).map_err(fail)?;
    }
  }

  #[test]
  fn the_validator_and_the_repair_keep_their_invariants(s in session()) {
    for format in Format::ALL {
      let (_, messages) = parse_messages(&s.render(format), Some(format)).map_err(fail)?;
      check_validator(&messages, format).map_err(fail)?;
    }
  }

  /// The format does not change a message's tier: an intact session's results of one step in
  /// one message (Anthropic, the AI SDK's grouped tool message) are classed as the highest of
  /// the same results one message each (OpenAI), supersession included.
  #[test]
  fn a_message_of_several_results_is_classed_as_its_results_one_message_each(s in session()) {
    if !intact(&s) {
      return Ok(());
    }
    let classes = |format: Format| -> std::result::Result<Vec<u8>, TestCaseError> {
      let (_, messages) = parse_messages(&s.render(format), Some(format)).map_err(fail)?;
      let conv = Conversation::new(&messages, Encoding::Approximate);
      let options = ClassifyOptions::default();
      Ok(classify_conversation(&conv, None, &options).iter().map(|c| c.priority as u8).collect())
    };
    let openai = classes(Format::OpenAi)?;
    // OpenAI message -> the message holding it where a step's results share one message.
    let (_, split) = parse_messages(&s.render(Format::OpenAi), Some(Format::OpenAi)).map_err(fail)?;
    let mut holder = Vec::with_capacity(split.len());
    for (i, m) in split.iter().enumerate() {
      let joins = i > 0 && m.is_tool_result() && split[i - 1].is_tool_result();
      let at = holder.last().map_or(0, |&h: &usize| if joins { h } else { h + 1 });
      holder.push(if i == 0 { 0 } else { at });
    }
    let mut want = vec![0u8; holder.last().map_or(0, |h| h + 1)];
    for (i, &h) in holder.iter().enumerate() {
      want[h] = want[h].max(openai[i]);
    }
    prop_assert_eq!(&classes(Format::Anthropic)?, &want, "anthropic");
    if s.pending.is_none() {
      let ai_sdk = classes(Format::AiSdk)?;
      if s.grouped {
        prop_assert_eq!(&ai_sdk, &want, "ai-sdk, grouped");
      } else {
        prop_assert_eq!(&ai_sdk, &openai, "ai-sdk");
      }
    }
  }

  /// Nor what `truncateOldToolOutputs` makes of a result: the results of one step in one
  /// message are truncated, cut or kept as the same results one message each, each result with
  /// the same text.
  #[test]
  fn a_message_of_several_results_is_truncated_as_its_results_one_message_each(s in session()) {
    if !intact(&s) {
      return Ok(());
    }
    let config = TruncationConfig {
      max_age: 1,
      max_tokens_per_output: 64,
      small_output_tokens: 8,
      min_quoted_chars: 12,
      ..TruncationConfig::default()
    };
    let texts = |format: Format| -> std::result::Result<Vec<String>, TestCaseError> {
      let (_, messages) = parse_messages(&s.render(format), Some(format)).map_err(fail)?;
      let conv = Conversation::new(&messages, Encoding::Approximate);
      let plan = truncate_old_tool_outputs(&conv, &config);
      let mut out = Vec::new();
      for (m, action) in messages.iter().zip(plan.actions()) {
        let m = match action {
          Action::Replace(r) => replaced_message(m, r),
          _ => m.clone(),
        };
        let parts = match &m.content {
          Content::Parts(parts) => parts.as_slice(),
          _ => &[],
        };
        let results: Vec<String> = parts.iter().filter_map(|p| match p {
          Part::ToolResult { content, .. } => Some(content.clone()),
          _ => None,
        }).collect();
        if !results.is_empty() {
          out.extend(results);
        } else if m.is_tool_result() {
          out.push(m.content_text().into_owned());
        }
      }
      Ok(out)
    };
    let openai = texts(Format::OpenAi)?;
    prop_assert_eq!(&texts(Format::Anthropic)?, &openai, "anthropic");
    if s.pending.is_none() {
      prop_assert_eq!(&texts(Format::AiSdk)?, &openai, "ai-sdk");
    }
  }

  /// The generator's own check: intact sessions are valid in every format and read back in the
  /// same format when detected, so the valid-input invariants above are exercised.
  #[test]
  fn intact_sessions_are_valid_and_detected(s in session()) {
    for format in Format::ALL {
      let json = s.render(format);
      let (detected, messages) = parse_messages(&json, None).map_err(fail)?;
      // Plain text reads the same in every format and is read as OpenAI; tool calls show theirs.
      let has_calls = messages.iter().any(|m| m.has_tool_calls());
      prop_assert!(detected == format || (!has_calls && detected == Format::OpenAi), "{:?} read as {:?}", format, detected);
      if intact(&s) {
        let problems = validate(&messages, format);
        prop_assert!(problems.is_empty(), "{}: {:?}", format.as_str(), problems);
      }
    }
  }
}

/// Found by the property above: a task (with an image part) that the ladder cuts as far as
/// needed comes out larger than asked once the units before it are gone; it must then go too,
/// not be returned over the budget.
#[test]
fn a_cut_task_that_still_does_not_fit_goes_in_every_format() {
  let unit = "the {\"json\": [1, 2]} the {\"json\": [1, 2]} main the the the the the the";
  let big = unit.repeat(44);
  let fix = "fix the the".repeat(40);
  let s = Session {
    turns: vec![
      Turn::User("the".into(), false),
      Turn::Tools(
        None,
        vec![
          Call {
            tool: Tool::StrReplace(0, "the".into(), big),
            output: Some("the".into()),
            error: false,
            answer: Answer::Once,
            approval: Approval::None,
          },
          Call {
            tool: Tool::View(0),
            output: Some("the {\"json\": [1, 2]} the the".into()),
            error: false,
            answer: Answer::Once,
            approval: Approval::None,
          },
        ],
      ),
      Turn::Assistant("the".into(), false),
      Turn::User(fix, true),
      Turn::Tools(
        None,
        vec![Call {
          tool: Tool::View(1),
          output: Some("the".into()),
          error: false,
          answer: Answer::Once,
          approval: Approval::None,
        }],
      ),
      Turn::Instruction(Instruction::System, "the".into()),
      Turn::Assistant("the".into(), false),
    ],
    grouped: false,
    pending: None,
    reuse_id: false,
    misplace: false,
  };
  let knobs =
    Knobs { encoding: context_trim::model::tokens::Encoding::Approximate, budget: 2349, bits: 0 };
  for format in Format::ALL {
    let (_, messages) = parse_messages(&s.render(format), Some(format)).unwrap();
    assert_eq!(check_strategies(&messages, format, &knobs).err().map(|e| e.to_string()), None);
  }
}
