//! Arbitrary bytes as a conversation read in every format, validated and repaired; every
//! invariant is asserted inside `context_trim::fuzzing::fuzz_validate`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
  init: context_trim::fuzzing::warm_up(),
  |data: &[u8]| context_trim::fuzzing::fuzz_validate(data)
);
