//! The strategies: each reads a [`Conversation`](crate::Conversation) and returns a
//! [`Plan`](crate::Plan).

pub mod roles;
pub mod rolling;
