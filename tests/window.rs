//! The incremental window on the real transcripts: growing it one message at a time gives the
//! conversation the one-pass analysis gives, and the strategies decide the same on it.

mod common;

use context_trim::strategy::priority::{trim_by_priority, trim_with_placeholders, PriorityOptions};
use context_trim::strategy::rolling::{truncate_old_tool_outputs, TruncationConfig};
use context_trim::{ContextWindow, Conversation, Encoding, Format};

#[test]
fn a_window_grown_message_by_message_is_the_whole_conversation() {
  for (name, messages) in common::transcripts() {
    common::check_window_growth(&messages, 7).unwrap_or_else(|e| panic!("{name}: {e}"));
  }
}

#[test]
fn strategies_decide_the_same_on_the_window() {
  for (name, messages) in common::transcripts() {
    let mut window = ContextWindow::new(Encoding::O200kBase, Format::OpenAi);
    for m in &messages {
      window.push(m);
    }
    let whole = Conversation::new(&messages, Encoding::O200kBase);
    let grown = window.conversation();
    for share in [4, 2] {
      let options =
        PriorityOptions { target_tokens: whole.total_tokens() / share, ..Default::default() };
      assert_eq!(
        trim_by_priority(&grown, None, &options).outcome,
        trim_by_priority(&whole, None, &options).outcome,
        "{name} 1/{share}"
      );
      assert_eq!(
        trim_with_placeholders(&grown, None, &options).outcome,
        trim_with_placeholders(&whole, None, &options).outcome,
        "{name} 1/{share}"
      );
    }
    let config = TruncationConfig::default();
    assert_eq!(
      truncate_old_tool_outputs(&grown, &config),
      truncate_old_tool_outputs(&whole, &config),
      "{name}"
    );
  }
}
