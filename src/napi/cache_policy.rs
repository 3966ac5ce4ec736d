//! Cache-aware trimming for JavaScript: the `CacheAwareTrimmer` class and the options it
//! shares with `simulate`.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::error::{js_number, Error as CoreError, Result as CoreResult};
use crate::model::format::Format;
use crate::model::message::quote;
use crate::model::tokens::Encoding;
use crate::strategy::cache_policy::{
  default_clear_at_least, CachePolicy, CachePolicyOptions, PolicyStep, Strategy,
  DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER,
};
use crate::strategy::placeholder::PlaceholderTemplate;
use crate::strategy::roles::MaxContextOptions;

use super::options::{integer_option, parse_format, read_nested_options, Nested};
use super::priority::classify_options;
use super::roles::{MaxContextTokensOptions, ResolvedMaxContextTokensOptions, MAX_CONTEXT_NESTED};
use super::rolling::{ResolvedTruncationConfig, TruncationConfig};
use super::{error, read, saturate, write};

/// The strategy names, in the order error messages list them.
const STRATEGIES: &str = "priority, placeholders, truncate, roles, age";

/// Options of {@link CacheAwareTrimmer} (and of {@link simulate}).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct CacheAwareTrimmerOptions<'env> {
  /// The context window in tokens: what a request (messages and reply priming, as
  /// {@link estimateTokens} counts them) never exceeds. Required.
  pub context_window: Option<f64>,
  /// The fraction of the window above which the strategy re-plans. Up to it, the messages
  /// come back with the same decisions as on the previous call, so that the provider's cache
  /// of the request's prefix stays valid.
  /// @default 0.85
  pub high_water: Option<f64>,
  /// The fraction of the window a re-plan brings the request down to (at most `highWater`).
  /// @default 0.6
  pub low_water: Option<f64>,
  /// The fewest tokens a re-plan must free to be made while the window is not exceeded: below
  /// that the cache write it causes costs more than it saves, and the previous decisions are
  /// kept. Over the window a re-plan is made whatever it frees.
  /// @default 5% of contextWindow, rounded down
  pub clear_at_least: Option<f64>,
  /// What {@link CacheAwareTrimmer.options} reports as `highWaterTokens`, taken back so that
  /// `new CacheAwareTrimmer(trimmer.options)` works: it must be `highWater × contextWindow`,
  /// rounded down (set `highWater` to change it).
  /// @default highWater × contextWindow, rounded down
  pub high_water_tokens: Option<f64>,
  /// What {@link CacheAwareTrimmer.options} reports as `lowWaterTokens`, taken back: it must be
  /// `lowWater × contextWindow`, rounded down (set `lowWater` to change it).
  /// @default lowWater × contextWindow, rounded down
  pub low_water_tokens: Option<f64>,
  /// The strategy that re-plans: `priority` ({@link trimByPriority}), `placeholders`
  /// ({@link trimWithPlaceholders}), `truncate` ({@link truncateOldToolOutputs} with the
  /// largest `maxAge` up to the configured one that reaches the low-water mark), `roles`
  /// ({@link applyMaxContextTokens}) or `age` ({@link trimByAge}). When it cannot bring the
  /// request down to the low-water mark, the oldest messages are dropped as {@link trimByAge}
  /// does, and when what is left (the system messages, the task and the last message's unit)
  /// alone exceeds it, that is cut to head and tail as {@link trimByPriority} cuts it. Whatever
  /// the strategy, a re-plan never drops a system message (with `roles`,
  /// `roles.keepFirstSystem` is `true` and cannot be `false`).
  /// @default 'priority'
  #[napi(ts_type = "'priority' | 'placeholders' | 'truncate' | 'roles' | 'age'")]
  pub strategy: Option<String>,
  /// Whether a re-plan keeps the current task (the user message that opened the current turn)
  /// in every strategy: it is not dropped, and cut only when the system messages, the task
  /// and the last message's unit alone exceed the low-water mark. `false` lets `truncate`,
  /// `roles` and `age` (and the fallback that drops the oldest messages) drop it like any
  /// other message; `priority` and `placeholders` rank it above everything but instructions
  /// either way.
  /// @default true
  pub keep_task: Option<bool>,
  /// `priority` and `placeholders`: see {@link TrimOptions.preserveRecentTurns}.
  /// @default 2
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Unknown<'env>>,
  /// `priority` and `placeholders`: your own agent-instruction markers (see
  /// {@link ClassificationContext}).
  /// @default []
  pub agent_instruction_markers: Option<Vec<String>>,
  /// `placeholders`: the text of every placeholder (see {@link TrimOptions.placeholder}).
  /// @default undefined (the seed's placeholders)
  pub placeholder: Option<String>,
  /// `truncate`: how old and how long tool outputs may be. `model` and `encoding` are set on
  /// these options, not here.
  /// @default DEFAULT_CONFIG
  pub truncation: Option<TruncationConfig>,
  /// `roles`: the drop order and what to keep. `model`, `encoding` and `format` are set on
  /// these options, not here; `keepFirstSystem` is `true` (a re-plan never drops a system
  /// message) and may not be set to `false`.
  /// @default { keepFirstSystem: true } (oldest first)
  pub roles: Option<MaxContextTokensOptions>,
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
  /// The message format (see {@link TokenOptions.format}).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// The options objects inside [`CacheAwareTrimmerOptions`].
pub(super) const CACHE_AWARE_NESTED: &[Nested] = &[
  Nested { name: "truncation", fields: &[] },
  Nested { name: "roles", fields: MAX_CONTEXT_NESTED },
];

/// What {@link CacheAwareTrimmerOptions} come to.
pub(super) struct PolicySetup {
  /// The core options.
  pub options: CachePolicyOptions,
  /// The encoding tokens are counted in.
  pub encoding: Encoding,
  /// The message format (`None` = detect).
  pub format: Option<Format>,
}

