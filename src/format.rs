//! Message formats and the provider rules that differ between them.
//!
//! The validator ([`crate::validate`]) and the repair ([`crate::repair`]) check one set of
//! [`Rules`]; each [`Format`] says which rules its provider enforces. A new format plugs in by
//! adding a variant here and its rules in [`Format::rules`]; the checks themselves are shared.

use crate::error::{Error, Result};
use crate::message::quote;

/// A provider message format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Format {
  /// OpenAI Chat Completions: `role: 'tool'` results with a `tool_call_id`, right after the
  /// assistant message whose `tool_calls` they answer.
  #[default]
  OpenAi,
}

/// Where the results of an assistant message's tool calls must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
  /// In the run of tool-result messages directly after the calling message, before any other
  /// message (OpenAI Chat Completions).
  FollowingResults,
  /// In the one message directly after the calling message (Anthropic Messages: the
  /// `tool_result` blocks of the next user message).
  NextMessage,
}

/// The rules a provider enforces on a conversation, beyond the pairing of calls and results
/// that every format shares (each call answered once, no result without an earlier call, no
/// repeated call id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
  /// Where results must be.
  pub placement: Placement,
  /// Whether text that is empty or only whitespace counts as no content (Anthropic rejects
  /// empty text blocks; OpenAI accepts `content: ''`).
  pub blank_text_is_empty: bool,
  /// Whether two consecutive messages may not have the same role.
  pub alternating_roles: bool,
  /// Whether the first message after the instructions (`system`/`developer`) must be a user
  /// message.
  pub first_must_be_user: bool,
  /// Whether a call id may not be used again by a later message. Within one message an id is
  /// never reused (its results could not be told apart); across messages OpenAI pairs results
  /// by position, and real agents (SWE-agent replays) do reuse ids.
  pub unique_call_ids: bool,
}

impl Format {
  /// Every format, in the order of their names in error messages.
  pub const ALL: [Format; 1] = [Format::OpenAi];

  /// The format's name as the `format` option spells it.
  pub fn as_str(self) -> &'static str {
    match self {
      Format::OpenAi => "openai",
    }
  }

  /// The rules of the format's provider.
  pub fn rules(self) -> Rules {
    match self {
      Format::OpenAi => Rules {
        placement: Placement::FollowingResults,
        blank_text_is_empty: false,
        alternating_roles: false,
        first_must_be_user: false,
        unique_call_ids: false,
      },
    }
  }

  /// Resolves the `format` option: absent or `'auto'` is the detected format (OpenAI Chat
  /// Completions, the only one supported so far), otherwise the named one.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `format` for a format not supported yet (`anthropic`,
  /// `ai-sdk`) or an unknown name.
  pub fn from_option(name: Option<&str>) -> Result<Format> {
    match name {
      None | Some("auto") => Ok(Format::OpenAi),
      Some("openai") => Ok(Format::OpenAi),
      Some(planned @ ("anthropic" | "ai-sdk")) => Err(Error::option(
        "format",
        format!("{} is not supported yet, use \"openai\" or \"auto\"", quote(planned)),
      )),
      Some(other) => Err(Error::option(
        "format",
        format!("must be one of openai, anthropic, ai-sdk, auto, got {}", quote(other)),
      )),
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn the_format_option_resolves_or_names_what_is_wrong() {
    assert_eq!(Format::from_option(None).unwrap(), Format::OpenAi);
    assert_eq!(Format::from_option(Some("auto")).unwrap(), Format::OpenAi);
    assert_eq!(Format::from_option(Some("openai")).unwrap(), Format::OpenAi);
    for (name, text) in [
      ("anthropic", "format: \"anthropic\" is not supported yet, use \"openai\" or \"auto\""),
      ("ai-sdk", "format: \"ai-sdk\" is not supported yet, use \"openai\" or \"auto\""),
      ("OpenAI", "format: must be one of openai, anthropic, ai-sdk, auto, got \"OpenAI\""),
    ] {
      let err = Format::from_option(Some(name)).unwrap_err();
      assert_eq!(err.to_string(), text);
      assert_eq!(err.code(), "INVALID_OPTION");
    }
  }

  #[test]
  fn openai_rules_are_placement_only() {
    let r = Format::OpenAi.rules();
    assert_eq!(r.placement, Placement::FollowingResults);
    assert!(!r.blank_text_is_empty && !r.alternating_roles && !r.first_must_be_user);
    assert!(!r.unique_call_ids);
    assert_eq!(Format::ALL.map(Format::as_str), ["openai"]);
  }
}
