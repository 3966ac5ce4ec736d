//! The Node.js binding: the only module that knows napi. Each entry point reads its arguments
//! into core types, calls the core, and converts the result back.

mod error;
mod options;
mod priority;
mod read;
mod write;

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::conversation::Conversation;
use crate::error::{Error as CoreError, ErrorKind};
use crate::tokens;

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
/// framing of the OpenAI cookbook (3 per message, 1 per name, 1 per tool call).
#[napi(catch_unwind, ts_args_type = "message: Message, options?: TokenOptions")]
pub fn estimate_message_tokens(
  env: &Env,
  message: Unknown,
  options: Option<Unknown>,
) -> Result<u32> {
  let encoding = token_encoding(env, options)?;
  let (_, message) = read::read_message(env, message)?;
  Ok(saturate(tokens::message_tokens(&message, encoding)))
}

/// Estimates the tokens of a whole request: every message plus 3 tokens of reply priming.
#[napi(catch_unwind, ts_args_type = "messages: Message[], options?: TokenOptions")]
pub fn estimate_tokens(env: &Env, messages: Unknown, options: Option<Unknown>) -> Result<u32> {
  let encoding = token_encoding(env, options)?;
  let input = read::read_messages(env, messages)?;
  Ok(saturate(tokens::conversation_tokens(&input.messages, encoding)))
}

/// Counts the steps of a conversation: assistant messages with tool calls.
#[napi(catch_unwind, ts_args_type = "messages: Message[]")]
pub fn count_steps(env: &Env, messages: Unknown) -> Result<u32> {
  let input = read::read_messages(env, messages)?;
  Ok(saturate(input.messages.iter().filter(|m| m.has_tool_calls()).count()))
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
#[napi(catch_unwind, ts_args_type = "messages: Message[]")]
pub fn tag_messages_with_step<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
) -> Result<Vec<TaggedMessage<'env>>> {
  let input = read::read_messages(env, messages)?;
  let conv =
    Conversation::with_tokens(&input.messages, Default::default(), vec![0; input.messages.len()]);
  Ok(
    input
      .objects
      .into_iter()
      .enumerate()
      .map(|(i, message)| TaggedMessage { message, step: saturate(conv.step(i)) })
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
  if !(capacity.is_finite() && capacity >= 0.0 && capacity.fract() == 0.0) {
    return Err(error::throw(
      env,
      CoreError::new(
        ErrorKind::InvalidArgument,
        "capacity",
        format!("must be a non-negative integer, got {capacity}"),
      ),
    ));
  }
  tokens::set_cache_capacity(capacity as usize);
  Ok(())
}

fn token_encoding(env: &Env, options: Option<Unknown>) -> Result<crate::tokens::Encoding> {
  let options: TokenOptions = read_options(env, options, "options")?;
  options.encoding().map_err(|e| error::throw(env, e))
}

fn saturate(n: usize) -> u32 {
  u32::try_from(n).unwrap_or(u32::MAX)
}