impl CacheAwareTrimmerOptions<'_> {
  /// Checks the options and fills in the defaults.
  pub(super) fn normalize(&self) -> CoreResult<PolicySetup> {
    let Some(window) = self.context_window else {
      return Err(CoreError::option("contextWindow", "is required"));
    };
    let context_window = integer_option("contextWindow", window, 1.0)?;
    let clear_at_least = match self.clear_at_least {
      Some(v) => integer_option("clearAtLeast", v, 0.0)?,
      None => default_clear_at_least(context_window),
    };
    let name = self.strategy.as_deref().unwrap_or("priority");
    let misplaced = |option: &str, applies_to: &str| {
      CoreError::option(
        option,
        format!("applies to strategy {applies_to} only, the strategy is {}", quote(name)),
      )
    };
    let classifies = matches!(name, "priority" | "placeholders");
    if !classifies && self.preserve_recent_turns.is_some() {
      return Err(misplaced("preserveRecentTurns", "priority or placeholders"));
    }
    if !classifies && self.agent_instruction_markers.is_some() {
      return Err(misplaced("agentInstructionMarkers", "priority or placeholders"));
    }
    if name != "placeholders" && self.placeholder.is_some() {
      return Err(misplaced("placeholder", "placeholders (truncate takes truncation.placeholder)"));
    }
    if name != "truncate" && self.truncation.is_some() {
      return Err(misplaced("truncation", "truncate"));
    }
    if name != "roles" && self.roles.is_some() {
      return Err(misplaced("roles", "roles"));
    }
    let classify =
      || classify_options(self.preserve_recent_turns, None, self.agent_instruction_markers.clone());
    let strategy = match name {
      "priority" => Strategy::Priority(classify()?),
      "placeholders" => Strategy::Placeholders(
        classify()?,
        self.placeholder.as_deref().map(PlaceholderTemplate::new),
      ),
      "truncate" => match &self.truncation {
        None => Strategy::Truncate(Default::default()),
        Some(c) => {
          let fields = [("model", &c.model), ("encoding", &c.encoding), ("format", &c.format)];
          set_on_the_options("truncation", &fields)?;
          framing_on_the_options("truncation", c.framing)?;
          Strategy::Truncate(c.normalize()?.0)
        }
      },
      "roles" => match &self.roles {
        None => {
          Strategy::Roles(MaxContextOptions { keep_first_system: true, ..Default::default() })
        }
        Some(r) => {
          let fields = [("model", &r.model), ("encoding", &r.encoding), ("format", &r.format)];
          set_on_the_options("roles", &fields)?;
          framing_on_the_options("roles", r.framing)?;
          if r.keep_first_system == Some(false) {
            return Err(CoreError::option(
              "roles.keepFirstSystem",
              "cannot be false here: a CacheAwareTrimmer never drops a system message; leave it out (applyMaxContextTokens takes it, to trim once without the trimmer)",
            ));
          }
          Strategy::Roles(MaxContextOptions { keep_first_system: true, ..r.normalize()?.0 })
        }
      },
      "age" => Strategy::Age,
      other => {
        return Err(CoreError::option(
          "strategy",
          format!("must be one of {STRATEGIES}, got {}", quote(other)),
        ))
      }
    };
    let options = CachePolicyOptions {
      context_window,
      high_water: self.high_water.unwrap_or(DEFAULT_HIGH_WATER),
      low_water: self.low_water.unwrap_or(DEFAULT_LOW_WATER),
      clear_at_least,
      strategy,
      keep_task: self.keep_task.unwrap_or(true),
    };
    options.validate()?;
    computed("highWaterTokens", self.high_water_tokens, options.high_tokens(), "highWater")?;
    computed("lowWaterTokens", self.low_water_tokens, options.low_tokens(), "lowWater")?;
    Ok(PolicySetup {
      options,
      encoding: Encoding::resolve(self.model.as_deref(), self.encoding.as_deref())?
        .with_framing(self.framing),
      format: parse_format(self.format.as_deref())?,
    })
  }
}

/// A field the options compute (`highWaterTokens` from `highWater`), given back as
/// {@link CacheAwareTrimmer.options} reports it: accepted when it is what they compute.
fn computed(name: &str, given: Option<f64>, computes: usize, from: &str) -> CoreResult<()> {
  match given {
    Some(v) if v != computes as f64 => Err(CoreError::option(
      name,
      format!(
        "must be {from} × contextWindow rounded down ({computes} here) or left out, got {}; set {from} to move the mark",
        js_number(v)
      ),
    )),
    _ => Ok(()),
  }
}

/// Refuses the fields of a nested option object (`truncation`, `roles`) that are set on the
/// options themselves (`model`, `encoding`, `format`).
fn set_on_the_options(nested: &str, fields: &[(&str, &Option<String>)]) -> CoreResult<()> {
  match fields.iter().find(|(_, value)| value.is_some()) {
    Some((field, _)) => Err(CoreError::option(
      format!("{nested}.{field}"),
      "cannot be set here: set it on the options themselves",
    )),
    None => Ok(()),
  }
}

/// [`set_on_the_options`] for the `framing` field of a nested options object.
fn framing_on_the_options(nested: &str, framing: Option<bool>) -> CoreResult<()> {
  match framing {
    Some(_) => Err(CoreError::option(
      format!("{nested}.framing"),
      "cannot be set here: set it on the options themselves",
    )),
    None => Ok(()),
  }
}

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
    super::model_warning::warn_unknown_model(
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
      super::task::on_kept_conversation(env, &input, self.encoding, |conv| inner.step(conv))?;
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
