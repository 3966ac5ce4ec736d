//! Arbitrary bytes as a conversation in one format, fed to a cache-aware trimmer (a
//! `CachePolicy`) one message at a time with a window, marks and strategy taken from the header;
//! every rule of docs/prompt-caching-policy.md is asserted inside
//! `context_trim::fuzzing::fuzz_cache_policy` (the input layout is that of `strategies`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
  init: context_trim::fuzzing::warm_up(),
  |data: &[u8]| context_trim::fuzzing::fuzz_cache_policy(data)
);
