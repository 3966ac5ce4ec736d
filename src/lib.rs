//! context-trim keeps an LLM agent's conversation inside its context window without breaking it.
//!
//! The core is plain Rust: parse messages ([`Message::from_json`]), analyse them once into a
//! [`Conversation`] (token counts, steps, tool-call units), and let a strategy produce a
//! [`Plan`]: a keep / replace / drop decision per message that never splits a tool call from
//! its result and never reorders. The Node.js binding (`src/napi/`, behind the default `napi`
//! feature) converts JavaScript values to these types and back.
//!
//! The modules follow the data, each using only those before it: [`model`] (messages, formats,
//! tokens, the [`Conversation`]), [`analysis`] (what each message is: file operations, errors,
//! classification, the file tracker, the growing [`ContextWindow`]), [`strategy`] (every
//! strategy: a [`Conversation`] in, a [`Plan`] out, with the placeholders, summaries and archives
//! they write), [`plan`] (the one keep / shorten / drop plan), and [`output`] (what is written
//! from a plan or beside it: JSON bodies, validation and repair). `scripts/check-layers.mjs`
//! checks the order.
//!
//! ```
//! use context_trim::{model::tokens::count_tokens, Encoding};
//! assert_eq!(count_tokens("hello world", Encoding::O200kBase), 2);
//! ```
#![deny(missing_docs)]

pub mod analysis;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod model;
pub mod output;
pub mod plan;
pub mod simulate;
pub mod strategy;

/// The binding; under test, only its message cache, which is plain Rust.
#[cfg(any(feature = "napi", test))]
mod napi;

#[cfg(test)]
mod testing;

pub use analysis::classify::{Classification, ClassifyOptions, ContentPriority};
pub use analysis::file_ops::{file_operation, FileOp, FileOpKind};
pub use analysis::file_tracker::{FileReference, FileTracker};
pub use analysis::window::ContextWindow;
pub use error::{Error, ErrorKind, Result};
pub use model::conversation::{Conversation, Layout, Unit};
pub use model::format::Format;
pub use model::message::{Content, Message, Part, Role, ToolCall};
pub use model::tokens::Encoding;
pub use plan::{Action, MetaValue, Plan, Replacement};
