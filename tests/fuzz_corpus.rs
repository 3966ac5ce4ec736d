//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) through the fuzz targets'
//! harness, so `cargo test` checks every strategy's and the validator's invariants on it
//! without libFuzzer. A finding of the fuzzer is added to the corpus as `regression-<what>`.

use std::path::{Path, PathBuf};

use context_trim::fuzzing::{decode, fuzz_cache_policy, fuzz_strategies, fuzz_validate};
use context_trim::model::format::parse_messages;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
  let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
  if target == "cache_policy" && !dir.exists() {
    // Seeded from the strategies corpus (same input layout) until it has findings of its own.
    return Vec::new();
  }
  let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
    .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
    .filter_map(|e| e.ok().map(|e| e.path()))
    .collect();
  files.sort();
  files
    .into_iter()
    .map(|p| {
      let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
      let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
      (name, bytes)
    })
    .collect()
}

/// Runs `run` on every input of the corpus `name`, naming the input that panics.
fn replay(name: &str, run: fn(&[u8])) -> usize {
  let inputs = corpus(name);
  for (file, bytes) in &inputs {
    if std::panic::catch_unwind(|| run(bytes)).is_err() {
      panic!("fuzz/corpus/{name}/{file} breaks an invariant (see the panic above)");
    }
  }
  inputs.len()
}

/// How many inputs of a corpus read as a conversation (so the replay is not all rejects).
fn readable(target: &str) -> usize {
  corpus(target)
    .iter()
    .filter(|(_, b)| decode(b).is_some_and(|i| parse_messages(&i.messages, i.format).is_ok()))
    .count()
}

#[test]
fn the_strategies_corpus_replays_clean() {
  assert!(replay("strategies", fuzz_strategies) >= 200);
  assert!(readable("strategies") >= 150, "{} readable", readable("strategies"));
}

/// The cache-aware trimmer's target reads the strategies' input layout: it replays that corpus
/// and its own findings (`fuzz/corpus/cache_policy/`, once there are some).
#[test]
fn the_cache_policy_target_replays_the_strategies_corpus_and_its_own_clean() {
  assert!(replay("strategies", fuzz_cache_policy) >= 200);
  replay("cache_policy", fuzz_cache_policy);
  assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets/cache_policy.rs").exists());
}

#[test]
fn the_validate_corpus_replays_clean() {
  assert!(replay("validate", fuzz_validate) >= 200);
}

#[test]
fn the_corpus_holds_transcript_pieces_in_every_format_and_edge_cases() {
  let names: Vec<String> = corpus("strategies").into_iter().map(|(n, _)| n).collect();
  for suffix in ["-openai", "-anthropic", "-ai-sdk", "-auto"] {
    assert!(names.iter().filter(|n| n.ends_with(suffix)).count() >= 30, "{suffix}");
  }
  assert!(names.iter().filter(|n| n.starts_with("edge-")).count() >= 60);
  assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets/strategies.rs").exists());
}
