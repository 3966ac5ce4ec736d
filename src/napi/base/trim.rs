//! The trimming operation several entry points share: `trimByPriority`, `trimWithPlaceholders`,
//! `trimByAge`, `trimConversation`, `enforceContextLimit`, the JSON entry points and
//! `ContextWindow#trim` read their arguments into a [`TrimOp`], run it (on the JS thread or the
//! libuv pool) and build their result from it ([`TrimResult`], [`ContextLimitResult`]); the
//! truncation operation the rolling context and `ContextWindow` share ([`truncate_op`]).

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::analysis::classify::ClassifyOptions;
use crate::analysis::file_tracker::FileTracker as CoreTracker;
use crate::error::Error as CoreError;
use crate::model::conversation::Conversation;
use crate::model::format::Format;
use crate::model::message::Message;
use crate::model::tokens::Encoding;
use crate::plan::Action;
use crate::strategy::age::trim_by_age as core_trim_by_age;
use crate::strategy::budget::{trim_after_rolling, Views};
use crate::strategy::placeholder::PlaceholderTemplate;
use crate::strategy::priority::{
  trim_by_priority as core_trim_by_priority, trim_with_placeholders as core_trim_with_placeholders,
  PriorityOptions, PriorityTrim,
};
use crate::strategy::rolling::{self, TruncationConfig};
use crate::strategy::summarized::{replace_summary_text, trim_with_summary, Summary};
use crate::strategy::Outcome;

use super::classified::classified_list;
use super::file_tracker::file_tracker_option;
use super::options::{
  check_window_format, classify_options, integer_field, parse_format, read_options,
  read_options_except,
};
use super::summary::{
  self, summary_request, Finish, Settled, SummaryFields, SummaryRequest, SummarySource,
};
use super::write::Objects;
use super::{error, read, saturate, task, write};

