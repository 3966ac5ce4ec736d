//! Core errors as JavaScript errors: a `TypeError` for bad input, an `Error` otherwise, each
//! with the core's stable `code`.

use napi::{Env, Status};

use crate::error::Error as CoreError;

/// Throws `err` into `env` and returns the error that tells napi-rs an exception is pending.
pub(crate) fn throw(env: &Env, err: CoreError) -> napi::Error {
  let message = err.to_string();
  let thrown = if err.is_type_error() {
    env.throw_type_error(&message, Some(err.code()))
  } else {
    env.throw_error(&message, Some(err.code()))
  };
  match thrown {
    Ok(()) => napi::Error::from_status(Status::PendingException),
    // The env could not throw (it is shutting down): surface the message the ordinary way.
    Err(_) => napi::Error::new(Status::InvalidArg, message),
  }
}
