//! The cost simulator for JavaScript: `simulate` and `simulateAsync`.

use napi::bindgen_prelude::*;

use crate::napi::base::write::Objects;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::error::{Error as CoreError, Result as CoreResult};
use crate::model::format::Format;
use crate::model::message::quote;
use crate::model::message::Message;
use crate::simulate::{self as core, PolicyKind, Pricing, SimulateOptions as CoreOptions};

use crate::napi::base::options::{check_nested_options, integer_option, read_options_pair};
use crate::napi::base::options::{CacheAwareTrimmerOptions, CACHE_AWARE_NESTED};
use crate::napi::base::{error, read, saturate, task};

/// Prompt-cache prices in US dollars per million input tokens.
#[napi(object)]
pub struct PricingTable {
  /// An input token without caching (what `costWithoutCache` uses).
  pub input: f64,
  /// An input token read from the cache.
  pub cache_read: f64,
  /// An input token not read from the cache: written to it (Anthropic: 1.25× input) or just
  /// processed (OpenAI: the input price).
  pub cache_write: f64,
}

impl From<Pricing> for PricingTable {
  fn from(p: Pricing) -> Self {
    PricingTable { input: p.input, cache_read: p.cache_read, cache_write: p.cache_write }
  }
}

/// The options of {@link simulate} besides those of {@link CacheAwareTrimmerOptions} (the window,
/// the water marks and the strategy, which `every-turn` uses too).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct SimulateOptions<'env> {
  /// The prices: `anthropic` (Claude Sonnet 4: $3 input, cache reads 0.1×, cache writes 1.25×),
  /// `openai` (gpt-4o: $2.50 input, cached input 0.5×, no write surcharge), or your own table.
  /// @default 'anthropic'
  #[napi(ts_type = "'anthropic' | 'openai' | PricingTable")]
  pub pricing: Option<Unknown<'env>>,
  /// The budget the `every-turn` policy trims to on every turn (at most `contextWindow`).
  /// @default contextWindow
  pub every_turn_budget: Option<f64>,
  /// The policies to replay, in this order: `none` (everything sent, turns over the window
  /// marked), `every-turn` (the strategy trims to `everyTurnBudget` on every turn),
  /// `high-low` (a {@link CacheAwareTrimmer}), `dedup` (only {@link deduplicateToolResults},
  /// from 75% of the window; turns over the window marked).
  /// @default ['none', 'every-turn', 'high-low', 'dedup']
  #[napi(ts_type = "Array<'none' | 'every-turn' | 'high-low' | 'dedup'>")]
  pub policies: Option<Vec<String>>,
}

/// One simulated model call.
#[napi(object, object_from_js = false)]
pub struct SimulatedTurn {
  /// The index of the reply (the assistant message) in the session: the request is every
  /// message before it.
  pub reply_index: u32,
  /// The messages sent.
  pub messages: u32,
  /// The tokens sent (messages and reply priming).
  pub input_tokens: u32,
  /// The tokens read from the cache: the leading messages sent identically by the previous
  /// call.
  pub cached_tokens: u32,
  /// The other tokens, processed in full (and written to the cache).
  pub written_tokens: u32,
  /// The call's cost in dollars.
  pub cost: f64,
  /// The cost of every call so far, this one included.
  pub cumulative_cost: f64,
  /// Whether the request is over the window (it would be refused).
  pub over_window: bool,
  /// `high-low` only: what the trimmer did.
  #[napi(ts_type = "'kept' | 'trimmed' | 'deferred' | 'forced'")]
  pub decision: Option<String>,
}

/// The sums over every turn of one policy.
#[napi(object, object_from_js = false)]
pub struct SimulationTotals {
  /// Tokens sent.
  pub input_tokens: f64,
  /// Tokens read from the cache.
  pub cached_tokens: f64,
  /// Tokens not read from the cache.
  pub written_tokens: f64,
  /// `cachedTokens / inputTokens`.
  pub cached_fraction: f64,
  /// The cost in dollars.
  pub cost: f64,
  /// What the same requests would cost without a cache.
  pub cost_without_cache: f64,
  /// Turns whose request is over the window.
  pub over_window_turns: u32,
  /// Turns whose request was re-planned: for `high-low` a trim (`trimmed` or `forced`), for
  /// the others a request that is not the whole conversation.
  pub replans: u32,
  /// The largest request in tokens.
  pub max_input_tokens: u32,
}

