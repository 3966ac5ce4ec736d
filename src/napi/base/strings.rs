//! A request body as a JavaScript string, in and out (`trimByPriorityJson`): across the boundary
//! as UTF-16 code units, which V8 copies as they are, transcoded in Rust
//! ([`crate::model::utf16`]).

use napi::bindgen_prelude::*;
use napi::{Env, JsValue};

use crate::model::utf16::{utf16_to_string, utf8_to_utf16};

/// A JavaScript string (checked to be one) as UTF-8 in `bytes` (its allocation reused), read
/// through `units` (a buffer kept from call to call): V8 copies the UTF-16 code units out, and
/// [`utf16_to_string`] transcodes them, 16 ASCII units at a time. napi's own UTF-8 read measures
/// the string in one pass of V8's codec and writes it in another
/// (docs/history/benchmark-rounds.md, "Seventh round"). This is for a request body, read within
/// the call.
pub(crate) fn large_string(
  value: &Unknown<'_>,
  bytes: Vec<u8>,
  units: &mut Vec<u16>,
) -> Result<String> {
  let env = value.env();
  let mut len = 0usize;
  // SAFETY: `value` is a live string handle of the current call; a null buffer asks for the
  // length in UTF-16 units, which V8 knows without a pass.
  let status = unsafe {
    napi::sys::napi_get_value_string_utf16(env, value.raw(), std::ptr::null_mut(), 0, &mut len)
  };
  if status != napi::sys::Status::napi_ok {
    return Err(napi::Error::new(Status::from(status), "could not read the string"));
  }
  let capacity = len.saturating_add(1);
  units.clear();
  units.reserve(capacity);
  let mut written = 0usize;
  // SAFETY: `units` has room for `capacity` units; napi writes at most `capacity - 1` of them
  // (and a terminating zero) and reports how many in `written`.
  let status = unsafe {
    napi::sys::napi_get_value_string_utf16(
      env,
      value.raw(),
      units.as_mut_ptr(),
      capacity,
      &mut written,
    )
  };
  if status != napi::sys::Status::napi_ok {
    return Err(napi::Error::new(Status::from(status), "could not read the string"));
  }
  // SAFETY: napi initialised the first `written` units, at most `capacity - 1`.
  unsafe { units.set_len(written.min(capacity - 1)) };
  Ok(utf16_to_string(units, bytes))
}

/// `text` as a new JavaScript string, made through `units` (a buffer kept from call to call):
/// ASCII as Latin-1, which V8 copies as it is, anything else as UTF-16 code units
/// ([`utf8_to_utf16`]), which it copies too, instead of decoding UTF-8 character by character.
pub(crate) fn new_large_string<'env>(
  env: &'env Env,
  text: &str,
  units: &mut Vec<u16>,
) -> Result<napi::JsString<'env>> {
  if text.is_ascii() {
    return env.create_string_latin1(text.as_bytes());
  }
  units.clear();
  utf8_to_utf16(text, units);
  env.create_string_utf16(&units[..])
}
