//! Arbitrary bytes as a conversation in one format, trimmed by every strategy at a budget and
//! options taken from the header; every invariant is asserted inside
//! `context_trim::fuzzing::fuzz_strategies` (see its documentation for the input layout).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
  init: context_trim::fuzzing::warm_up(),
  |data: &[u8]| context_trim::fuzzing::fuzz_strategies(data)
);
