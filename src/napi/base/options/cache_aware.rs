//! The cache-aware trimmer's options ({@link CacheAwareTrimmerOptions}), shared by
//! `CacheAwareTrimmer` and `simulate`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::error::{js_number, Error as CoreError, Result as CoreResult};
use crate::model::format::Format;
use crate::model::message::quote;
use crate::model::tokens::Encoding;
use crate::strategy::cache_policy::{
  default_clear_at_least, CachePolicyOptions, Strategy, DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER,
};
use crate::strategy::placeholder::PlaceholderTemplate;
use crate::strategy::roles::MaxContextOptions;

use super::max_context::{MaxContextTokensOptions, MAX_CONTEXT_NESTED};
use super::truncation::TruncationConfig;
use super::{classify_options, integer_option, parse_format, Nested};

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
pub(crate) const CACHE_AWARE_NESTED: &[Nested] = &[
  Nested { name: "truncation", fields: &[] },
  Nested { name: "roles", fields: MAX_CONTEXT_NESTED },
];

/// What {@link CacheAwareTrimmerOptions} come to.
pub(crate) struct PolicySetup {
  /// The core options.
  pub options: CachePolicyOptions,
  /// The encoding tokens are counted in.
  pub encoding: Encoding,
  /// The message format (`None` = detect).
  pub format: Option<Format>,
}

impl CacheAwareTrimmerOptions<'_> {
  /// Checks the options and fills in the defaults.
  pub(crate) fn normalize(&self) -> CoreResult<PolicySetup> {
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
