//! Option objects as JavaScript passes them, and their normalisation into core types.

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::tokens::Encoding;

/// How to count tokens.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct TokenOptions {
  /// A model name that picks the encoding: gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o-series use
  /// `o200k_base`; gpt-4 and gpt-3.5 use `cl100k_base`. Unknown models use `o200k_base`.
  pub model: Option<String>,
  /// The encoding, which wins over `model`. `approximate` is one token per four characters,
  /// for providers whose tokenizer is not public.
  /// @default 'o200k_base'
  #[napi(
    ts_type = "'o200k_base' | 'cl100k_base' | 'o200k_harmony' | 'p50k_base' | 'r50k_base' | 'approximate'"
  )]
  pub encoding: Option<String>,
}

impl TokenOptions {
  /// The encoding these options select.
  pub(crate) fn encoding(&self) -> CoreResult<Encoding> {
    Encoding::resolve(self.model.as_deref(), self.encoding.as_deref())
  }
}

/// Reads an options argument: `undefined`/`null` give the defaults, an object is converted,
/// anything else (or a field of the wrong type) is an `INVALID_OPTION` error.
pub(crate) fn read_options<T: FromNapiValue + Default>(
  env: &Env,
  value: Option<Unknown<'_>>,
  name: &str,
) -> Result<T> {
  let Some(value) = value else { return Ok(T::default()) };
  match value.get_type()? {
    ValueType::Undefined | ValueType::Null => Ok(T::default()),
    ValueType::Object if !value.is_array()? => T::from_unknown(value).map_err(|e| {
      let reason = super::read::exception_text(env, e);
      super::error::throw(env, CoreError::option(name, reason))
    }),
    _ => Err(super::error::throw(
      env,
      CoreError::option(
        name,
        format!("must be an object, got {}", super::read::js_type_name(&value)),
      ),
    )),
  }
}

/// Checks a numeric option: finite, an integer, at least `min`.
pub(crate) fn integer_option(name: &str, value: f64, min: f64) -> CoreResult<usize> {
  integer_value(ErrorKind::InvalidOption, name, value, min)
}

/// Checks a number (an option or an argument, as `kind` says): finite, an integer, at least
/// `min`.
pub(crate) fn integer_value(
  kind: ErrorKind,
  name: &str,
  value: f64,
  min: f64,
) -> CoreResult<usize> {
  if value.is_finite() && value.fract() == 0.0 && value >= min && value <= 9_007_199_254_740_991.0 {
    Ok(value as usize)
  } else {
    Err(CoreError::new(
      kind,
      name,
      format!("must be an integer of at least {min}, got {}", js_number(value)),
    ))
  }
}

/// A number as JavaScript prints it (`NaN`, `Infinity`, `-1`, `0.5`).
pub(crate) fn js_number(v: f64) -> String {
  if v.is_nan() {
    "NaN".into()
  } else if v.is_infinite() {
    if v > 0.0 {
      "Infinity".into()
    } else {
      "-Infinity".into()
    }
  } else {
    format!("{v}")
  }
}
