//! Token counting and steps: `countTokens`, `estimateMessageTokens`, `estimateTokens`,
//! `countSteps`, `tagMessagesWithStep`, and the token-count cache's figures and bound.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::model::conversation::Conversation;
use crate::model::tokens;
use crate::napi::base::options::{capacity_argument, read_options, TokenOptions};
use crate::napi::base::{error, instance, model_warning, read, saturate};

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
