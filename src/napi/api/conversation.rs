//! nanocoder's entry points (its `source/context/context-trimmer.ts`): `trimConversation` and
//! `enforceContextLimit`, with its options. Both run rolling context's rules first, then the
//! chosen strategy when the request still does not fit (see `strategy::budget`).

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::error::{Error as CoreError, Result as CoreResult};
use crate::model::cut::MIN_CUT_BUDGET;
use crate::model::tokens::Encoding;
use crate::strategy::placeholder::PlaceholderTemplate;
use crate::strategy::rolling::{
  TruncationConfig, DEFAULT_MAX_AGE, DEFAULT_MAX_TOKENS_PER_OUTPUT, DEFAULT_MIN_QUOTED_CHARS,
  DEFAULT_SMALL_OUTPUT_TOKENS,
};

use crate::napi::base::file_tracker::file_tracker_option;
use crate::napi::base::options::{
  classify_options, integer_argument, integer_option, is_nullish, number, parse_format,
  read_options, target_argument,
};
use crate::napi::base::summary::{summary_request, SummaryFields};
use crate::napi::base::trim::{keep_for_summarizer, RollingPass, Shape, Strategy, TrimOp};
use crate::napi::base::{error, read, task};

/// nanocoder's default placeholder, that of {@link trimConversation} and
/// {@link enforceContextLimit}.
pub const NANOCODER_PLACEHOLDER: &str = "[content truncated - {age} steps ago, {tokens} tokens]";
/// nanocoder's default `preserveRecentTurns`.
pub const NANOCODER_PRESERVE_RECENT_TURNS: usize = 5;

/// Options of {@link trimConversation} and {@link enforceContextLimit}: nanocoder's
/// `TrimOptions`, with the same names and defaults.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct TrimConversationOptions<'env> {
  /// What runs when rolling context's rules are not enough: `priority-based` runs
  /// {@link trimWithPlaceholders}, `age-based` runs {@link trimByAge}.
  /// @default 'priority-based'
  #[napi(ts_type = "'age-based' | 'priority-based'")]
  pub strategy: Option<String>,
  /// Messages at most this many steps old are recent turns (and tool results recent), kept
  /// longer by the priority-based strategy. nanocoder's default (5); {@link trimWithPlaceholders}
  /// defaults to seed 000's 2.
  /// @default 5
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Unknown<'env>>,
  /// The priority-based strategy only: your own agent-instruction markers (see
  /// {@link ClassificationContext}), as {@link trimWithPlaceholders} takes them.
  /// @default []
  pub agent_instruction_markers: Option<Vec<String>>,
  /// The priority-based strategy only: the files read and modified (see
  /// {@link TrimOptions.fileTracker}), as {@link trimWithPlaceholders} takes it.
  /// @default FileTracker.fromMessages(messages)
  #[napi(ts_type = "FileTracker")]
  pub file_tracker: Option<Unknown<'env>>,
  /// Tool results older than this many steps become the placeholder (rolling context's
  /// `maxAge`, see {@link TruncationConfig.maxAge}).
  /// @default 5
  #[napi(ts_type = "number")]
  pub max_age: Option<Unknown<'env>>,
  /// Tool results longer than this many tokens keep only their head and tail (at least 32; see
  /// {@link TruncationConfig.maxTokensPerOutput}).
  /// @default 2000
  #[napi(ts_type = "number")]
  pub max_tokens_per_output: Option<Unknown<'env>>,
  /// The text of every placeholder, of both passes: `{age}` (or `{N}`) becomes the result's age
  /// in steps, `{tokens}` its tokens and `{path}` the file it is about (empty if none).
  /// @default '[content truncated - {age} steps ago, {tokens} tokens]'
  pub placeholder: Option<String>,
  /// Keep error outputs whole in the rolling pass (flagged `is_error`, or reading as an error
  /// report). Under budget pressure the strategy may still shorten them, as nanocoder's second
  /// pass may drop them.
  /// @default true
  pub preserve_errors: Option<bool>,
  /// Keep the current view of each file whole in the rolling pass: a read of a file that no
  /// later write, edit or covering read followed, and the latest content of each file modified
  /// in the session (the tiers `RECENT_FILE_READS` and `MODIFIED_FILES`). Rolling context turns every
  /// output older than `maxAge` steps into a placeholder; agents edit against views far older
  /// than that (docs/quality.md). Under budget pressure the strategy may still shorten them.
  /// `false` is nanocoder's rolling pass as it is.
  /// @default true
  pub preserve_file_views: Option<bool>,
  /// The priority-based strategy only: keep every placeholder as made, as nanocoder does
  /// (see {@link TrimOptions.keepPlaceholders}; `false` lets a placeholder give way to its
  /// result cut to head and tail where the budget has room left for twice as much).
  /// @default true
  pub keep_placeholders: Option<bool>,
  /// Keep tool outputs under `smallOutputThreshold` tokens whole in the rolling pass.
  /// @default true
  pub preserve_small_outputs: Option<bool>,
  /// The tokens under which a tool output is small (see `preserveSmallOutputs`).
  /// @default 100
  #[napi(ts_type = "number")]
  pub small_output_threshold: Option<Unknown<'env>>,
  /// The provider the request goes to, which picks how tokens are counted when `encoding` is
  /// not given: a name containing `openai` (or none) counts with `model`'s tiktoken encoding;
  /// `anthropic`, `claude` and any other provider count `approximate` (their tokenizers are not
  /// tiktoken's), unless `model` is an OpenAI model (`gpt…`, `o1`, `o3`, `o4`).
  /// @default '' (count with `model`)
  pub provider_name: Option<String>,
  /// Inserts a summary of what was dropped into the returned messages (see
  /// {@link TrimOptions.insertSummary}: this function only returns messages, so the summary is
  /// always inserted).
  /// @default false
  pub summarize_dropped: Option<bool>,
  /// See {@link TrimOptions.maxSummaryTokens}.
  /// @default 500
  #[napi(ts_type = "number")]
  pub max_summary_tokens: Option<Unknown<'env>>,
  /// The `…Async` variants only: see {@link TrimOptions.summarizer}.
  #[napi(ts_type = "(dropped: Message[], draft: string) => Promise<string> | string")]
  pub summarizer: Option<Unknown<'env>>,
  /// See {@link TrimOptions.summarizerTimeoutMs}.
  /// @default 10000
  #[napi(ts_type = "number")]
  pub summarizer_timeout_ms: Option<Unknown<'env>>,
  /// A model name that picks the tokenizer (see {@link countTokens}).
  pub model: Option<String>,
  /// The encoding, which wins over `model` and `providerName`.
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
  /// conversations without tool blocks: read as OpenAI (the default detection of plain text),
  /// the result may start with an assistant message, which Anthropic refuses.
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// Trims a conversation to `targetTokens` and returns the messages, as nanocoder's
/// `trimConversation`: unchanged when it fits; else rolling context's rules first (tool
/// results older than `maxAge` steps become the placeholder, longer than `maxTokensPerOutput`
/// are cut, errors and small outputs kept), then, if that is not enough, the `strategy`.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], targetTokens: number, options?: TrimConversationOptions",
  ts_return_type = "M[]"
)]
pub fn trim_conversation<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  target_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare(env, messages, target_tokens, options, false, Shape::Messages)?;
  task::run_sync(env, input, op)
}

