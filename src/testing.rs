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
