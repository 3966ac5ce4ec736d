//! The rolling context's configuration as JavaScript gives it ({@link TruncationConfig}) and as
//! it reads back ({@link ResolvedTruncationConfig}): shared by `truncateOldToolOutputs`,
//! `RollingContext`, `ContextWindow` and `CacheAwareTrimmer`.

use napi_derive::napi;

use crate::error::Result as CoreResult;
use crate::model::cut::MIN_CUT_BUDGET;
use crate::model::tokens::Encoding;
use crate::strategy::rolling::{
  self, DEFAULT_MAX_AGE, DEFAULT_MAX_TOKENS_PER_OUTPUT, DEFAULT_MIN_QUOTED_CHARS,
  DEFAULT_PLACEHOLDER, DEFAULT_SMALL_OUTPUT_TOKENS,
};

use super::super::saturate;
use super::integer_option;

/// How old and how long tool outputs may be. Every field is optional: a missing one takes its
/// value from {@link DEFAULT_CONFIG}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct TruncationConfig {
  /// Steps (assistant messages with tool calls) after which a tool result is replaced by the
  /// placeholder: a result is truncated when its age, the number of steps since its call, is
  /// greater than this.
  /// @default 5
  pub max_age: Option<f64>,
  /// Tokens above which a younger tool result keeps only its head and tail, with a marker in
  /// the middle saying how many tokens were cut. At least 32.
  /// @default 2000
  pub max_tokens_per_output: Option<f64>,
  /// The content of a truncated result: `{age}` (or `{N}`) becomes its age in steps,
  /// `{tokens}` the tokens of the original content and `{path}` the file its call names (the
  /// first `path`, `file_path`… argument; empty if none).
  /// @default '[content truncated - {age} steps ago]'
  pub placeholder: Option<String>,
  /// Tool results with fewer tokens than this are never truncated nor cut.
  /// @default 100
  pub small_output_tokens: Option<f64>,
  /// The shortest verbatim span, in characters, by which a later user message quotes a tool
  /// result or a recent tool call consumes it (both keep it).
  /// @default 40
  pub min_quoted_chars: Option<f64>,
  /// Write `maxAge + 1`, the age at which a result is first truncated, instead of its current
  /// age into the placeholder's `{age}` and into `_truncatedAt`, so that a truncated result
  /// reads the same on every later call and a provider's prompt cache of the history stays
  /// valid (see docs/prompt-caching-policy.md). Off by default: the seed writes the current age.
  /// @default false
  pub stable_placeholders: Option<bool>,
  /// Keep error outputs whole (flagged `is_error`/`isError`, or reading as an error report),
  /// whatever their age and size. Off, they are truncated and cut like any other output.
  /// @default true
  pub preserve_errors: Option<bool>,
  /// A model name that picks the encoding tokens are counted in (see `TokenOptions.model`).
  pub model: Option<String>,
  /// The encoding tokens are counted in, which wins over `model`.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// `false` counts each message as its content, tool-call names and arguments only, with no
  /// reply priming (CursorClaw's budget); `true` adds the chat framing of the
  /// OpenAI cookbook (3 tokens a message, its role, its name, 1 per tool call, and 3 of reply
  /// priming a request), which is what OpenAI bills. See README's token counting.
  /// @default true
  pub framing: Option<bool>,
  /// The message format (see {@link TokenOptions.format}). Give it for Anthropic
  /// conversations without tool blocks, which read as OpenAI otherwise.
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

impl TruncationConfig {
  /// The core configuration and encoding, defaults filled in.
  pub(crate) fn normalize(&self) -> CoreResult<(rolling::TruncationConfig, Encoding)> {
    self.normalize_within(None)
  }

  /// [`TruncationConfig::normalize`] for counts already in `fixed` (see
  /// [`Encoding::resolve_within`]).
  pub(crate) fn normalize_within(
    &self,
    fixed: Option<Encoding>,
  ) -> CoreResult<(rolling::TruncationConfig, Encoding)> {
    let int = |value: Option<f64>, name: &str, min: usize, default: usize| {
      value.map_or(Ok(default), |v| integer_option(name, v, min as f64))
    };
    let config = rolling::TruncationConfig {
      max_age: int(self.max_age, "maxAge", 0, DEFAULT_MAX_AGE)?,
      max_tokens_per_output: int(
        self.max_tokens_per_output,
        "maxTokensPerOutput",
        MIN_CUT_BUDGET,
        DEFAULT_MAX_TOKENS_PER_OUTPUT,
      )?,
      placeholder: self.placeholder.clone().unwrap_or_else(|| DEFAULT_PLACEHOLDER.to_string()),
      small_output_tokens: int(
        self.small_output_tokens,
        "smallOutputTokens",
        0,
        DEFAULT_SMALL_OUTPUT_TOKENS,
      )?,
      min_quoted_chars: int(self.min_quoted_chars, "minQuotedChars", 1, DEFAULT_MIN_QUOTED_CHARS)?,
      stable_placeholders: self.stable_placeholders.unwrap_or(false),
      preserve_errors: self.preserve_errors.unwrap_or(true),
    };
    config.validate()?;
    let encoding = Encoding::resolve_within(
      self.model.as_deref(),
      self.encoding.as_deref(),
      self.framing,
      fixed,
    )?;
    Ok((config, encoding))
  }
}

/// A complete truncation configuration: {@link DEFAULT_CONFIG}, or the one a
/// {@link RollingContext} uses.
#[napi(object, object_from_js = false)]
pub struct ResolvedTruncationConfig<'a> {
  /// Steps after which a tool result is replaced by the placeholder.
  pub max_age: u32,
  /// Tokens above which a younger tool result is cut to its head and tail.
  pub max_tokens_per_output: u32,
  /// The content of a truncated result (`{age}`, `{N}`, `{tokens}`, `{path}` filled in).
  pub placeholder: &'a str,
  /// Tool results with fewer tokens are never truncated.
  pub small_output_tokens: u32,
  /// The shortest verbatim span, in characters, that counts as a quote.
  pub min_quoted_chars: u32,
  /// Whether placeholders carry the age at which they were first truncated (`maxAge + 1`).
  pub stable_placeholders: bool,
  /// Whether error outputs are kept whole.
  pub preserve_errors: bool,
  /// A {@link RollingContext}'s only: the encoding tokens are counted in.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<&'static str>,
  /// A {@link RollingContext}'s only: whether messages are counted with the chat framing.
  pub framing: Option<bool>,
  /// A {@link RollingContext}'s only: the message format (`auto`: detected).
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<&'static str>,
}

impl<'a> From<&'a rolling::TruncationConfig> for ResolvedTruncationConfig<'a> {
  fn from(c: &'a rolling::TruncationConfig) -> Self {
    ResolvedTruncationConfig {
      max_age: saturate(c.max_age),
      max_tokens_per_output: saturate(c.max_tokens_per_output),
      placeholder: &c.placeholder,
      small_output_tokens: saturate(c.small_output_tokens),
      min_quoted_chars: saturate(c.min_quoted_chars),
      stable_placeholders: c.stable_placeholders,
      preserve_errors: c.preserve_errors,
      encoding: None,
      framing: None,
      format: None,
    }
  }
}
