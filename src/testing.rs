//! Tiny message builders shared by the unit tests.

use crate::model::message::{Message, Role, ToolCall};

/// A user message.
pub(crate) fn user(text: &str) -> Message {
  Message::text(Role::User, text)
}

/// An assistant message without text calling tool `name` with `args`, under call id `id`.
pub(crate) fn call(id: &str, name: &str, args: &str) -> Message {
  let mut m = Message::text(Role::Assistant, "");
  m.tool_calls.push(ToolCall { id: id.into(), name: name.into(), arguments: args.into() });
  m
}

/// A tool result answering call `id`.
pub(crate) fn result(id: &str, text: &str) -> Message {
  let mut m = Message::text(Role::Tool, text);
  m.answers.push(id.into());
  m
}

/// A tool result that only has a `name`, answering no known call (as in the seed's examples).
pub(crate) fn named_result(name: &str, text: &str) -> Message {
  let mut m = Message::text(Role::Tool, text);
  m.name = Some(name.into());
  m
}

/// The content text of every message of the bundled transcripts longer than `min_bytes`.
pub(crate) fn transcript_texts(min_bytes: usize) -> Vec<String> {
  transcripts()
    .into_iter()
    .flat_map(|(_, messages)| messages.into_iter().map(|m| m.content_text().into_owned()))
    .filter(|t| t.len() > min_bytes)
    .collect()
}

/// Every bundled transcript (`samples/transcripts/*.json`), by file name, in name order.
pub(crate) fn transcripts() -> Vec<(String, Vec<Message>)> {
  let dir = format!("{}/samples/transcripts", env!("CARGO_MANIFEST_DIR"));
  let mut names: Vec<String> = std::fs::read_dir(&dir)
    .expect("the transcripts directory")
    .filter_map(|e| e.ok()?.file_name().into_string().ok())
    .filter(|n| n.ends_with(".json"))
    .collect();
  names.sort();
  names
    .into_iter()
    .map(|name| {
      let text = std::fs::read_to_string(format!("{dir}/{name}")).expect("a readable transcript");
      let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
      (name, crate::model::message::messages_from_json(&value).expect("valid messages"))
    })
    .collect()
}

/// `n` lines `{tag} line {k}`, joined by newlines: a tool output long enough to cut or replace,
/// each line its own.
pub(crate) fn lines(tag: &str, n: usize) -> String {
  (0..n).map(|k| format!("{tag} line {k}")).collect::<Vec<_>>().join("\n")
}

/// A session of parallel calls: `read_file` of `src/a.ts` and `src/b.ts` (the second fails),
/// then `read_file` of `src/x.ts` beside an `edit_file` of `src/c.ts`, then `read_file` of
/// `src/d.ts` beside `bash` `npm test`. Anthropic: each step's results in one user message
/// ([`parallel_results`]); OpenAI: a tool message per result ([`parallel_results_openai`]).
type Step = [(&'static str, &'static str, serde_json::Value, String, bool); 2];

fn parallel_steps() -> [Step; 3] {
  let path = |p: &str| serde_json::json!({"path": p});
  [
    [
      ("t1", "read_file", path("src/a.ts"), lines("A", 40), false),
      ("t2", "read_file", path("src/b.ts"), "Error: ENOENT: no such file src/b.ts".into(), true),
    ],
    [
      ("t3", "read_file", path("src/x.ts"), lines("X", 30), false),
      (
        "t4",
        "edit_file",
        serde_json::json!({"path": "src/c.ts", "old": "x", "new": "y"}),
        "Edited src/c.ts".into(),
        false,
      ),
    ],
    [
      ("t5", "read_file", path("src/d.ts"), lines("D", 20), false),
      (
        "t6",
        "bash",
        serde_json::json!({"command": "npm test"}),
        "1 passing\n[exit code 0]".into(),
        false,
      ),
    ],
  ]
}

/// [`parallel_steps`] in Anthropic's format: 8 messages, the results in messages 2, 4 and 6.
pub(crate) fn parallel_results() -> Vec<Message> {
  let mut messages =
    vec![serde_json::json!({"role": "user", "content": "Fix the bug in src/a.ts"})];
  for step in parallel_steps() {
    let calls: Vec<serde_json::Value> = step
      .iter()
      .map(|(id, name, input, _, _)| serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": input}))
      .collect();
    let results: Vec<serde_json::Value> = step
      .iter()
      .map(|(id, _, _, content, is_error)| serde_json::json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}))
      .collect();
    messages.push(serde_json::json!({"role": "assistant", "content": calls}));
    messages.push(serde_json::json!({"role": "user", "content": results}));
  }
  messages.push(serde_json::json!({"role": "assistant", "content": "Done."}));
  parse(serde_json::Value::Array(messages))
}

/// [`parallel_steps`] in OpenAI's format: 11 messages, the results in messages 2–3, 5–6 and
/// 8–9.
pub(crate) fn parallel_results_openai() -> Vec<Message> {
  let mut messages =
    vec![serde_json::json!({"role": "user", "content": "Fix the bug in src/a.ts"})];
  for step in parallel_steps() {
    let calls: Vec<serde_json::Value> = step
      .iter()
      .map(|(id, name, input, _, _)| serde_json::json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}))
      .collect();
    messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": calls}));
    for (id, _, _, content, is_error) in step {
      messages.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": content, "is_error": is_error}));
    }
  }
  messages.push(serde_json::json!({"role": "assistant", "content": "Done."}));
  parse(serde_json::Value::Array(messages))
}

fn parse(messages: serde_json::Value) -> Vec<Message> {
  match crate::model::format::parse_messages(&messages, None) {
    Ok((_, messages)) => messages,
    Err(e) => panic!("the fixture reads: {e:?}"),
  }
}

/// An AI SDK 6 conversation whose `deleteFile` call `c1` needs approval (`a1`): the system
/// prompt, the task, the assistant's call with its approval request, the approval response
/// (approved), then `rest` (its results, later turns).
pub(crate) fn approval_session(rest: serde_json::Value) -> Vec<Message> {
  let mut messages = serde_json::json!([
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Delete tmp.txt"},
    {"role": "assistant", "content": [
      {"type": "text", "text": "I will delete it."},
      {"type": "tool-call", "toolCallId": "c1", "toolName": "deleteFile", "input": {"filename": "tmp.txt"}},
      {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"}]},
    {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "a1", "approved": true}]}
  ]);
  if let (Some(list), serde_json::Value::Array(more)) = (messages.as_array_mut(), rest) {
    list.extend(more);
  }
  match crate::model::format::parse_messages(&messages, Some(crate::model::format::Format::AiSdk)) {
    Ok((_, messages)) => messages,
    Err(e) => panic!("the fixture reads: {e:?}"),
  }
}
