//! `messageCacheStats` and `setMessageCacheCapacity`: the message cache's figures and bounds.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::napi::base::options::{capacity_argument, integer_option, read_options};
use crate::napi::base::{error, instance, saturate};

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
  let options: MessageCacheOptions = read_options(env, options, "options")?;
  let state = instance::instance(env)?;
  let max_bytes = match options.max_bytes {
    Some(bytes) => integer_option("maxBytes", bytes, 0.0).map_err(|e| error::throw(env, e))?,
    None => state.cache.stats().max_bytes,
  };
  state.reset_cache(env, capacity, max_bytes)
}
