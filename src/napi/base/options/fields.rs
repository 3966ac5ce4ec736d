//! Reading single option fields and arguments shared by several entry points: integers, numbers,
//! string sets, the classification options, a window's format, a cache capacity.

use std::collections::BTreeSet;

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};

use crate::analysis::classify::{ClassifyOptions, DEFAULT_PRESERVE_RECENT_TURNS};
use crate::error::{js_number, Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::format::Format;

use super::super::{error, read};
use super::{integer_argument, integer_option, is_nullish};

/// The classification options from the options of that name (`preserveRecentTurns`, its
/// `recentThreshold`, `agentInstructionMarkers`).
pub(crate) fn classify_options(
  preserve_recent_turns: Option<Unknown<'_>>,
  recent_threshold: Option<Unknown<'_>>,
  markers: Option<Vec<String>>,
) -> CoreResult<ClassifyOptions> {
  let turns = integer_field(preserve_recent_turns, "preserveRecentTurns")?
    .unwrap_or(DEFAULT_PRESERVE_RECENT_TURNS);
  let threshold = integer_field(recent_threshold, "recentThreshold")?.unwrap_or(turns);
  Ok(ClassifyOptions {
    recent_threshold: threshold,
    preserve_recent_turns: turns,
    agent_markers: markers.unwrap_or_default(),
  })
}

/// The `format` option given to a window's trim or truncation: absent, or the window's own.
pub(crate) fn check_window_format(own: Format, given: Option<Format>) -> CoreResult<()> {
  match given {
    Some(given) if given != own => Err(CoreError::option(
      "format",
      format!(
        "must be the window's format ({}), got {:?}: give the format when creating the window",
        own.as_str(),
        given.as_str()
      ),
    )),
    _ => Ok(()),
  }
}

/// A numeric option: absent (`undefined`/`null`) or a non-negative integer.
pub(crate) fn integer_field(value: Option<Unknown<'_>>, name: &str) -> CoreResult<Option<usize>> {
  match value {
    Some(v) if !is_nullish(&v) => integer_option(name, number(&v, name)?, 0.0).map(Some),
    _ => Ok(None),
  }
}

/// The positional `targetTokens` (`INVALID_ARGUMENT`, as every positional argument; the
/// option of the same name is `INVALID_OPTION`).
pub(crate) fn target_argument(value: &Unknown<'_>) -> CoreResult<usize> {
  integer_argument(value, "targetTokens", 0.0)
}

/// A numeric option's value (`INVALID_OPTION` naming it when it is not a number).
pub(crate) fn number(value: &Unknown<'_>, name: &str) -> CoreResult<f64> {
  number_of_kind(value, ErrorKind::InvalidOption, name)
}

fn number_of_kind(value: &Unknown<'_>, kind: ErrorKind, name: &str) -> CoreResult<f64> {
  if matches!(value.get_type(), Ok(ValueType::Number)) {
    value
      .coerce_to_number()
      .and_then(|n| n.get_double())
      .map_err(|e| CoreError::new(kind, name, e.reason))
  } else {
    Err(CoreError::new(kind, name, format!("must be a number, got {}", read::js_type_name(value))))
  }
}

/// Reads a `Set<string>` or `string[]`.
pub(crate) fn string_set(
  env: &Env,
  value: Unknown<'_>,
  name: &str,
) -> CoreResult<BTreeSet<String>> {
  let bad = || CoreError::option(name, "must be a Set or an array of strings");
  let array = if value.is_array().unwrap_or(false) {
    value
  } else if matches!(value.get_type(), Ok(ValueType::Object)) {
    let from = || -> Result<Unknown<'_>> {
      let array: Function<Unknown, Unknown> = env.get_global()?.get_named_property("Array")?;
      let from: Function<Unknown, Unknown> = array.get_named_property("from")?;
      from.apply(array, value)
    };
    from().map_err(|_| bad())?
  } else {
    return Err(bad());
  };
  let strings = Vec::<String>::from_unknown(array).map_err(|_| bad())?;
  Ok(strings.into_iter().collect())
}

/// Checks a cache capacity argument: a non-negative integer.
pub(crate) fn capacity_argument(env: &Env, capacity: f64) -> Result<usize> {
  if capacity.is_finite() && capacity >= 0.0 && capacity.fract() == 0.0 {
    return Ok(capacity as usize);
  }
  let detail = format!("must be a non-negative integer, got {}", js_number(capacity));
  Err(error::throw(env, CoreError::new(ErrorKind::InvalidArgument, "capacity", detail)))
}