/// {@link trimConversation} on the libuv thread pool; the only way to use a `summarizer` with
/// it.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], targetTokens: number, options?: TrimConversationOptions",
  ts_return_type = "Promise<M[]>"
)]
pub fn trim_conversation_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  target_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let op = prepare(env, messages, target_tokens, options, true, Shape::Messages);
  task::spawn_or_reject(env, op)
}

/// Keeps a request within `maxInputTokens`, as nanocoder's `enforceContextLimit`: when it
/// fits, the messages come back unchanged with `truncated: false`; else they go through
/// {@link trimConversation} and the result says what was removed.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], maxInputTokens: number, options?: TrimConversationOptions",
  ts_return_type = "ContextLimitResultOf<M>"
)]
pub fn enforce_context_limit<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  max_input_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare(env, messages, max_input_tokens, options, false, Shape::ContextLimit)?;
  task::run_sync(env, input, op)
}

/// {@link enforceContextLimit} on the libuv thread pool; the only way to use a `summarizer`
/// with it.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], maxInputTokens: number, options?: TrimConversationOptions",
  ts_return_type = "Promise<ContextLimitResultOf<M>>"
)]
pub fn enforce_context_limit_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  max_input_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let op = prepare(env, messages, max_input_tokens, options, true, Shape::ContextLimit);
  task::spawn_or_reject(env, op)
}

/// A numeric option that is a non-negative integer at least `min`, or `default` when absent.
fn integer(
  value: Option<Unknown<'_>>,
  name: &str,
  min: usize,
  default: usize,
) -> CoreResult<usize> {
  match value {
    Some(v) if !is_nullish(&v) => integer_option(name, number(&v, name)?, min as f64),
    _ => Ok(default),
  }
}

