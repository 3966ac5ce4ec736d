//! context-trim keeps an LLM agent's conversation inside its context window without breaking it.
//!
//! The core is plain Rust: parse messages ([`Message::from_json`]), analyse them once into a
//! [`Conversation`] (token counts, steps, tool-call units), and let a strategy produce a
//! [`Plan`]: a keep / replace / drop decision per message that never splits a tool call from
//! its result and never reorders. The Node.js binding (`src/napi/`, behind the default `napi`
//! feature) converts JavaScript values to these types and back.
//!
//! ```
//! use context_trim::{tokens::count_tokens, Encoding};
//! assert_eq!(count_tokens("hello world", Encoding::O200kBase), 2);
//! ```
#![deny(missing_docs)]

pub mod archive;
pub mod cache_policy;
pub mod classify;
pub mod conversation;
pub mod cut;
pub mod dedup;
pub mod detect;
pub mod error;
pub mod file_ops;
pub mod file_tracker;
pub mod format;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod generations;
pub mod json_body;
pub mod message;
pub mod placeholder;
pub mod plan;
pub mod prefix_summary;
pub mod pruner;
pub mod repair;
pub mod simulate;
pub mod span_index;
pub mod strategy;
pub mod summary;
pub mod tokens;
pub mod validate;
pub mod window;

// The binding is tested from JavaScript only: napi-derive registers nothing in a Rust test
// build, where every binding item would be dead code.
#[cfg(all(feature = "napi", not(test)))]
mod napi;

#[cfg(test)]
mod testing;

pub use classify::{Classification, ClassifyOptions, ContentPriority};
pub use conversation::{Conversation, Layout, Unit};
pub use error::{Error, ErrorKind, Result};
pub use file_ops::{file_operation, FileOp, FileOpKind};
pub use file_tracker::{FileReference, FileTracker};
pub use format::Format;
pub use message::{Content, Message, Part, Role, ToolCall};
pub use plan::{Action, MetaValue, Plan, Replacement};
pub use tokens::Encoding;
pub use window::ContextWindow;