/// Options of {@link trimByPriority} and {@link trimWithPlaceholders} (and of their async
/// variants).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct TrimOptions<'env> {
  /// The budget in tokens for the whole request (messages and reply priming). Required.
  #[napi(ts_type = "number")]
  pub target_tokens: Option<Unknown<'env>>,
  /// Messages at most this many steps old are recent turns (and tool results recent).
  /// @default 2
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Unknown<'env>>,
  /// Decides which files count as modified (and what file placeholders say).
  /// @default FileTracker.fromMessages(messages)
  #[napi(ts_type = "FileTracker")]
  pub file_tracker: Option<Unknown<'env>>,
  /// Returns `summary`: a deterministic summary of the messages dropped or replaced (files,
  /// commands, errors, user requests, the assistant's decisions), starting with
  /// `[context-trim summary]`. See docs/summaries.md.
  /// @default false
  pub summarize_dropped: Option<bool>,
  /// Also inserts the summary into `messages`: one `user` message flagged `_summary: true`,
  /// right after the leading system/developer messages. Its tokens count towards
  /// `targetTokens` (more is trimmed to make room; one that cannot fit beside what must stay,
  /// even at 64 tokens, is returned but not inserted), and an earlier summary is folded into it.
  /// Needs `summarizeDropped`.
  /// @default false
  pub insert_summary: Option<bool>,
  /// The bound of the summary's text, in tokens (at least 64).
  /// @default 500
  #[napi(ts_type = "number")]
  pub max_summary_tokens: Option<Unknown<'env>>,
  /// Async functions only: writes the summary instead of the extractive one. Called on the JS
  /// thread with the dropped messages (your own objects) and the extractive draft; its text is
  /// given the `[context-trim summary]` marker if it lacks it and cut to `maxSummaryTokens`.
  /// If it throws, rejects, resolves to something other than a non-empty string or does not
  /// settle within `summarizerTimeoutMs`, the draft is used (see `summarySource`). Passing it to
  /// a sync function is an `INVALID_OPTION` error. Needs `summarizeDropped`.
  #[napi(ts_type = "(dropped: Message[], draft: string) => Promise<string> | string")]
  pub summarizer: Option<Unknown<'env>>,
  /// How long the summarizer may take, in milliseconds (1 to 2147483647).
  /// @default 10000
  #[napi(ts_type = "number")]
  pub summarizer_timeout_ms: Option<Unknown<'env>>,
  /// A model name that picks the tokenizer (see {@link countTokens}).
  pub model: Option<String>,
  /// The encoding, which wins over `model`.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// `false` counts each message as its content, tool-call names and arguments only, with no
  /// reply priming (CursorClaw's budget); `true` adds the chat framing of the
  /// OpenAI cookbook (3 tokens a message, its role, its name, 1 per tool call, and 3 of reply
  /// priming a request), which is what OpenAI bills. See README's token counting.
  /// @default true
  pub framing: Option<bool>,
  /// Your own agent-instruction markers (see {@link ClassificationContext}).
  /// @default []
  pub agent_instruction_markers: Option<Vec<String>>,
  /// {@link trimWithPlaceholders} only: the text of every placeholder instead of the seed's
  /// (`[Content truncated - T tokens]`, and the file summary for a file the
  /// tracker knows). `{age}` (or `{N}`) becomes the result's age in steps, `{tokens}` its
  /// tokens and `{path}` the file it is about (empty if none), e.g.
  /// `'[content truncated - {age} steps ago, {tokens} tokens]'`, nanocoder's wording. `{age}`
  /// grows on every call, so a placeholder with it is new text each call, which a prompt cache
  /// cannot reuse (the default placeholders leave the age out for that reason).
  /// @default undefined (the seed's placeholders)
  pub placeholder: Option<String>,
  /// {@link trimWithPlaceholders} only: keep every placeholder as made. By default, where the
  /// budget has room left, a placeholder gives way to its result cut to head and tail
  /// (`_cutTokens`), if that is at least twice the placeholder; the room goes to the most
  /// important results first (docs/priority-trimming.md). `true` is seed 000's behaviour, and a
  /// steadier prefix for prompt caching (the size of such a cut follows the room left).
  /// @default false
  pub keep_placeholders: Option<bool>,
  /// Re-plan only each time the history has grown by this many tokens (for a function called
  /// before every model call): the history is trimmed up to its last re-plan point, to
  /// `targetTokens` less this step, and what came after is sent whole. The points lie a step
  /// apart in the history's tokens and depend on the messages before them alone, so while the
  /// history grows by less than a step every decision and its text stay as the call before
  /// made them: the request only grows at its end, and a provider's prompt cache keeps its
  /// prefix. A quarter of `targetTokens` costs 0.7× to 1.4× of sending everything on the
  /// bundled runs, against 2× to 6× for `0`, and sends less (between `targetTokens` less a step
  /// and `targetTokens`), which costs recall: see docs/prompt-caching.md. Must be below
  /// `targetTokens`. `0` plans the whole history on every call.
  /// @default 0
  #[napi(ts_type = "number")]
  pub replan_every: Option<Unknown<'env>>,
  /// The message format (see {@link TokenOptions.format}). Give it for Anthropic
  /// conversations without tool blocks: read as OpenAI (the default detection of plain text),
  /// the result may start with an assistant message, which Anthropic refuses.
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// The result of {@link trimByPriority} and {@link trimWithPlaceholders}.
#[napi(object, object_from_js = false)]
pub struct TrimResult<'env> {
  /// The trimmed messages, in order: kept ones are your own objects, placeholders are copies
  /// (`{...original, content, _truncated: true, _originalTokens}`), and with `insertSummary`
  /// the summary is a new `{role: 'user', content, _summary: true}` message.
  #[napi(ts_type = "Message[]")]
  pub messages: Array<'env>,
  /// Every message whose original content is not returned, in order, each with its
  /// classification and as you passed it (your own object): the ones removed from `messages`
  /// and the ones shortened in it (replaced by a placeholder, or cut to head and tail with
  /// `_cutTokens`). So a trim that only shortens returns every message and still lists the
  /// shortened ones here; `shortenedMessages` lists those alone.
  #[napi(ts_type = "Array<ClassifiedMessage>")]
  pub dropped_messages: Array<'env>,
  /// The messages of `droppedMessages` that are still in `messages`, shortened (a placeholder,
  /// or cut to head and tail), in order; the ones removed are the others. Its entries are
  /// `droppedMessages`' own (the same objects).
  #[napi(ts_type = "Array<ClassifiedMessage>")]
  pub shortened_messages: Array<'env>,
  /// Tokens before minus tokens after.
  pub saved_tokens: u32,
  /// With `summarizeDropped`, when something was dropped or replaced: the summary of it,
  /// starting with `[context-trim summary]`.
  pub summary: Option<String>,
  /// Where `summary` comes from: `'extractive'` without a summarizer; `'callback'`,
  /// `'fallback-error'` or `'fallback-timeout'` with one.
  pub summary_source: Option<SummarySource>,
  /// Why the summarizer's text was not used (with `'fallback-error'` and `'fallback-timeout'`).
  pub summary_error: Option<String>,
  /// Whether `totalTokens` is still above `targetTokens` because the system messages and the
  /// last message with its unit alone exceed it (they are never dropped; under Anthropic's
  /// rule the opening user message counts too).
  pub over_budget: bool,
  /// The tokens of the returned request (an inserted summary included).
  pub total_tokens: u32,
}

