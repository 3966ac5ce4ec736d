//! Strategies: each reads a [`Conversation`](crate::Conversation) and returns a
//! [`Plan`](crate::Plan).

pub mod rolling;
