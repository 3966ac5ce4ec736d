//! The warning for an unknown `model` option: the library counts it with `o200k_base`, as
//! documented, and says so once per name through `process.emitWarning` (code
//! `CONTEXT_TRIM_UNKNOWN_MODEL`), as the command line says so on stderr.

use crate::model::tokens::Encoding;
use napi::bindgen_prelude::*;
use napi::Env;

/// The `code` of the warning.
pub(crate) const UNKNOWN_MODEL: &str = "CONTEXT_TRIM_UNKNOWN_MODEL";

/// How many unknown names an environment remembers having warned about (the bound only guards
/// the set against an app that makes up a name per call).
const MAX_WARNED: usize = 1024;

/// Emits the unknown-model warning for `model`, once per name and environment, when it picks
/// the encoding (no `encoding` option wins over it) and tiktoken-rs does not know it.
pub(crate) fn warn_unknown_model(
  env: &Env,
  model: Option<&str>,
  encoding: Option<&str>,
) -> Result<()> {
  let Some(model) = model.filter(|_| encoding.is_none()) else { return Ok(()) };
  if Encoding::is_known_model(model) {
    return Ok(());
  }
  let warned = &mut super::instance::instance(env)?.warned_models;
  if warned.contains(model) || warned.len() >= MAX_WARNED {
    return Ok(());
  }
  warned.insert(model.to_owned());
  let message = format!(
    "unknown model \"{model}\": counting with o200k_base (the encoding of gpt-4o and later models); \
     name a known model (gpt-4o, gpt-4.1, gpt-4, gpt-3.5-turbo, o3, gpt-oss-120b, …) or give `encoding`"
  );
  let process: Object = env.get_global()?.get_named_property("process")?;
  let emit: Function<FnArgs<(String, Object)>, Unknown> =
    process.get_named_property("emitWarning")?;
  let mut options = Object::new(env)?;
  options.set("type", "ContextTrimWarning")?;
  options.set("code", UNKNOWN_MODEL)?;
  emit.call((message, options).into())?;
  Ok(())
}