/// What a trimming call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
  /// The messages only.
  Messages,
  /// A {@link TrimResult}.
  TrimResult,
  /// A {@link ContextLimitResult} (`enforceContextLimit`).
  ContextLimit,
}

/// `trimConversation`'s first pass: rolling context's rules, and whether it leaves the current
/// views of files whole (`preserveFileViews`).
pub(crate) struct RollingPass {
  pub(crate) config: TruncationConfig,
  pub(crate) keep_views: bool,
}

/// Which strategy a trimming call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
  ByPriority,
  WithPlaceholders,
  ByAge,
}

/// A trimming call as the task runner runs it (sync or async).
pub(crate) struct TrimOp {
  pub(crate) strategy: Strategy,
  /// What the call returns.
  pub(crate) shape: Shape,
  pub(crate) target: usize,
  pub(crate) classify: ClassifyOptions,
  pub(crate) tracker: Option<CoreTracker>,
  pub(crate) encoding: Encoding,
  /// The format the messages were read in (its rules shape the plan).
  pub(crate) format: Format,
  pub(crate) summary: Option<SummaryRequest>,
  /// The placeholder template of `trimWithPlaceholders` (`None`: the seed's placeholders).
  pub(crate) placeholder: Option<PlaceholderTemplate>,
  /// `trimWithPlaceholders`: keep every placeholder as made (no cut fills the room left).
  pub(crate) keep_placeholders: bool,
  /// `replanEvery`: the tokens between re-plan points ([`PriorityOptions::replan_step`]).
  pub(crate) replan_every: usize,
  /// Rolling context's rules, applied first (`trimConversation`, see `strategy::budget`).
  pub(crate) rolling: Option<RollingPass>,
  /// The parsed messages, kept for building the result after a summarizer.
  pub(crate) messages: Vec<std::sync::Arc<super::cache::Cached>>,
}

/// What a trimming call computed.
pub(crate) struct TrimOutput {
  pub(crate) trim: PriorityTrim,
  pub(crate) summary: Option<Summary>,
  /// The request's tokens before trimming.
  pub(crate) original_tokens: usize,
}

impl TrimOp {
  fn run(&self, conv: &Conversation<'_>, target: usize) -> PriorityTrim {
    match &self.rolling {
      Some(rolling) => {
        let views = rolling
          .keep_views
          .then_some(Views { classify: &self.classify, tracker: self.tracker.as_ref() });
        trim_after_rolling(conv, &rolling.config, views, target, |c| self.run_strategy(c, target))
      }
      None => self.run_strategy(conv, target),
    }
  }

  fn run_strategy(&self, conv: &Conversation<'_>, target: usize) -> PriorityTrim {
    let options = PriorityOptions {
      target_tokens: target,
      classify: self.classify.clone(),
      placeholder: self.placeholder.clone(),
      keep_placeholders: self.keep_placeholders,
      replan_step: self.replan_every,
    };
    let tracker = self.tracker.as_ref();
    match self.strategy {
      Strategy::ByPriority => core_trim_by_priority(conv, tracker, &options),
      Strategy::WithPlaceholders => core_trim_with_placeholders(conv, tracker, &options),
      Strategy::ByAge => {
        PriorityTrim { outcome: core_trim_by_age(conv, target), classification: Vec::new() }
      }
    }
  }
}

impl task::Operation for TrimOp {
  type Output = TrimOutput;

  fn compute(&mut self, messages: &[&Message], kept: Option<task::Kept<'_>>) -> TrimOutput {
    let conv = task::conversation(messages, self.encoding, kept).with_format(self.format);
    task::OnConversation::compute_on(self, &conv)
  }

  fn counts_in(&self) -> Option<Encoding> {
    Some(self.encoding)
  }

