//! `applyMaxContextTokens`: the role-priority token cap as JavaScript sees it.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::strategy::roles::{self};

use crate::napi::base::options::integer_argument;
use crate::napi::base::options::read_nested_options;
use crate::napi::base::options::{MaxContextTokensOptions, MAX_CONTEXT_NESTED};
use crate::napi::base::{error, read, task};

/// Caps a conversation at `maxContextTokens` (the estimate of {@link estimateTokens}, reply
/// priming included) by dropping whole messages: oldest first, or by role with
/// `truncationPriority` (**listed first, dropped first**). The last message is always kept,
/// even if it alone exceeds the cap; a tool call and its results are dropped or kept together;
/// nothing is reordered. Within the cap the same messages come back. Returns the caller's own
/// message objects.
///
/// The third argument may also be the `truncationPriority` array alone, as CursorClaw passes
/// it: `applyMaxContextTokens(messages, 8000, ['assistant', 'user'])`.
///
/// ```ts
/// applyMaxContextTokens(messages, 8000, { truncationPriority: ['assistant', 'user'], keepFirstSystem: true })
/// ```
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], maxContextTokens: number, options?: MaxContextTokensOptions | Array<'system' | 'developer' | 'user' | 'assistant' | 'tool'>",
  ts_return_type = "M[]"
)]
pub fn apply_max_context_tokens<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  max_context_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare(env, messages, max_context_tokens, options)?;
  task::run_sync(env, input, op)
}

/// {@link applyMaxContextTokens} on the libuv thread pool: messages are read on the calling
/// thread, the cap is computed on a worker, and the Promise resolves to the returned messages.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], maxContextTokens: number, options?: MaxContextTokensOptions | Array<'system' | 'developer' | 'user' | 'assistant' | 'tool'>",
  ts_return_type = "Promise<M[]>"
)]
pub fn apply_max_context_tokens_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  max_context_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(env, prepare(env, messages, max_context_tokens, options))
}

/// The third argument of {@link applyMaxContextTokens}: the options object, or, as
/// CursorClaw's `applyMaxContextTokens(messages, maxContextTokens, truncationPriority?)` takes
/// it, the `truncationPriority` array itself.
fn read_cap_options(env: &Env, options: Option<Unknown<'_>>) -> Result<MaxContextTokensOptions> {
  match options {
    Some(list) if list.is_array()? => {
      let roles = Vec::<Unknown>::from_unknown(list)?;
      let mut names = Vec::with_capacity(roles.len());
      for (i, role) in roles.iter().enumerate() {
        let name = read::string_argument(role, &format!("truncationPriority[{i}]"))
          .map_err(|e| error::throw(env, e))?;
        names.push(name);
      }
      Ok(MaxContextTokensOptions { truncation_priority: Some(names), ..Default::default() })
    }
    other => read_nested_options(env, other, "options", MAX_CONTEXT_NESTED),
  }
}

type CapOp = task::PlanOnly<Box<dyn FnMut(&crate::Conversation<'_>) -> crate::Plan + Send>>;

fn prepare<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  max_context_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<(read::JsMessages<'env>, CapOp)> {
  let options = read_cap_options(env, options)?;
  let format = crate::napi::base::options::parse_format(options.format.as_deref())
    .map_err(|e| error::throw(env, e))?;
  let input = read::read_messages_in(env, messages, format)?;
  let max = integer_argument(&max_context_tokens, "maxContextTokens", 0.0)
    .map_err(|e| error::throw(env, e))?;
  crate::napi::base::model_warning::warn_unknown_model(
    env,
    options.model.as_deref(),
    options.encoding.as_deref(),
  )?;
  let (options, encoding) = options.normalize().map_err(|e| error::throw(env, e))?;
  let plan: Box<dyn FnMut(&crate::Conversation<'_>) -> crate::Plan + Send> =
    Box::new(move |conv| roles::apply_max_context_tokens(conv, max, &options));
  let format = input.format;
  Ok((input, task::PlanOnly { encoding, format, plan }))
}
