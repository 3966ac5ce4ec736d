//! Cache-aware trimming for JavaScript: the `CacheAwareTrimmer` class and the options it
//! shares with `simulate`.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::model::format::Format;
use crate::model::tokens::Encoding;
use crate::strategy::cache_policy::{CachePolicy, CachePolicyOptions, PolicyStep, Strategy};
use crate::strategy::placeholder::PlaceholderTemplate;

use crate::napi::base::options::read_nested_options;
use crate::napi::base::options::ResolvedMaxContextTokensOptions;
use crate::napi::base::options::ResolvedTruncationConfig;
use crate::napi::base::options::{CacheAwareTrimmerOptions, CACHE_AWARE_NESTED};
use crate::napi::base::{error, read, saturate, write};

/// The options a {@link CacheAwareTrimmer} runs with, every default filled in:
/// `new CacheAwareTrimmer(trimmer.options)` makes a trimmer that decides as this one does.
#[napi(object, object_from_js = false)]
pub struct ResolvedCacheAwareOptions<'a> {
  /// The context window in tokens.
  pub context_window: u32,
  /// The high-water mark, a fraction of the window.
  pub high_water: f64,
  /// The low-water mark, a fraction of the window.
  pub low_water: f64,
  /// The fewest tokens a re-plan frees while the window is not exceeded.
  pub clear_at_least: u32,
  /// The high-water mark in tokens (`highWater × contextWindow`, rounded down).
  pub high_water_tokens: u32,
  /// The low-water mark in tokens (`lowWater × contextWindow`, rounded down).
  pub low_water_tokens: u32,
  /// The strategy that re-plans.
  #[napi(ts_type = "'priority' | 'placeholders' | 'truncate' | 'roles' | 'age'")]
  pub strategy: String,
  /// Whether a re-plan keeps the current task in every strategy.
  pub keep_task: bool,
  /// `priority` and `placeholders` only: the turns kept as recent.
  pub preserve_recent_turns: Option<u32>,
  /// `priority` and `placeholders` only: the app's own agent-instruction markers.
  pub agent_instruction_markers: Option<Vec<String>>,
  /// `placeholders` only, when one was given: the text of every placeholder.
  pub placeholder: Option<&'a str>,
  /// `truncate` only: how old and how long tool outputs may be.
  #[napi(ts_type = "ResolvedTruncationConfig")]
  pub truncation: Option<ResolvedTruncationConfig<'a>>,
  /// `roles` only: the drop order and what is kept.
  pub roles: Option<ResolvedMaxContextTokensOptions>,
  /// The encoding tokens are counted in.
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: &'static str,
  /// Whether requests are counted with the chat framing.
  pub framing: bool,
  /// The message format (`auto`: detected on every call).
  #[napi(ts_type = "MessageFormat")]
  pub format: &'static str,
}

impl<'a> ResolvedCacheAwareOptions<'a> {
  fn new(o: &'a CachePolicyOptions, encoding: Encoding, format: Option<Format>) -> Self {
    let (classify, placeholder) = match &o.strategy {
      Strategy::Priority(c) => (Some(c), None),
      Strategy::Placeholders(c, p) => (Some(c), p.as_ref().map(PlaceholderTemplate::as_str)),
      _ => (None, None),
    };
    ResolvedCacheAwareOptions {
      context_window: saturate(o.context_window),
      high_water: o.high_water,
      low_water: o.low_water,
      clear_at_least: saturate(o.clear_at_least),
      high_water_tokens: saturate(o.high_tokens()),
      low_water_tokens: saturate(o.low_tokens()),
      strategy: o.strategy.name().to_string(),
      keep_task: o.keep_task,
      preserve_recent_turns: classify.map(|c| saturate(c.preserve_recent_turns)),
      agent_instruction_markers: classify.map(|c| c.agent_markers.clone()),
      placeholder,
      truncation: match &o.strategy {
        Strategy::Truncate(c) => Some(ResolvedTruncationConfig::from(c)),
        _ => None,
      },
      roles: match &o.strategy {
        Strategy::Roles(r) => Some(ResolvedMaxContextTokensOptions::from(r)),
        _ => None,
      },
      encoding: encoding.as_str(),
      framing: encoding.framed(),
      format: format.map_or("auto", Format::as_str),
    }
  }
}

