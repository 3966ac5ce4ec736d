//! What is written from a plan or beside it: request bodies as JSON text, a folded prefix, and the validation and repair of a conversation a provider must accept.

pub mod json_body;
pub mod prefix_summary;
pub mod repair;
pub mod validate;
