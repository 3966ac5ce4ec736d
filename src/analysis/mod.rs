//! What each message is, read once from the model: file operations, errors, shared spans, priority tiers and the file tracker.

pub mod classify;
pub mod detect;
pub mod file_ops;
pub mod file_tracker;
pub mod growing;
pub mod memo;
pub mod span_index;
pub mod supersession;
pub mod window;
