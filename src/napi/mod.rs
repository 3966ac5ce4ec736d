//! The Node.js binding: the only module that knows napi. Each entry point reads its arguments
//! into core types, calls the core, and converts the result back.

/// See Cargo.toml for why mimalloc, and why on Linux only.
#[cfg(target_os = "linux")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod age;
mod cache_policy;
mod classify;
mod clock;
mod conversation;
mod dedup;
mod error;
mod file_tracker;
mod instance;
mod json;
mod model_warning;
mod options;
mod prefix_summary;
mod priority;
mod pruner;
mod read;
mod roles;
mod rolling;
mod simulate;
mod strings;
mod summary;
mod task;
mod validate;
mod window;
mod write;

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::error::{Error as CoreError, ErrorKind};
use crate::model::conversation::Conversation;
use crate::model::tokens;

pub use options::*;

/// Counts the tokens of `text` exactly as OpenAI models do (tiktoken encodings), or estimates
/// them with `encoding: 'approximate'` (one token per four characters).
///
/// ```ts
/// countTokens('hello world') // 2
/// countTokens('hello world', { model: 'gpt-4' }) // cl100k_base
/// ```
#[napi(catch_unwind, ts_args_type = "text: string, options?: TokenOptions")]
pub fn count_tokens(env: &Env, text: Unknown, options: Option<Unknown>) -> Result<u32> {
  let text = read::string_argument(&text, "text").map_err(|e| error::throw(env, e))?;
  let encoding = token_encoding(env, options)?;
  Ok(saturate(tokens::count_tokens(&text, encoding)))
}

/// Estimates the tokens of one message: content, name, tool calls and the per-message
/// framing of the OpenAI cookbook (3 per message, 1 per name, 1 per tool call). With
/// `framing: false`, its content, tool-call names and arguments only. An image counts by the
/// pixel size in its data's header at its format's provider's rate (OpenAI's tiles, Anthropic's
/// w×h/750), audio by its duration, a part of an unknown type by its JSON text (see
/// docs/formats.md). A message without `content` and without tool calls is an
/// `INVALID_MESSAGE` error.
#[napi(catch_unwind, ts_args_type = "message: AnyMessageInput, options?: TokenOptions")]
pub fn estimate_message_tokens(
  env: &Env,
  message: Unknown,
  options: Option<Unknown>,
) -> Result<u32> {
  let (encoding, format) = token_options(env, options)?;
  let (_, message) = read::read_message(env, message, format)?;
  Ok(saturate(tokens::message_tokens(&message, encoding)))
}

/// Estimates the tokens of a whole request: every message plus 3 tokens of reply priming (none
/// with `framing: false`). Images, audio and unknown parts count as in
/// {@link estimateMessageTokens}.
#[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[], options?: TokenOptions")]
pub fn estimate_tokens(env: &Env, messages: Unknown, options: Option<Unknown>) -> Result<u32> {
  let (encoding, format) = token_options(env, options)?;
  let input = read::read_messages_in(env, messages, format)?;
  // The total alone: the kept layout's sum, without the analysis the strategies read.
  let layout = instance::instance(env)?.layout.layout(&input.messages, encoding);
  Ok(saturate(layout.total_tokens(encoding)))
}

/// Counts the steps of a conversation: assistant messages with tool calls.
#[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[]")]
pub fn count_steps(env: &Env, messages: Unknown) -> Result<u32> {
  let input = read::read_messages(env, messages)?;
  Ok(saturate(input.messages.iter().filter(|c| c.message.has_tool_calls()).count()))
}

/// A message with the step it belongs to.
#[napi(object, object_from_js = false)]
pub struct TaggedMessage<'env> {
  /// The caller's message object, unchanged.
  #[napi(ts_type = "Message")]
  pub message: Object<'env>,
  /// Its step: the number of assistant messages with tool calls up to and including it; a tool
  /// result has the step of the call it answers.
  pub step: u32,
}

/// Tags every message with its step (see {@link countSteps}).
#[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[]")]
pub fn tag_messages_with_step<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
) -> Result<Vec<TaggedMessage<'env>>> {
  let input = read::read_messages(env, messages)?;
  let steps: Vec<u32> = {
    let conv =
      Conversation::with_tokens(input.refs(), Default::default(), vec![0; input.messages.len()]);
    conv.steps().iter().map(|&s| saturate(s)).collect()
  };
  Ok(
    input
      .objects()?
      .into_iter()
      .zip(steps)
      .map(|(message, step)| TaggedMessage { message, step })
      .collect(),
  )
}

/// Statistics of the process-wide token-count cache.
#[napi(object, object_from_js = false)]
pub struct TokenCacheStats {
  /// Counts currently held.
  pub entries: u32,
  /// The bound on `entries`.
  pub capacity: u32,
  /// Lookups answered from the cache since the last reset.
  pub hits: f64,
  /// Lookups that had to tokenise since the last reset.
  pub misses: f64,
}