/// One policy replayed over the session.
#[napi(object, object_from_js = false)]
pub struct SimulatedPolicy {
  /// The policy.
  #[napi(ts_type = "'none' | 'every-turn' | 'high-low' | 'dedup'")]
  pub policy: String,
  /// Every turn, in order.
  pub turns: Vec<SimulatedTurn>,
  /// Their sums.
  pub totals: SimulationTotals,
}

/// What {@link simulate} returns.
#[napi(object, object_from_js = false)]
pub struct SimulationResult {
  /// The number of turns (assistant messages with a message before them).
  pub turns: u32,
  /// The context window.
  pub context_window: u32,
  /// The prices used.
  pub pricing: PricingTable,
  /// The strategy of `every-turn` and `high-low`.
  #[napi(ts_type = "'priority' | 'placeholders' | 'truncate' | 'roles' | 'age'")]
  pub strategy: String,
  /// One entry per policy, in the order asked.
  pub policies: Vec<SimulatedPolicy>,
}

/// Replays a session turn by turn (each assistant message is the reply to every message
/// before it) under several trimming policies, and prices every request with a provider's
/// prompt-cache rates: tokens sent, tokens read from the cache (the leading messages the
/// previous request sent identically), tokens written, and the cost. See
/// docs/prompt-caching-policy.md for the cache model and its limits.
///
/// ```ts
/// const { policies } = simulate(session, { contextWindow: 128_000, pricing: 'anthropic' })
/// for (const p of policies) console.log(p.policy, p.totals.cost, p.totals.cachedFraction)
/// ```
#[napi(
  catch_unwind,
  ts_args_type = "messages: AnyMessageInput[], options: CacheAwareTrimmerOptions & SimulateOptions"
)]
pub fn simulate(env: &Env, messages: Unknown, options: Unknown) -> Result<SimulationResult> {
  let (input, op) = prepare(env, messages, options)?;
  let refs = input.refs();
  let output = op.compute(&refs);
  output.map_err(|e| error::throw(env, e))
}

/// {@link simulate} on the libuv thread pool: the Promise resolves to the same result.
#[napi(
  catch_unwind,
  ts_args_type = "messages: AnyMessageInput[], options: CacheAwareTrimmerOptions & SimulateOptions",
  ts_return_type = "Promise<SimulationResult>"
)]
pub fn simulate_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(env, prepare(env, messages, options))
}

/// The simulation as a task: computed anywhere, converted on the JS thread.
pub struct SimulateOp {
  options: CoreOptions,
}

impl SimulateOp {
  fn compute(&self, messages: &[&Message]) -> CoreResult<SimulationResult> {
    let sim = core::simulate(messages, &self.options)?;
    Ok(result(sim, &self.options, core::turn_ends(messages).len()))
  }
}

impl task::Operation for SimulateOp {
  type Output = CoreResult<SimulationResult>;

  fn compute(&mut self, messages: &[&Message], _kept: Option<task::Kept<'_>>) -> Self::Output {
    SimulateOp::compute(self, messages)
  }

  fn to_js<'env>(
    &mut self,
    env: &'env Env,
    output: Self::Output,
    _objects: Objects<'_, 'env>,
    _format: Format,
  ) -> Result<Unknown<'env>> {
    let value = output.map_err(|e| error::throw(env, e))?;
    // SAFETY: `env` is the live env of the current call.
    let raw = unsafe { SimulationResult::to_napi_value(env.raw(), value)? };
    // SAFETY: `raw` was just created in this env's current handle scope.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
  }
}

