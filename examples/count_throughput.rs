//! Token-counting throughput of tiktoken-rs called directly from Rust: the ceiling the addon's
//! `countTokens`/`estimateTokens` can approach. The benchmark (`npm run bench`) runs it on the
//! same text it gives the addon and the JavaScript tokenizers, and parses its output. It also
//! times bpe-openai (a dev-dependency only) on the same texts, for the tokenizer choice of
//! issue 7 (docs/benchmark.md, "Tokenizer choice").
//!
//! ```sh
//! cargo run --release --no-default-features --example count_throughput -- <file> [--pieces] [--runs N]
//! ```
//!
//! `<file>` is UTF-8 text counted as one string. With `--pieces` it is a JSON array of strings
//! counted one by one and summed, as the addon counts a session's messages. Every run uses the
//! `o200k_base` singleton with `count_ordinary` (special-token text counted as ordinary text,
//! like the addon). Prints one `key=value` line per measurement:
//!
//! ```text
//! load seconds=0.131
//! count runs=3 bytes=7012345 tokens=1534210 best_seconds=0.351 mb_per_s=19.98
//! hash runs=3 bytes=7012345 best_seconds=0.004 mb_per_s=1753.1
//! bpe_openai_load seconds=0.092
//! bpe_openai_count runs=3 bytes=7012345 tokens=1534210 best_seconds=0.170 mb_per_s=41.25 differing_texts=0 token_difference=0
//! ```
//!
//! `hash` is the `DefaultHasher` (SipHash) pass the addon's token cache makes over every text of
//! 256 bytes or more, measured on the same texts. `bpe_openai_*` are bpe-openai's `o200k_base`
//! `count` on the same texts: its load (the first call, which deserialises its dictionary), its
//! rate, and how many texts it counts differently from tiktoken-rs (and the sum of the
//! differences, bpe-openai minus tiktoken-rs).

use std::hash::{Hash, Hasher};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tiktoken_rs::o200k_base_singleton;

mod common;

/// Texts shorter than this are not hashed by the addon's cache (`tokens.rs`).
const CACHE_MIN_BYTES: usize = 256;

struct Args {
  file: String,
  pieces: bool,
  runs: usize,
}

fn parse_args() -> Result<Args, String> {
  let mut file = None;
  let mut pieces = false;
  let mut runs = 3;
  let mut it = std::env::args().skip(1);
  while let Some(arg) = it.next() {
    match arg.as_str() {
      "--pieces" => pieces = true,
      "--runs" => runs = common::positive(&mut it, "--runs")?,
      _ if file.is_none() => file = Some(arg),
      other => return Err(format!("unexpected argument {other:?}")),
    }
  }
  let file = file.ok_or("usage: count_throughput <file> [--pieces] [--runs N]")?;
  Ok(Args { file, pieces, runs })
}

fn read_texts(args: &Args) -> Result<Vec<String>, String> {
  let text = std::fs::read_to_string(&args.file).map_err(|e| format!("{}: {e}", args.file))?;
  if !args.pieces {
    return Ok(vec![text]);
  }
  serde_json::from_str::<Vec<String>>(&text)
    .map_err(|e| format!("{}: not a JSON array of strings: {e}", args.file))
}

/// Runs `f` `runs` times (at least once) and returns its last result with the fastest run's
/// duration.
fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (T, Duration) {
  let start = Instant::now();
  let mut out = std::hint::black_box(f());
  let mut best = start.elapsed();
  for _ in 1..runs {
    let start = Instant::now();
    out = std::hint::black_box(f());
    best = best.min(start.elapsed());
  }
  (out, best)
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
  bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

fn run() -> Result<(), String> {
  let args = parse_args()?;
  let texts = read_texts(&args)?;
  let bytes: usize = texts.iter().map(String::len).sum();

  let start = Instant::now();
  let bpe = o200k_base_singleton();
  println!("load seconds={:.3}", start.elapsed().as_secs_f64());

  let (tokens, d) = best_of(args.runs, || {
    std::hint::black_box(&texts).iter().map(|t| bpe.count_ordinary(t)).sum::<usize>()
  });
  println!(
    "count runs={} bytes={bytes} tokens={tokens} best_seconds={:.4} mb_per_s={:.2}",
    args.runs,
    d.as_secs_f64(),
    mb_per_s(bytes, d)
  );

  let hashed: usize = texts.iter().filter(|t| t.len() >= CACHE_MIN_BYTES).map(String::len).sum();
  let (_, d) = best_of(args.runs, || {
    std::hint::black_box(&texts)
      .iter()
      .filter(|t| t.len() >= CACHE_MIN_BYTES)
      .map(|t| {
        let mut h = std::hash::DefaultHasher::new();
        t.hash(&mut h);
        h.finish()
      })
      .fold(0u64, |a, b| a ^ b)
  });
  println!(
    "hash runs={} bytes={hashed} best_seconds={:.6} mb_per_s={:.1}",
    args.runs,
    d.as_secs_f64(),
    mb_per_s(hashed, d)
  );

  let start = Instant::now();
  let fast = bpe_openai::o200k_base();
  println!("bpe_openai_load seconds={:.3}", start.elapsed().as_secs_f64());
  let (counts, d) = best_of(args.runs, || {
    std::hint::black_box(&texts).iter().map(|t| fast.count(t.as_str())).collect::<Vec<usize>>()
  });
  let mut differing = 0usize;
  let mut difference = 0i64;
  for (t, &c) in texts.iter().zip(&counts) {
    let reference = bpe.count_ordinary(t);
    if c != reference {
      differing += 1;
      difference += c as i64 - reference as i64;
    }
  }
  println!(
    "bpe_openai_count runs={} bytes={bytes} tokens={} best_seconds={:.4} mb_per_s={:.2} differing_texts={differing} token_difference={difference}",
    args.runs,
    counts.iter().sum::<usize>(),
    d.as_secs_f64(),
    mb_per_s(bytes, d)
  );
  Ok(())
}

fn main() -> ExitCode {
  common::exit("count_throughput", run())
}