  fn to_js<'env>(
    &mut self,
    env: &'env Env,
    output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
  ) -> Result<Unknown<'env>> {
    let summarizer = self.summary.as_mut().and_then(|r| r.summarizer.take());
    let (Some(summarizer), Some(summary)) = (summarizer, &output.summary) else {
      let source = output.summary.as_ref().map(|_| Settled {
        source: SummarySource::Extractive,
        text: None,
        error: None,
      });
      return self.finish(env, output, objects, format, source);
    };
    let sources = summary.sources.clone();
    let draft = summary.text.clone();
    let finisher = Finisher {
      shape: self.shape,
      target: self.target,
      encoding: self.encoding,
      messages: std::mem::take(&mut self.messages),
    };
    let finish: Finish = Box::new(move |env, objects, settled| {
      let value = finisher.finish(env, output, objects, format, settled)?;
      Ok(value.raw())
    });
    summary::ask(env, &summarizer, objects, &sources, &draft, finish)
  }
}

impl task::OnConversation for TrimOp {
  fn compute_on(&mut self, conv: &Conversation<'_>) -> TrimOutput {
    let original_tokens = conv.total_tokens();
    match &self.summary {
      None => TrimOutput { trim: self.run(conv, self.target), summary: None, original_tokens },
      Some(request) => {
        let (trim, summary) =
          trim_with_summary(conv, self.target, &request.options, |t| self.run(conv, t));
        TrimOutput { trim, summary, original_tokens }
      }
    }
  }
}

impl TrimOp {
  fn finish<'env>(
    &self,
    env: &'env Env,
    output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
    settled: Option<Settled>,
  ) -> Result<Unknown<'env>> {
    let finisher = Finisher {
      shape: self.shape,
      target: self.target,
      encoding: self.encoding,
      messages: Vec::new(),
    };
    finisher.build(env, output, objects, format, settled)
  }
}

/// Builds a trimming call's JavaScript result, after the summarizer if there is one.
struct Finisher {
  shape: Shape,
  target: usize,
  encoding: Encoding,
  messages: Vec<std::sync::Arc<super::cache::Cached>>,
}

impl Finisher {
  /// Swaps in the summarizer's text when it is the source, then builds the result.
  fn finish<'env>(
    &self,
    env: &'env Env,
    mut output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
    settled: Settled,
  ) -> Result<Unknown<'env>> {
    if let (Some(text), Some(summary)) = (&settled.text, output.summary.as_mut()) {
      let refs = self.messages.iter().map(|c| &c.message).collect();
      let conv = Conversation::from_refs(refs, self.encoding).with_format(format);
      let outcome = &mut output.trim.outcome;
      replace_summary_text(&conv, outcome, summary, text, self.target);
    }
    self.build(env, output, objects, format, Some(settled))
  }

  fn build<'env>(
    &self,
    env: &'env Env,
    output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
    settled: Option<Settled>,
  ) -> Result<Unknown<'env>> {
    let TrimOutput { trim, summary, original_tokens } = output;
    let messages = write::apply_plan_to(env, objects, format, &trim.outcome.plan)?;
    match self.shape {
      Shape::Messages => return messages.into_unknown(env),
      Shape::ContextLimit => {
        let limit = LimitFigures { original_tokens, target: self.target };
        return context_limit_result(env, &trim.outcome, messages, objects, limit);
      }
      Shape::TrimResult => {}
    }
    let dropped: Vec<u32> = trim
      .outcome
      .dropped
      .iter()
      .filter(|&&i| i < objects.len() && i < trim.classification.len())
      .map(|&i| i as u32)
      .collect();
    let plan = &trim.outcome.plan;
    // The shortened messages' places in `droppedMessages`, whose entries `shortenedMessages`
    // shares (the same objects: one list of classified messages built, not two).
    let shortened: Vec<u32> = (0..dropped.len() as u32)
      .filter(|&k| {
        let i = dropped[k as usize] as usize;
        plan.actions().get(i).is_some_and(|a| !matches!(a, Action::Drop))
      })
      .collect();
    let classes = dropped.iter().map(|&i| &trim.classification[i as usize]);
    let dropped_messages = classified_list(env, objects.pick(env, &dropped)?, classes)?;
    let shortened_messages = Objects::Array(&dropped_messages).pick(env, &shortened)?;
    let (summary_source, summary_error) = match settled {
      Some(s) if summary.is_some() => (Some(s.source), s.error),
      _ => (None, None),
    };
    let result = TrimResult {
      messages,
      dropped_messages,
      shortened_messages,
      saved_tokens: saturate(trim.outcome.saved_tokens),
      summary: summary.map(|s| s.text),
      summary_source,
      summary_error,
      over_budget: trim.outcome.over_budget,
      total_tokens: saturate(trim.outcome.total_tokens),
    };
    // SAFETY: `env` is the live env of the current call.
    let raw = unsafe { TrimResult::to_napi_value(env.raw(), result) }?;
    // SAFETY: `raw` was just created in `env`'s current scope.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
  }
}

