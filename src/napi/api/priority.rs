//! Priority trimming for JavaScript (seed 000): `trimByPriority`, `trimWithPlaceholders` and their
//! async variants (the trimming operation they share with `trimConversation`, the JSON entry
//! points and `ContextWindow` is the base floor's `trim.rs`).

use napi::bindgen_prelude::*;

use crate::napi::base::trim::{keep_for_summarizer, trim_op, Strategy, TrimOp};
use napi::Env;
use napi_derive::napi;

use crate::napi::base::{read, task};

/// Trims a conversation to `targetTokens`, taking what matters least first
/// ({@link ContentPriority}), oldest first within a priority: tool results are cut to head and
/// tail (their calls stay), and units are dropped whole (a tool call always with its results)
/// only when that is not enough; dropped units that still fit are put back. The system
/// messages and the last message with its unit are always returned; the seed's
/// never-truncated tiers (agent instructions, the current task, modified files) go last. When
/// those alone exceed the budget they are cut to head and tail, the system messages last;
/// `overBudget` is true only when even that does not fit. See docs/priority-trimming.md.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "TrimResultOf<M>"
)]
pub fn trim_by_priority<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare_priority(env, messages, options, Strategy::ByPriority, false)?;
  task::run_sync(env, input, op)
}

/// {@link trimByPriority} on the libuv thread pool; the only way to use a `summarizer`.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "Promise<TrimResultOf<M>>"
)]
pub fn trim_by_priority_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(env, prepare_priority(env, messages, options, Strategy::ByPriority, true))
}

/// Like {@link trimByPriority}, but tool results become placeholders in place (the call stays,
/// so pairs stay valid) instead of cuts; other messages are removed. Placeholders count towards
/// the budget; when they alone do not fit, the lowest units are removed whole. Where the budget
/// has room left for at least twice a placeholder, the result comes back cut to head and tail
/// instead (see `keepPlaceholders`). The system messages and the last message with its unit are
/// always returned.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "TrimResultOf<M>"
)]
pub fn trim_with_placeholders<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare_priority(env, messages, options, Strategy::WithPlaceholders, false)?;
  task::run_sync(env, input, op)
}

/// {@link trimWithPlaceholders} on the libuv thread pool; the only way to use a `summarizer`.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "Promise<TrimResultOf<M>>"
)]
pub fn trim_with_placeholders_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(
    env,
    prepare_priority(env, messages, options, Strategy::WithPlaceholders, true),
  )
}

fn prepare_priority<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
  strategy: Strategy,
  asynchronous: bool,
) -> Result<(read::JsMessages<'env>, TrimOp)> {
  let (mut op, format) = trim_op(env, options, strategy, asynchronous, None)?;
  let input = read::read_messages_in(env, messages, format)?;
  op.format = input.format;
  op.messages = keep_for_summarizer(&input, op.summary.as_ref());
  Ok((input, op))
}
