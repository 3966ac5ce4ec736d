//! The conversation as data: messages and their formats, token counts, and the [`conversation::Conversation`] every strategy reads.

pub mod conversation;
pub mod cut;
pub mod format;
pub mod generations;
pub mod json_body;
pub mod media;
pub mod message;
pub mod tokens;
pub mod utf16;