/// Reads the {@link TrimOptions} of a trimming call into its operation (on messages in the
/// OpenAI format until told otherwise), and the format the options give (`None`: detect it).
/// With `fixed` (a window's encoding and format), counts are in that encoding, and
/// `model`/`encoding`/`format` may only name those.
pub(crate) fn trim_op(
  env: &Env,
  options: Unknown<'_>,
  strategy: Strategy,
  asynchronous: bool,
  fixed: Option<(Encoding, Format)>,
) -> Result<(TrimOp, Option<Format>)> {
  let throw = |e: CoreError| error::throw(env, e);
  // The fields of `TrimOptions` this entry point refuses, left out of an unknown key's error.
  let mut rejected = Vec::new();
  if strategy != Strategy::WithPlaceholders {
    rejected.extend(["placeholder", "keepPlaceholders"]);
  }
  if !asynchronous {
    rejected.push("summarizer");
  }
  let opts: TrimOptions = read_options_except(env, Some(options), "options", &rejected)?;
  let Some(target) = integer_field(opts.target_tokens, "targetTokens").map_err(throw)? else {
    return Err(throw(CoreError::option("targetTokens", "is required")));
  };
  let classify = classify_options(opts.preserve_recent_turns, None, opts.agent_instruction_markers)
    .map_err(throw)?;
  let encoding = Encoding::resolve_within(
    opts.model.as_deref(),
    opts.encoding.as_deref(),
    opts.framing,
    fixed.map(|f| f.0),
  )
  .map_err(throw)?;
  super::model_warning::warn_unknown_model(env, opts.model.as_deref(), opts.encoding.as_deref())?;
  let format = parse_format(opts.format.as_deref()).map_err(throw)?;
  if let Some((_, own)) = fixed {
    check_window_format(own, format).map_err(throw)?;
  }
  let tracker = file_tracker_option(opts.file_tracker).map_err(throw)?;
  let fields = SummaryFields {
    summarize_dropped: opts.summarize_dropped,
    insert_summary: Some(opts.insert_summary),
    max_summary_tokens: opts.max_summary_tokens,
    summarizer: opts.summarizer,
    summarizer_timeout_ms: opts.summarizer_timeout_ms,
  };
  let summary = summary_request(fields, asynchronous).map_err(throw)?;
  if strategy != Strategy::WithPlaceholders {
    let given = [
      ("placeholder", opts.placeholder.is_some()),
      ("keepPlaceholders", opts.keep_placeholders.is_some()),
    ];
    if let Some((name, _)) = given.iter().find(|(_, given)| *given) {
      let detail = "only trimWithPlaceholders makes placeholders (this call cuts and drops): \
        call trimWithPlaceholders, or leave the option out";
      return Err(throw(CoreError::option(*name, detail)));
    }
  }
  let op = TrimOp {
    strategy,
    shape: Shape::TrimResult,
    target,
    classify,
    tracker,
    encoding,
    format: fixed.map(|f| f.1).or(format).unwrap_or_default(),
    summary,
    placeholder: opts.placeholder.as_deref().map(PlaceholderTemplate::new),
    keep_placeholders: opts.keep_placeholders.unwrap_or(false),
    replan_every: replan_every(opts.replan_every, target).map_err(throw)?,
    rolling: None,
    messages: Vec::new(),
  };
  Ok((op, format))
}

/// Reads `replanEvery` (0 when absent): a step of tokens below `target`, which leaves the
/// planned part of the history room.
fn replan_every(value: Option<Unknown<'_>>, target: usize) -> crate::error::Result<usize> {
  let step = match value.filter(|v| !super::options::is_nullish(v)) {
    None => 0,
    Some(v) => {
      let n = super::options::number(&v, "replanEvery")?;
      super::options::integer_option("replanEvery", n, 0.0).map_err(|_| {
        let detail = format!(
          "must be a whole number of tokens of at least 0, got {n}: floor a fraction of \
           targetTokens (Math.floor(targetTokens / 4), for example)"
        );
        CoreError::option("replanEvery", detail)
      })?
    }
  };
  if step > 0 && step >= target {
    let detail = format!(
      "must be below targetTokens ({target}), got {step}: the history up to the last re-plan \
       point is trimmed to targetTokens less this step (a quarter of targetTokens is a good start)"
    );
    return Err(CoreError::option("replanEvery", detail));
  }
  Ok(step)
}

