//! The binding's API floor: one module per JavaScript-facing area, each reading its arguments
//! with the base floor (`super::base`), calling the core, and converting the result back. An
//! API module imports the base floor and the core, never another API module.

mod age;
mod cache_policy;
mod classify;
mod conversation;
mod dedup;
mod json;
mod message_cache;
mod prefix_summary;
mod priority;
mod pruner;
mod roles;
mod rolling;
mod simulate;
mod test_hook;
mod tokens;
mod validate;
mod window;
