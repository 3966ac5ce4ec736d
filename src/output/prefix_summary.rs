//! CursorClaw's summary of earlier turns (seed 002's TU.4): everything before the last message
//! becomes one system message that quotes it, bounded in characters.
//!
//! ```text
//! Summary of earlier turns:
//! User: What is X?
//!
//! Agent: X is a thing.
//! ```
//!
//! The rules, as CursorClaw's `summarizePrefix(messages, maxSummaryTokens)` has them:
//!
//! - the summary is [`PREFIX_SUMMARY_HEADER`] followed by the body: one entry per message before
//!   the last, `Label: text`, entries separated by a blank line; the label is `User`, `Agent`
//!   (assistant) or `System` (system and developer);
//! - with one message or none the body is `(none)`;
//! - the body is cut to its first `4 × maxSummaryTokens` UTF-16 code units (JavaScript's
//!   `string.length`) when it is longer, so its estimate (`ceil(length / 4)`) is at most
//!   `maxSummaryTokens`.
//!
//! What context-trim adds for messages CursorClaw never sees: a tool result is labelled `Tool`
//! (CursorClaw labels every role it does not know `System`), whatever its role (an Anthropic
//! user message of `tool_result` blocks is one); a content made of parts is its text parts
//! joined by newlines, and each tool call of an assistant message is a line
//! `Called name(arguments)` after its text. A user message holding both tool results and other
//! text becomes several entries in its order: each run of consecutive results a `Tool:` entry,
//! each run of the other text a `User:` entry. A cut never splits a character.

use crate::model::message::{Content, Message, Part, Role};

/// The first line of the summary, as CursorClaw writes it.
pub const PREFIX_SUMMARY_HEADER: &str = "Summary of earlier turns:\n";

/// The body of a summary of nothing (zero or one message).
pub const EMPTY_PREFIX_SUMMARY: &str = "(none)";

/// How many UTF-16 code units one token of `max_summary_tokens` allows (CursorClaw's estimate:
/// four characters a token).
pub const CHARS_PER_TOKEN: usize = 4;

/// The label of a message's entry.
fn label(role: Role) -> &'static str {
  match role {
    Role::User => "User",
    Role::Assistant => "Agent",
    Role::System | Role::Developer => "System",
    Role::Tool => "Tool",
  }
}

/// The summary's content for `messages`: [`PREFIX_SUMMARY_HEADER`], then every message but the
/// last quoted, cut to `4 × max_summary_tokens` UTF-16 code units (see the [module
/// docs](self)). The messages that remain after it are the last one alone, if any.
///
/// # Examples
///
/// ```
/// use context_trim::model::message::{Message, Role};
/// use context_trim::output::prefix_summary::summarize_prefix;
///
/// let q = Message::text(Role::User, "What is X?");
/// let a = Message::text(Role::Assistant, "X is a thing.");
/// let last = Message::text(Role::User, "last");
/// let summary = summarize_prefix(&[&q, &a, &last], 200);
/// assert_eq!(summary, "Summary of earlier turns:\nUser: What is X?\n\nAgent: X is a thing.");
/// ```
pub fn summarize_prefix(messages: &[&Message], max_summary_tokens: usize) -> String {
  let prefix = match messages.split_last() {
    Some((_, prefix)) if !prefix.is_empty() => prefix,
    _ => return format!("{PREFIX_SUMMARY_HEADER}{EMPTY_PREFIX_SUMMARY}"),
  };
  let mut body = String::new();
  for (i, m) in prefix.iter().enumerate() {
    if i > 0 {
      body.push_str("\n\n");
    }
    push_content(&mut body, m);
    for call in &m.tool_calls {
      body.push_str("\nCalled ");
      body.push_str(&call.name);
      body.push('(');
      body.push_str(&call.arguments);
      body.push(')');
    }
  }
  let max_units = max_summary_tokens.saturating_mul(CHARS_PER_TOKEN);
  let end = utf16_prefix_end(&body, max_units);
  format!("{PREFIX_SUMMARY_HEADER}{}", &body[..end])
}

/// Writes `m`'s entry, or entries, without its tool calls: `Label: text`.
///
/// A tool result is labelled `Tool` whatever its role (an Anthropic `tool_result` block comes in
/// a `user` message). When a message that is not a `tool` message holds tool result parts and
/// other text (an Anthropic user message with `tool_result` blocks and a text block), each run
/// of consecutive tool result parts is a `Tool:` entry and each run of the other text a `User:`
/// (its role's) entry, in the message's order, separated by blank lines.
fn push_content(body: &mut String, m: &Message) {
  let parts = match &m.content {
    Content::Parts(parts)
      if m.role != Role::Tool && parts.iter().any(|p| matches!(p, Part::ToolResult { .. })) =>
    {
      parts
    }
    _ => {
      body.push_str(if m.is_tool_result() { label(Role::Tool) } else { label(m.role) });
      body.push_str(": ");
      body.push_str(&m.content_text());
      return;
    }
  };
  // Runs of parts of one kind (tool result or not), as (is a tool result, texts).
  let mut runs: Vec<(bool, Vec<&str>)> = Vec::new();
  for part in parts {
    let (result, text) = match part {
      Part::ToolResult { content, .. } => (true, content.as_str()),
      Part::Text(t) | Part::Other { text: Some(t), .. } => (false, t.as_str()),
      Part::Attachment { .. } | Part::Other { text: None, .. } | Part::Approval { .. } => continue,
    };
    match runs.last_mut() {
      Some((kind, texts)) if *kind == result => texts.push(text),
      _ => runs.push((result, vec![text])),
    }
  }
  for (i, (result, texts)) in runs.iter().enumerate() {
    if i > 0 {
      body.push_str("\n\n");
    }
    body.push_str(if *result { label(Role::Tool) } else { label(m.role) });
    body.push_str(": ");
    body.push_str(&texts.join("\n"));
  }
}

