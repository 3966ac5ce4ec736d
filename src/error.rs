//! The one error type of the core.

use std::fmt;

/// An error from the core: what went wrong and, for a message, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
  kind: ErrorKind,
  /// Index of the offending message in the input, if the error is about one.
  index: Option<usize>,
  /// Path of the offending field inside the message or the options, e.g. `tool_calls[0].id`.
  field: String,
  /// What was wrong with it, lower-case, no trailing period.
  detail: String,
}

/// The kinds of [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
  /// Occurs when a message is not an object, has an unknown role, or a field of the wrong type.
  InvalidMessage,
  /// Occurs when the messages argument is not an array.
  InvalidMessages,
  /// Occurs when an option has the wrong type or is out of range.
  InvalidOption,
  /// Occurs when a positional argument other than the messages has the wrong type.
  InvalidArgument,
  /// Occurs when a configuration file cannot be read or parsed.
  InvalidConfig,
  /// Occurs when reading or writing a file fails.
  Io,
  /// Occurs when a repair would leave no message a provider accepts a request with (every
  /// message dropped, none given, or in Anthropic format only the instructions).
  EmptyConversation,
}

impl ErrorKind {
  /// The stable code exposed to JavaScript as `err.code`.
  pub fn code(self) -> &'static str {
    match self {
      ErrorKind::InvalidMessage => "INVALID_MESSAGE",
      ErrorKind::InvalidMessages => "INVALID_MESSAGES",
      ErrorKind::InvalidOption => "INVALID_OPTION",
      ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
      ErrorKind::InvalidConfig => "INVALID_CONFIG",
      ErrorKind::Io => "IO_ERROR",
      ErrorKind::EmptyConversation => "EMPTY_CONVERSATION",
    }
  }
}

impl Error {
  /// An error about field `field` of message `index`.
  pub fn message(index: usize, field: impl Into<String>, detail: impl Into<String>) -> Self {
    Error {
      kind: ErrorKind::InvalidMessage,
      index: Some(index),
      field: field.into(),
      detail: detail.into(),
    }
  }

  /// An error about an option (`field` is its camelCase name as the caller wrote it).
  pub fn option(field: impl Into<String>, detail: impl Into<String>) -> Self {
    Error {
      kind: ErrorKind::InvalidOption,
      index: None,
      field: field.into(),
      detail: detail.into(),
    }
  }

  /// An error of any kind that is not about one message.
  pub fn new(kind: ErrorKind, field: impl Into<String>, detail: impl Into<String>) -> Self {
    Error { kind, index: None, field: field.into(), detail: detail.into() }
  }

  /// The kind of error.
  pub fn kind(&self) -> ErrorKind {
    self.kind
  }

  /// The stable code of the error (see [`ErrorKind::code`]).
  pub fn code(&self) -> &'static str {
    self.kind.code()
  }

  /// The index of the message the error is about, if any.
  pub fn index(&self) -> Option<usize> {
    self.index
  }

  /// The field the error is about.
  pub fn field(&self) -> &str {
    &self.field
  }

  /// Whether the error is a type error in the caller's input (surfaced as a JS `TypeError`).
  pub fn is_type_error(&self) -> bool {
    matches!(
      self.kind,
      ErrorKind::InvalidMessage
        | ErrorKind::InvalidMessages
        | ErrorKind::InvalidOption
        | ErrorKind::InvalidArgument
    )
  }
}

impl fmt::Display for Error {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match (self.index, self.field.is_empty()) {
      (Some(i), true) => write!(f, "messages[{i}]: {}", self.detail),
      (Some(i), false) => write!(f, "messages[{i}].{}: {}", self.field, self.detail),
      (None, true) => write!(f, "{}", self.detail),
      (None, false) => write!(f, "{}: {}", self.field, self.detail),
    }
  }
}

impl std::error::Error for Error {}

/// A number as JavaScript prints it in an error message (`NaN`, `Infinity`, `-1`, `0.5`).
pub fn js_number(v: f64) -> String {
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

/// The result type of the core.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn display_names_index_and_field() {
    let e = Error::message(3, "tool_calls[0].id", "must be a string, got number");
    assert_eq!(e.to_string(), "messages[3].tool_calls[0].id: must be a string, got number");
    assert_eq!(e.code(), "INVALID_MESSAGE");
    assert_eq!(e.index(), Some(3));
    assert!(e.is_type_error());
  }

  #[test]
  fn display_of_option_and_message_level_errors() {
    assert_eq!(
      Error::option("targetTokens", "must be a non-negative integer, got -1").to_string(),
      "targetTokens: must be a non-negative integer, got -1"
    );
    assert_eq!(
      Error::message(0, "", "must be an object, got null").to_string(),
      "messages[0]: must be an object, got null"
    );
    assert_eq!(Error::option("x", "bad").code(), "INVALID_OPTION");
  }

  #[test]
  fn numbers_print_as_in_javascript() {
    for (v, text) in [
      (f64::NAN, "NaN"),
      (f64::INFINITY, "Infinity"),
      (-f64::INFINITY, "-Infinity"),
      (-1.0, "-1"),
      (0.5, "0.5"),
    ] {
      assert_eq!(js_number(v), text);
    }
  }
}