/// The token-count cache's statistics. Texts of 256 bytes or more are cached by a hash of
/// their bytes, so unchanged messages are not re-tokenised on later calls.
#[napi(catch_unwind)]
pub fn token_cache_stats() -> TokenCacheStats {
  let s = tokens::cache_stats();
  TokenCacheStats {
    entries: saturate(s.entries),
    capacity: saturate(s.capacity),
    hits: s.hits as f64,
    misses: s.misses as f64,
  }
}

/// Sets the bound of the token-count cache (entries, about 24 bytes each; 0 disables it) and
/// empties it. The default is 100,000.
#[napi(catch_unwind)]
pub fn set_token_cache_capacity(env: &Env, capacity: f64) -> Result<()> {
  tokens::set_cache_capacity(capacity_argument(env, capacity)?);
  Ok(())
}

fn token_encoding(env: &Env, options: Option<Unknown>) -> Result<crate::model::tokens::Encoding> {
  Ok(token_options(env, options)?.0)
}

fn token_options(
  env: &Env,
  options: Option<Unknown>,
) -> Result<(crate::model::tokens::Encoding, Option<crate::Format>)> {
  let options: TokenOptions = read_options(env, options, "options")?;
  let encoding = options.encoding().map_err(|e| error::throw(env, e))?;
  model_warning::warn_unknown_model(env, options.model.as_deref(), options.encoding.as_deref())?;
  let format = options.format().map_err(|e| error::throw(env, e))?;
  Ok((encoding, format))
}

fn saturate(n: usize) -> u32 {
  u32::try_from(n).unwrap_or(u32::MAX)
}

/// The environment variable that keeps [`panic_for_tests`] on the native binding when it is `1`
/// in the process's environment at load time.
const TEST_PANIC_VARIABLE: &str = "CONTEXT_TRIM_TEST_PANIC";

/// A panic inside a `catch_unwind` entry point, for `__test__/no-panic.spec.ts` to prove that it
/// becomes a JavaScript `Error` and the process lives on. Not part of the API: `skip_typescript`
/// keeps it out of `index.d.ts`, and [`hide_test_hook`] removes it from the exports unless the
/// process was started with `CONTEXT_TRIM_TEST_PANIC=1`, as the test's child process is.
#[napi(catch_unwind, skip_typescript, js_name = "panicForTests")]
pub fn panic_for_tests() -> Result<()> {
  panic!("context-trim test panic");
}

/// Runs when the module is registered in an environment, after every function was added to
/// `exports`: takes the test hook away again unless its variable is set.
#[napi(module_exports)]
pub fn hide_test_hook(mut exports: Object) -> Result<()> {
  if std::env::var(TEST_PANIC_VARIABLE).as_deref() != Ok("1") {
    exports.delete_named_property("panicForTests")?;
  }
  Ok(())
}

/// Statistics of the message cache (see {@link setMessageCacheCapacity}).
#[napi(object, object_from_js = false)]
pub struct MessageCacheStats {
  /// Parsed messages currently held.
  pub entries: u32,
  /// The bound on `entries`.
  pub capacity: u32,
  /// The estimated bytes the parsed messages held take: the bytes of their text and fields,
  /// with a fixed allowance per message, part and call. The process's memory for them, values
  /// derived from them later included, is about twice this (see docs/robustness.md).
  pub bytes: f64,
  /// The bound on `bytes`. A message estimated at more than 7/16 of it (half the main part)
  /// is not kept.
  pub max_bytes: f64,
  /// Messages taken from the cache since the last reset.
  pub hits: f64,
  /// Messages read afresh since the last reset.
  pub misses: f64,
  /// Messages of JSON bodies ({@link trimByPriorityJson}) currently held, found by their
  /// text. They have their own bounds, equal to this cache's (`capacity`, `maxBytes`), with
  /// the same probation share for texts seen once.
  pub body_entries: u32,
  /// The estimated bytes those take: each message's text and its parsed form.
  pub body_bytes: f64,
  /// Messages of JSON bodies found by their text since the last reset.
  pub body_hits: f64,
  /// Messages of JSON bodies parsed afresh since the last reset.
  pub body_misses: f64,
  /// Messages of JSON bodies found in place since the last reset: the leading messages a body
  /// shares, byte for byte, with one of the last few bodies (the previous request of the same
  /// conversation), taken without scanning, hashing or comparing them one by one. Not counted
  /// in `bodyHits`.
  pub recent_body_hits: f64,
  /// JSON bodies outlined for that (at most 4, the most recent): each holds a copy of its text
  /// and its parsed messages, whether or not the bounds above still hold them. A body over an
  /// eighth of `maxBytes` is not outlined.
  pub recent_bodies: u32,
  /// The bytes of their texts.
  pub recent_body_bytes: f64,
  /// Parsed messages currently findable by their content: a new object equal to a message
  /// read before (a server parsing every request afresh gets one for every message it saw)
  /// shares its parse and everything derived from it (token counts, file facts, cuts), so only
  /// the reading is paid again. They have their own bounds, equal to this cache's, with the
  /// same probation share for content seen once; they share the parsed messages with
  /// `entries`, so the memory they add is what `entries` no longer holds.
  pub content_entries: u32,
  /// The estimated bytes of the messages findable by content.
  pub content_bytes: f64,
  /// Messages of new objects found by their content since the last reset: most without being
  /// read across the boundary at all (a JavaScript index of the content that came back, compared
  /// by value), the others read and then found (those are also counted in `misses`).
  pub content_hits: f64,
  /// Synchronous strategy calls since the last reset whose conversation's layout (token counts,
  /// steps, tool-call pairs, units) was a kept one extended by the new messages, as an agent
  /// loop's growing history allows (the same message objects first, in order; for a JSON body,
  /// the messages found in place in the previous body), instead of built anew. The layouts of
  /// the last four conversations are kept, each with its parsed messages.
  pub layout_extensions: f64,
}