/// The byte length of the longest prefix of `text` of at most `max_units` UTF-16 code units,
/// ending on a character boundary.
fn utf16_prefix_end(text: &str, max_units: usize) -> usize {
  let mut units = 0;
  for (at, c) in text.char_indices() {
    units += c.len_utf16();
    if units > max_units {
      return at;
    }
  }
  text.len()
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::ToolCall;

  fn msg(role: Role, text: &str) -> Message {
    Message::text(role, text)
  }

  fn summary(messages: &[Message], max: usize) -> String {
    summarize_prefix(&messages.iter().collect::<Vec<_>>(), max)
  }

  #[test]
  fn nothing_to_summarise_is_none() {
    assert_eq!(summary(&[], 200), "Summary of earlier turns:\n(none)");
    assert_eq!(summary(&[msg(Role::User, "hi")], 200), "Summary of earlier turns:\n(none)");
    assert_eq!(summary(&[msg(Role::User, "hi")], 0), "Summary of earlier turns:\n(none)");
  }

  #[test]
  fn every_message_but_the_last_is_quoted_under_its_label() {
    let messages = [
      msg(Role::System, "Be brief."),
      msg(Role::Developer, "Use tools."),
      msg(Role::User, "What is X?"),
      msg(Role::Assistant, "X is a thing."),
      msg(Role::Tool, "output"),
      msg(Role::User, "last"),
    ];
    assert_eq!(
      summary(&messages, 200),
      "Summary of earlier turns:\nSystem: Be brief.\n\nSystem: Use tools.\n\nUser: What is X?\n\n\
       Agent: X is a thing.\n\nTool: output"
    );
  }

  #[test]
  fn tool_calls_follow_their_text() {
    let mut call = msg(Role::Assistant, "Looking.");
    call.tool_calls.push(ToolCall {
      id: "c1".into(),
      name: "read".into(),
      arguments: r#"{"path":"a.rs"}"#.into(),
    });
    let messages = [call, msg(Role::User, "last")];
    assert_eq!(
      summary(&messages, 200),
      "Summary of earlier turns:\nAgent: Looking.\nCalled read({\"path\":\"a.rs\"})"
    );
  }

  #[test]
  fn the_body_is_cut_to_four_characters_a_token() {
    let long = "a".repeat(2000);
    let messages = [msg(Role::User, &long), msg(Role::Assistant, &long), msg(Role::User, "last")];
    let s = summary(&messages, 50);
    let body = s.strip_prefix(PREFIX_SUMMARY_HEADER).unwrap();
    assert_eq!(body.len(), 200);
    assert!(body.starts_with("User: aaa"));
    // Exactly at the bound nothing is cut; one unit over, the last character goes.
    let at = [msg(Role::User, "abcdef"), msg(Role::User, "last")]; // "User: abcdef" = 12 units
    assert_eq!(summary(&at, 3), "Summary of earlier turns:\nUser: abcdef");
    assert_eq!(summary(&at, 2), "Summary of earlier turns:\nUser: ab");
    assert_eq!(summary(&at, 0), "Summary of earlier turns:\n");
  }

  #[test]
  fn a_cut_counts_utf16_units_and_never_splits_a_character() {
    // "User: " is 6 units; each 😀 is 2 units (4 bytes), each é 1 unit (2 bytes).
    let messages = [msg(Role::User, "😀😀é"), msg(Role::User, "last")];
    assert_eq!(summary(&messages, 2), "Summary of earlier turns:\nUser: 😀");
    assert_eq!(summary(&messages, 3), "Summary of earlier turns:\nUser: 😀😀é");
    // 7 units allowed: "User: " and half of 😀, which is left out whole.
    assert_eq!(utf16_prefix_end("User: 😀", 7), 6);
  }

  fn anthropic(messages: serde_json::Value) -> Vec<Message> {
    crate::model::format::parse_messages(&messages, Some(crate::model::format::Format::Anthropic))
      .unwrap()
      .1
  }

  #[test]
  fn an_anthropic_tool_result_is_labelled_tool() {
    let messages = anthropic(serde_json::json!([
      {"role": "user", "content": "U"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "R"}]},
      {"role": "user", "content": "last"},
    ]));
    assert_eq!(
      summary(&messages, 100),
      "Summary of earlier turns:\nUser: U\n\nAgent: \nCalled f({})\n\nTool: R"
    );
  }

  #[test]
  fn results_and_text_in_one_user_message_are_tool_and_user_entries_in_order() {
    let messages = anthropic(serde_json::json!([
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "f", "input": {}},
        {"type": "tool_use", "id": "b", "name": "g", "input": {}},
      ]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "R1"},
        {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "R2"}]},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
        {"type": "text", "text": "thanks"},
        {"type": "text", "text": "go on"},
      ]},
      {"role": "user", "content": "last"},
    ]));
    assert_eq!(
      summary(&messages, 100),
      "Summary of earlier turns:\nAgent: \nCalled f({})\nCalled g({})\n\nTool: R1\nR2\n\n\
       User: thanks\ngo on"
    );
    // A user message answering a call through `answers` alone is a tool result too.
    let mut answer = msg(Role::User, "R");
    answer.answers.push("a".into());
    assert_eq!(
      summary(&[answer, msg(Role::User, "last")], 100),
      "Summary of earlier turns:\nTool: R"
    );
  }
}
