//! The binding's base floor: what every entry point shares and nothing JavaScript-facing of its
//! own. Reading messages and options from JavaScript values ([`read`], [`options`]), writing
//! results back ([`write`]), running an operation on the JS thread or the libuv pool ([`task`]),
//! errors ([`error`]), the message cache ([`cache`]) and each environment's state
//! ([`instance`]), and what several entry points share: the trimming operation ([`trim`]),
//! summaries ([`summary`]), classified lists ([`classified`]), the file tracker's handle
//! ([`file_tracker`]). It imports nothing from the API floor (`super::api`).

pub(crate) mod cache;
#[cfg(not(test))]
pub(crate) mod classified;
#[cfg(not(test))]
pub(crate) mod clock;
#[cfg(not(test))]
pub(crate) mod error;
#[cfg(not(test))]
pub(crate) mod file_tracker;
#[cfg(not(test))]
pub(crate) mod instance;
#[cfg(not(test))]
pub(crate) mod model_warning;
#[cfg(not(test))]
pub(crate) mod options;
#[cfg(not(test))]
pub(crate) mod read;
#[cfg(not(test))]
pub(crate) mod strings;
#[cfg(not(test))]
pub(crate) mod summary;
#[cfg(not(test))]
pub(crate) mod task;
#[cfg(not(test))]
pub(crate) mod trim;
#[cfg(not(test))]
pub(crate) mod write;

/// A count as a JavaScript integer, `u32::MAX` at most.
#[cfg(not(test))]
pub(crate) fn saturate(n: usize) -> u32 {
  u32::try_from(n).unwrap_or(u32::MAX)
}
