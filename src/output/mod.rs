//! What is written from a plan or beside it: request bodies as JSON text, placeholders, summaries of what was dropped, archives, and the validation and repair of a conversation a provider must accept.

pub mod archive;
pub mod json_body;
pub mod placeholder;
pub mod prefix_summary;
pub mod repair;
pub mod summary;
pub mod validate;