/// Options of {@link setMessageCacheCapacity}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct MessageCacheOptions {
  /// The bound on the estimated bytes held (see {@link MessageCacheStats.bytes}); 0 disables
  /// the cache. When not given, the current bound is kept.
  /// @default 67108864 (64 MiB)
  pub max_bytes: Option<f64>,
}

/// The message cache's statistics. Every message object read once is remembered (by identity,
/// checked against a snapshot of the values read from it), so an unchanged history does not
/// cross the boundary again on the next turn. An object seen once is held in probation, an
/// eighth of the bounds, and moves to the rest when it comes back: objects parsed afresh on
/// every call (a stateless server) never hold more than that eighth nor evict the others.
#[napi(catch_unwind)]
pub fn message_cache_stats(env: &Env) -> Result<MessageCacheStats> {
  let state = instance::instance(env)?;
  let figures = state.cache.stats();
  Ok(MessageCacheStats {
    entries: saturate(figures.entries),
    capacity: saturate(figures.capacity),
    bytes: figures.bytes as f64,
    max_bytes: figures.max_bytes as f64,
    hits: figures.hits as f64,
    misses: figures.misses as f64,
    body_entries: saturate(figures.body_entries),
    body_bytes: figures.body_bytes as f64,
    body_hits: figures.body_hits as f64,
    body_misses: figures.body_misses as f64,
    recent_body_hits: figures.recent_body_hits as f64,
    recent_bodies: saturate(figures.recent_bodies),
    recent_body_bytes: figures.recent_body_bytes as f64,
    content_entries: saturate(figures.content_entries),
    content_bytes: figures.content_bytes as f64,
    content_hits: figures.content_hits as f64,
    layout_extensions: state.layout.extensions as f64,
  })
}

/// Sets the bounds of the message cache and empties it: `capacity` in messages (0 disables
/// it; the default is 100,000), `maxBytes` in estimated bytes (the default is 64 MiB; kept
/// when not given). Each JavaScript environment (the main thread, each worker) has its own
/// cache. Call it with the current capacity to clear the cache, e.g. after mutating message
/// objects in place in ways the identity check cannot see (a key inside an `arguments` object).
#[napi(catch_unwind, ts_args_type = "capacity: number, options?: MessageCacheOptions")]
pub fn set_message_cache_capacity(
  env: &Env,
  capacity: f64,
  options: Option<Unknown<'_>>,
) -> Result<()> {
  let capacity = capacity_argument(env, capacity)?;
  let options: MessageCacheOptions = options::read_options(env, options, "options")?;
  let state = instance::instance(env)?;
  let max_bytes = match options.max_bytes {
    Some(bytes) => {
      options::integer_option("maxBytes", bytes, 0.0).map_err(|e| error::throw(env, e))?
    }
    None => state.cache.stats().max_bytes,
  };
  state.reset_cache(env, capacity, max_bytes)
}

/// Checks a cache capacity argument: a non-negative integer.
fn capacity_argument(env: &Env, capacity: f64) -> Result<usize> {
  if capacity.is_finite() && capacity >= 0.0 && capacity.fract() == 0.0 {
    return Ok(capacity as usize);
  }
  let detail = format!("must be a non-negative integer, got {}", js_number(capacity));
  Err(error::throw(env, CoreError::new(ErrorKind::InvalidArgument, "capacity", detail)))
}