/// Rolling context's rules from nanocoder's options.
fn rolling_config(
  opts: &TrimConversationOptions<'_>,
  placeholder: &str,
) -> CoreResult<TruncationConfig> {
  let small =
    integer(opts.small_output_threshold, "smallOutputThreshold", 0, DEFAULT_SMALL_OUTPUT_TOKENS)?;
  let config = TruncationConfig {
    max_age: integer(opts.max_age, "maxAge", 0, DEFAULT_MAX_AGE)?,
    max_tokens_per_output: integer(
      opts.max_tokens_per_output,
      "maxTokensPerOutput",
      MIN_CUT_BUDGET,
      DEFAULT_MAX_TOKENS_PER_OUTPUT,
    )?,
    placeholder: placeholder.to_string(),
    small_output_tokens: if opts.preserve_small_outputs.unwrap_or(true) { small } else { 0 },
    min_quoted_chars: DEFAULT_MIN_QUOTED_CHARS,
    stable_placeholders: false,
    preserve_errors: opts.preserve_errors.unwrap_or(true),
  };
  config.validate()?;
  Ok(config)
}

fn prepare<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  target_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
  asynchronous: bool,
  shape: Shape,
) -> Result<(read::JsMessages<'env>, TrimOp)> {
  let throw = |e: CoreError| error::throw(env, e);
  let opts: TrimConversationOptions = read_options(env, options, "options")?;
  let format = parse_format(opts.format.as_deref()).map_err(throw)?;
  let input = read::read_messages_in(env, messages, format)?;
  let target = match shape {
    Shape::ContextLimit => integer_argument(&target_tokens, "maxInputTokens", 0.0),
    Shape::Messages | Shape::TrimResult => target_argument(&target_tokens),
  }
  .map_err(throw)?;
  let encoding = Encoding::resolve_for_provider(
    opts.provider_name.as_deref(),
    opts.model.as_deref(),
    opts.encoding.as_deref(),
  )
  .map(|e| e.with_framing(opts.framing))
  .map_err(throw)?;
  // A provider whose tokenizer is not tiktoken's counts approximately: the model plays no part.
  if encoding.base() != Encoding::Approximate {
    crate::napi::base::model_warning::warn_unknown_model(
      env,
      opts.model.as_deref(),
      opts.encoding.as_deref(),
    )?;
  }
  let strategy = match opts.strategy.as_deref().unwrap_or("priority-based") {
    "priority-based" => Strategy::WithPlaceholders,
    "age-based" => Strategy::ByAge,
    other => {
      return Err(throw(CoreError::option(
        "strategy",
        format!("must be one of age-based, priority-based, got {other:?}"),
      )))
    }
  };
  if matches!(strategy, Strategy::ByAge) {
    // trimByAge drops the oldest units first: it reads no priority.
    let classifying = [
      ("preserveRecentTurns", opts.preserve_recent_turns.is_some_and(|v| !is_nullish(&v))),
      ("agentInstructionMarkers", opts.agent_instruction_markers.is_some()),
      ("fileTracker", opts.file_tracker.is_some_and(|v| !is_nullish(&v))),
      ("keepPlaceholders", opts.keep_placeholders.is_some()),
    ];
    if let Some((name, _)) = classifying.iter().find(|(_, given)| *given) {
      return Err(throw(CoreError::option(
        *name,
        "applies to strategy priority-based only, the strategy is \"age-based\" (oldest first)",
      )));
    }
  }
  let mut classify =
    classify_options(opts.preserve_recent_turns, None, opts.agent_instruction_markers.clone())
      .map_err(throw)?;
  if opts.preserve_recent_turns.filter(|v| !is_nullish(v)).is_none() {
    classify.preserve_recent_turns = NANOCODER_PRESERVE_RECENT_TURNS;
    classify.recent_threshold = NANOCODER_PRESERVE_RECENT_TURNS;
  }
  let placeholder = opts.placeholder.as_deref().unwrap_or(NANOCODER_PLACEHOLDER);
  let rolling = rolling_config(&opts, placeholder).map_err(throw)?;
  let fields = SummaryFields {
    summarize_dropped: opts.summarize_dropped,
    insert_summary: None,
    max_summary_tokens: opts.max_summary_tokens,
    summarizer: opts.summarizer,
    summarizer_timeout_ms: opts.summarizer_timeout_ms,
  };
  let summary = summary_request(fields, asynchronous).map_err(throw)?;
  let messages = keep_for_summarizer(&input, summary.as_ref());
  let op = TrimOp {
    strategy,
    shape,
    target,
    classify,
    tracker: file_tracker_option(opts.file_tracker).map_err(throw)?,
    encoding,
    format: input.format,
    summary,
    placeholder: Some(PlaceholderTemplate::new(placeholder)),
    keep_placeholders: opts.keep_placeholders.unwrap_or(true),
    replan_every: 0,
    rolling: Some(RollingPass {
      config: rolling,
      keep_views: opts.preserve_file_views.unwrap_or(true),
    }),
    messages,
  };
  Ok((input, op))
}
