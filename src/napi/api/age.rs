//! `trimByAge` for JavaScript: the oldest units go first (phase 1 trimming).

use napi::bindgen_prelude::*;

use napi::Env;
use napi_derive::napi;

use crate::error::Error as CoreError;
use crate::strategy::age::trim_by_age as core_trim_by_age;

use crate::napi::base::options::target_argument;
use crate::napi::base::options::{read_options, TokenOptions};
use crate::napi::base::{error, read, write};

/// Phase 1 trimming: drops the oldest messages first (a tool call with its results) until the
/// request fits `targetTokens`, keeping system messages and the last message.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], targetTokens: number, options?: TokenOptions",
  ts_return_type = "M[]"
)]
pub fn trim_by_age<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  target_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Array<'env>> {
  let throw = |e: CoreError| error::throw(env, e);
  let opts: TokenOptions = read_options(env, options, "options")?;
  let input = read::read_messages_in(env, messages, opts.format().map_err(throw)?)?;
  let target = target_argument(&target_tokens).map_err(throw)?;
  let encoding = opts.encoding().map_err(throw)?;
  crate::napi::base::model_warning::warn_unknown_model(
    env,
    opts.model.as_deref(),
    opts.encoding.as_deref(),
  )?;
  let plan = crate::napi::base::task::on_kept_conversation(env, &input, encoding, |conv| {
    core_trim_by_age(conv, target).plan
  })?;
  write::apply_plan(env, &input, &plan)
}
