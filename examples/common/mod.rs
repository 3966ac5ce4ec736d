//! What the timing examples share: reading a session file, numeric flags, and the exit.

// Each example uses what it needs of this module.
#![allow(dead_code)]

use std::process::ExitCode;
use std::str::FromStr;

use context_trim::{Format, Message};

/// The messages of the session in `file` (a JSON array in any format) and the format they were
/// read in.
pub fn read_session(file: &str) -> Result<(Format, Vec<Message>), String> {
  let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
  let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{file}: {e}"))?;
  context_trim::model::format::parse_messages(&value, None).map_err(|e| e.to_string())
}

/// The value after flag `name`, parsed; `what` says what it must be.
pub fn value<T: FromStr>(
  args: &mut impl Iterator<Item = String>,
  name: &str,
  what: &str,
) -> Result<T, String> {
  let n = args.next().ok_or_else(|| format!("{name} needs {what}"))?;
  n.parse().map_err(|_| format!("{name}: not {what}: {n:?}"))
}

/// [`value`] for a count of at least 1.
pub fn positive(args: &mut impl Iterator<Item = String>, name: &str) -> Result<usize, String> {
  let n: usize = value(args, name, "a positive integer")?;
  if n == 0 {
    return Err(format!("{name}: not a positive integer: \"0\""));
  }
  Ok(n)
}

/// The exit of example `name`: its error on stderr, if any.
pub fn exit(name: &str, result: Result<(), String>) -> ExitCode {
  match result {
    Ok(()) => ExitCode::SUCCESS,
    Err(e) => {
      eprintln!("{name}: {e}");
      ExitCode::FAILURE
    }
  }
}