/// The parsed messages when a summarizer may need them after the worker (else nothing).
pub(crate) fn keep_for_summarizer(
  input: &read::JsMessages<'_>,
  summary: Option<&SummaryRequest>,
) -> Vec<std::sync::Arc<super::cache::Cached>> {
  match summary {
    Some(r) if r.summarizer.is_some() => input.messages.clone(),
    _ => Vec::new(),
  }
}

/// The result of {@link enforceContextLimit}, as nanocoder's.
#[napi(object, object_from_js = false)]
pub struct ContextLimitResult<'env> {
  /// The messages to send, in order: kept ones are your own objects, shortened ones copies
  /// (all of them your own when it fits).
  #[napi(ts_type = "Message[]")]
  pub messages: Array<'env>,
  /// Whether the request was over `maxInputTokens` (and so went through trimming).
  pub truncated: bool,
  /// How many messages were removed (shortened ones are not counted).
  pub dropped_count: u32,
  /// The request's tokens before.
  pub original_tokens: u32,
  /// The request's tokens after.
  pub final_tokens: u32,
  /// When `truncated`: the messages removed or shortened, your own objects, in order.
  #[napi(ts_type = "Message[]")]
  pub dropped_messages: Option<Array<'env>>,
}

/// What {@link enforceContextLimit} reports besides the plan.
pub(crate) struct LimitFigures {
  /// The request's tokens before.
  pub original_tokens: usize,
  /// `maxInputTokens`.
  pub target: usize,
}

/// Builds the {@link ContextLimitResult} of a trim.
pub(crate) fn context_limit_result<'env>(
  env: &'env Env,
  outcome: &Outcome,
  messages: Array<'env>,
  objects: Objects<'_, 'env>,
  figures: LimitFigures,
) -> Result<Unknown<'env>> {
  let truncated = figures.original_tokens > figures.target;
  let dropped_messages = match truncated {
    true => {
      let dropped: Vec<u32> =
        outcome.dropped.iter().filter(|&&i| i < objects.len()).map(|&i| i as u32).collect();
      Some(objects.pick(env, &dropped)?)
    }
    false => None,
  };
  let result = ContextLimitResult {
    messages,
    truncated,
    dropped_count: saturate(outcome.plan.dropped().len()),
    original_tokens: saturate(figures.original_tokens),
    final_tokens: saturate(outcome.total_tokens),
    dropped_messages,
  };
  // SAFETY: `env` is the live env of the current call.
  let raw = unsafe { ContextLimitResult::to_napi_value(env.raw(), result) }?;
  // SAFETY: `raw` was just created in `env`'s current scope.
  Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
}

pub(crate) type TruncateOp =
  task::PlanOnly<Box<dyn FnMut(&Conversation<'_>) -> crate::Plan + Send>>;

/// Reads a `config` argument (partial, merged with the defaults) into a truncation and the
/// format it gives (the truncation reads OpenAI messages until told otherwise); with `fixed`
/// (a window's encoding and format), counts are in that encoding (see
/// [`Encoding::resolve_within`]) and a format given must be the window's.
pub(crate) fn truncate_op(
  env: &Env,
  config: Option<Unknown>,
  fixed: Option<(Encoding, Format)>,
) -> Result<(TruncateOp, Option<Format>)> {
  let throw = |e| error::throw(env, e);
  let config: super::options::TruncationConfig = read_options(env, config, "config")?;
  let format = parse_format(config.format.as_deref()).map_err(throw)?;
  if let Some((_, own)) = fixed {
    check_window_format(own, format).map_err(throw)?;
  }
  super::model_warning::warn_unknown_model(
    env,
    config.model.as_deref(),
    config.encoding.as_deref(),
  )?;
  let (config, encoding) = config.normalize_within(fixed.map(|f| f.0)).map_err(throw)?;
  let plan: Box<dyn FnMut(&Conversation<'_>) -> crate::Plan + Send> =
    Box::new(move |conv| rolling::truncate_old_tool_outputs(conv, &config));
  Ok((task::PlanOnly { encoding, format: crate::Format::default(), plan }, format))
}
