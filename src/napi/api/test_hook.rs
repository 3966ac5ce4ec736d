//! `panicForTests`: a panic inside an entry point, for `__test__/no-panic.spec.ts` (not part of
//! the API), and the module hook that hides it.

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The environment variable that keeps [`panic_for_tests`] on the native binding when it is `1`
/// in the process's environment at load time.
const TEST_PANIC_VARIABLE: &str = "CONTEXT_TRIM_TEST_PANIC";

/// A panic inside a `catch_unwind` entry point, for `__test__/no-panic.spec.ts` to prove that it
/// becomes a JavaScript `Error` and the process lives on. Not part of the API: `skip_typescript`
/// keeps it out of `index.d.ts`, and [`hide_test_hook`] removes it from the exports unless the
/// process was started with `CONTEXT_TRIM_TEST_PANIC=1`, as the test's child process is.
#[napi(catch_unwind, skip_typescript, js_name = "panicForTests")]
pub fn panic_for_tests() -> Result<()> {
  panic!("context-trim test panic");
}

/// Runs when the module is registered in an environment, after every function was added to
/// `exports`: takes the test hook away again unless its variable is set.
#[napi(module_exports)]
pub fn hide_test_hook(mut exports: Object) -> Result<()> {
  if std::env::var(TEST_PANIC_VARIABLE).as_deref() != Ok("1") {
    exports.delete_named_property("panicForTests")?;
  }
  Ok(())
}
