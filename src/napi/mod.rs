//! The Node.js binding: the only module that knows napi. Each entry point reads its arguments
//! into core types, calls the core, and converts the result back. Two floors: [`base`] (reading
//! and writing messages, options, tasks, errors, the message cache: nothing JavaScript-facing of
//! its own) and `api` (one module per JavaScript-facing area, using the base and the core, never
//! each other); `scripts/check-layers.mjs` checks it.

/// See Cargo.toml for why mimalloc, and why on Linux only.
#[cfg(all(target_os = "linux", not(test)))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The base first: napi-derive reads a class's struct (the file tracker's, in the base) before
// its methods (in the API floor).
#[cfg(not(test))]
mod api;
pub(crate) mod base;
