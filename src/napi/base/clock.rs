//! The injectable clock of the classes that stamp times (`FileTracker`, `ContextPruner`): a
//! `now` option returning milliseconds since the epoch or a `Date`, `Date.now()` by default.
//! Pass a fixed clock (`() => 0`) for results that are the same on every run.

use napi::bindgen_prelude::*;
use napi::{Env, JsDate, JsValue, ValueType};

use super::options::is_nullish;
use super::{error, read};
use crate::error::{js_number, Error as CoreError};

/// A clock: the caller's `now` function, or the system clock.
pub(crate) struct Clock(Option<FunctionRef<(), Unknown<'static>>>);

impl Clock {
  /// The clock of a `now` option: `undefined`/`null` for the system clock, else a function.
  pub fn from_option(env: &Env, now: Option<Unknown>) -> Result<Clock> {
    let Some(now) = now.filter(|v| !is_nullish(v)) else { return Ok(Clock(None)) };
    if now.get_type()? != ValueType::Function {
      return Err(error::throw(
        env,
        CoreError::option("now", format!("must be a function, got {}", read::js_type_name(&now))),
      ));
    }
    let f: Function<(), Unknown<'static>> = Function::from_unknown(now)?;
    Ok(Clock(Some(f.create_ref()?)))
  }

  /// The `now` function given, if one was (for an `options` getter to report it).
  pub fn function<'env>(
    &self,
    env: &'env Env,
  ) -> Result<Option<Function<'env, (), Unknown<'static>>>> {
    self.0.as_ref().map(|f| f.borrow_back(env)).transpose()
  }

  /// The time in milliseconds since the epoch.
  pub fn now(&self, env: &Env) -> Result<f64> {
    let Some(clock) = &self.0 else {
      let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0);
      return Ok(ms);
    };
    let value = clock.borrow_back(env)?.call(())?;
    let (n, got) = match value.get_type()? {
      ValueType::Number => {
        let n = value.coerce_to_number()?.get_double()?;
        (n, js_number(n))
      }
      ValueType::Object if value.is_date()? => {
        // SAFETY: checked to be a Date just above.
        let date: JsDate = unsafe { JsDate::from_napi_value(env.raw(), value.raw()) }?;
        (date.value_of()?, "Invalid Date".to_string())
      }
      _ => (f64::NAN, read::js_type_name(&value).to_string()),
    };
    if n.is_finite() {
      Ok(n)
    } else {
      Err(error::throw(
        env,
        CoreError::option("now", format!("must return a finite number or a valid Date, got {got}")),
      ))
    }
  }
}