fn prepare<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<(read::JsMessages<'env>, SimulateOp)> {
  let throw = |e: CoreError| error::throw(env, e);
  check_nested_options(env, Some(&options), "options", CACHE_AWARE_NESTED)?;
  let (policy, extra): (CacheAwareTrimmerOptions, SimulateOptions) =
    read_options_pair(env, Some(options), "options")?;
  crate::napi::base::model_warning::warn_unknown_model(
    env,
    policy.model.as_deref(),
    policy.encoding.as_deref(),
  )?;
  let setup = policy.normalize().map_err(throw)?;
  let pricing = pricing(extra.pricing).map_err(throw)?;
  let window = setup.options.context_window;
  let every_turn_budget = match extra.every_turn_budget {
    Some(v) => integer_option("everyTurnBudget", v, 1.0).map_err(throw)?,
    None => window,
  };
  let policies = match &extra.policies {
    Some(names) => policy_kinds(names).map_err(throw)?,
    None => PolicyKind::ALL.to_vec(),
  };
  let input = read::read_messages_in(env, messages, setup.format)?;
  let options = CoreOptions {
    policy: setup.options,
    every_turn_budget,
    pricing,
    policies,
    encoding: setup.encoding,
    format: input.format,
  };
  Ok((input, SimulateOp { options }))
}

/// Reads `policies`: known names, each once.
fn policy_kinds(names: &[String]) -> CoreResult<Vec<PolicyKind>> {
  let mut kinds = Vec::with_capacity(names.len());
  for (k, name) in names.iter().enumerate() {
    let kind = PolicyKind::parse(name, &format!("policies[{k}]"))?;
    if kinds.contains(&kind) {
      return Err(CoreError::option("policies", format!("lists {} twice", quote(name))));
    }
    kinds.push(kind);
  }
  Ok(kinds)
}

/// Reads `pricing`: a shipped table's name or a table.
fn pricing(value: Option<Unknown<'_>>) -> CoreResult<Pricing> {
  let Some(value) = value else { return Ok(Pricing::ANTHROPIC) };
  let pricing = match value.get_type() {
    Ok(ValueType::Undefined | ValueType::Null) => Pricing::ANTHROPIC,
    Ok(ValueType::String) => Pricing::preset(&read::string_argument(&value, "pricing")?)?,
    Ok(ValueType::Object) if !value.is_array().unwrap_or(true) => {
      let table = PricingTable::from_unknown(value).map_err(|e| {
        CoreError::option("pricing", format!("must be a price table: {}", e.reason))
      })?;
      Pricing { input: table.input, cache_read: table.cache_read, cache_write: table.cache_write }
    }
    _ => {
      return Err(CoreError::option(
        "pricing",
        format!("must be anthropic, openai or a price table, got {}", read::js_type_name(&value)),
      ))
    }
  };
  pricing.validate()?;
  Ok(pricing)
}

fn result(sim: core::Simulation, options: &CoreOptions, turns: usize) -> SimulationResult {
  let policies = sim
    .runs
    .into_iter()
    .map(|run| SimulatedPolicy {
      policy: run.kind.as_str().to_string(),
      turns: run
        .turns
        .iter()
        .map(|t| SimulatedTurn {
          reply_index: saturate(t.reply),
          messages: saturate(t.messages),
          input_tokens: saturate(t.input_tokens),
          cached_tokens: saturate(t.cached_tokens),
          written_tokens: saturate(t.written_tokens),
          cost: t.cost,
          cumulative_cost: t.cumulative_cost,
          over_window: t.over_window,
          decision: t.decision.map(|d| d.as_str().to_string()),
        })
        .collect(),
      totals: SimulationTotals {
        input_tokens: run.totals.input_tokens as f64,
        cached_tokens: run.totals.cached_tokens as f64,
        written_tokens: run.totals.written_tokens as f64,
        cached_fraction: run.totals.cached_fraction(),
        cost: run.totals.cost,
        cost_without_cache: run.totals.cost_without_cache,
        over_window_turns: saturate(run.totals.over_window_turns),
        replans: saturate(run.totals.replans),
        max_input_tokens: saturate(run.totals.max_input_tokens),
      },
    })
    .collect();
  SimulationResult {
    turns: saturate(turns),
    context_window: saturate(options.policy.context_window),
    pricing: options.pricing.into(),
    strategy: options.policy.strategy.name().to_string(),
    policies,
  }
}
