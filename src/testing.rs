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