/// What {@link CacheAwareTrimmer.trim} returns.
#[napi(object, object_from_js = false)]
pub struct CacheAwareTrimResult<'env> {
  /// The messages to send, in order: kept ones are your own objects, placeholders are copies.
  /// Unless `decision` is `trimmed` or `forced`, the messages returned by the previous call
  /// come back first, the same objects and copies with the same content.
  #[napi(ts_type = "AnyMessage[]")]
  pub messages: Array<'env>,
  /// `kept`: at most the high-water mark, the previous decisions applied to the new messages.
  /// `trimmed`: over it, re-planned down to the low-water mark. `deferred`: over it, but a
  /// re-plan would free less than `clearAtLeast` and the window is not exceeded: the previous
  /// decisions. `forced`: over the window, re-planned whatever it frees.
  #[napi(ts_type = "'kept' | 'trimmed' | 'deferred' | 'forced'")]
  pub decision: String,
  /// Whether the remembered decisions were forgotten because the history changed: a message
  /// seen before is gone or different (compared by what context-trim reads from it).
  pub reset: bool,
  /// The tokens of the whole conversation given.
  pub input_tokens: u32,
  /// The tokens with the previous decisions applied, before any re-plan.
  pub estimate_tokens: u32,
  /// The tokens of the returned messages.
  pub total_tokens: u32,
  /// What a re-plan freed: `estimateTokens − totalTokens` (0 without one).
  pub freed_tokens: u32,
  /// Whether `totalTokens` is still over the window: only when the system messages, the task
  /// and the last message (with its tool call) exceed it even cut to their markers.
  pub over_window: bool,
  /// The indices, in the messages given, of those not sent (ascending): what the decisions in
  /// force drop, a re-plan's or an earlier one's.
  pub dropped: Uint32Array,
  /// The indices, in the messages given, of those sent shortened (a placeholder or a cut to
  /// head and tail, a copy), ascending.
  pub shortened: Uint32Array,
}

/// Trims a growing conversation so that the provider's prompt cache stays warm: the same
/// decisions every call (dropped messages stay dropped, placeholders keep their exact text) so
/// the request's prefix is byte-stable, and a re-plan only when the request crosses the
/// high-water mark, down to the low-water mark, if that frees at least `clearAtLeast` tokens.
/// The window is never exceeded. See docs/prompt-caching-policy.md.
///
/// ```ts
/// const trimmer = new CacheAwareTrimmer({ contextWindow: 200_000 })
/// // before every model call:
/// const { messages: sent } = trimmer.trim(history)
/// ```
#[napi]
pub struct CacheAwareTrimmer {
  inner: CachePolicy,
  encoding: Encoding,
  format: Option<Format>,
}

#[napi]
impl CacheAwareTrimmer {
  /// A trimmer with no decisions yet.
  #[napi(constructor, catch_unwind, ts_args_type = "options: CacheAwareTrimmerOptions")]
  pub fn new(env: &Env, options: Unknown) -> Result<Self> {
    let options: CacheAwareTrimmerOptions =
      read_nested_options(env, Some(options), "options", CACHE_AWARE_NESTED)?;
    crate::napi::base::model_warning::warn_unknown_model(
      env,
      options.model.as_deref(),
      options.encoding.as_deref(),
    )?;
    let setup = options.normalize().map_err(|e| error::throw(env, e))?;
    let inner = CachePolicy::new(setup.options).map_err(|e| error::throw(env, e))?;
    Ok(CacheAwareTrimmer { inner, encoding: setup.encoding, format: setup.format })
  }

  /// The messages to send for `messages`, the whole conversation so far, and what was
  /// decided. Call it before every model call with the same, growing history.
  #[napi(
    catch_unwind,
    ts_generic_types = "M extends AnyMessageInput",
    ts_args_type = "messages: M[]",
    ts_return_type = "CacheAwareTrimResult & { messages: M[] }"
  )]
  pub fn trim<'env>(
    &mut self,
    env: &'env Env,
    messages: Unknown<'env>,
  ) -> Result<CacheAwareTrimResult<'env>> {
    let input = read::read_messages_in(env, messages, self.format)?;
    let inner = &mut self.inner;
    let step: PolicyStep =
      crate::napi::base::task::on_kept_conversation(env, &input, self.encoding, |conv| {
        inner.step(conv)
      })?;
    Ok(CacheAwareTrimResult {
      messages: write::apply_plan(env, &input, &step.plan)?,
      decision: step.decision.as_str().to_string(),
      reset: step.reset,
      input_tokens: saturate(step.input_tokens),
      estimate_tokens: saturate(step.estimate_tokens),
      total_tokens: saturate(step.total_tokens),
      freed_tokens: saturate(step.freed_tokens),
      over_window: step.over_window,
      dropped: Uint32Array::new(step.plan.dropped().into_iter().map(saturate).collect()),
      shortened: Uint32Array::new(step.plan.replaced().into_iter().map(saturate).collect()),
    })
  }

  /// Forgets every decision: the next call starts afresh (as with a new trimmer).
  #[napi(catch_unwind)]
  pub fn reset(&mut self) {
    self.inner.reset();
  }

  /// How many messages the trimmer remembers decisions for (the length of the last
  /// conversation given).
  #[napi(getter, catch_unwind)]
  pub fn remembered(&self) -> u32 {
    saturate(self.inner.remembered())
  }

  /// The options in use, every default filled in.
  #[napi(getter, catch_unwind)]
  pub fn options(&self) -> ResolvedCacheAwareOptions<'_> {
    ResolvedCacheAwareOptions::new(self.inner.options(), self.encoding, self.format)
  }
}
