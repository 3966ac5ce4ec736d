//! What trimming on every call costs a provider's prefix cache, per session file: each session
//! is replayed one model call at a time (the history up to each assistant message), trimmed by
//! a stateless priority strategy with its defaults, and priced as `docs/prompt-caching.md`
//! prices it (Anthropic: a cached token 0.1, any other 1.25), against sending everything.
//!
//! ```sh
//! cargo run --release --no-default-features --example every_call_cost -- [--budget 0.5] [--step 0.25] [--strategy placeholders|priority] FILE...
//! ```
//!
//! `--budget` is the fraction of each session's final tokens trimmed to, `--step` the fraction
//! of that budget given as `replanEvery` (0 by default: no re-plan points). Printed per file: the
//! cost relative to sending everything, the cached share of the tokens sent, and how many calls
//! rewrote part of the previous request (not only appended to it).

use std::process::ExitCode;

use context_trim::model::conversation::Conversation;
use context_trim::plan::Plan;
use context_trim::simulate::{sent_key, turn_ends};
use context_trim::strategy::priority::{
  trim_by_priority_plan, trim_with_placeholders, PriorityOptions,
};
use context_trim::{Encoding, Message};

mod common;

const CACHE_READ: f64 = 0.1;
const CACHE_WRITE: f64 = 1.25;

/// The key ([`sent_key`]) and tokens of every message `plan` sends.
fn sent(conv: &Conversation<'_>, plan: &Plan) -> Vec<(u64, usize)> {
  (0..conv.len())
    .filter_map(|i| {
      let key = sent_key(conv.message(i).fingerprint(), plan.action(i))?;
      Some((key, plan.tokens_of(conv, i)))
    })
    .collect()
}

/// A request's cost given the one before it: its leading messages identical to the previous
/// request's are read from the cache, the rest written.
fn cost(previous: &[(u64, usize)], now: &[(u64, usize)]) -> (f64, usize, usize, bool) {
  let shared = previous.iter().zip(now).take_while(|(a, b)| a == b).count();
  let cached: usize = now[..shared].iter().map(|(_, t)| t).sum();
  let total: usize = now.iter().map(|(_, t)| t).sum();
  let rewrote = shared < previous.len();
  (cached as f64 * CACHE_READ + (total - cached) as f64 * CACHE_WRITE, cached, total, rewrote)
}

fn run() -> Result<(), String> {
  let mut fraction = 0.5f64;
  let mut step = 0.0f64;
  let mut placeholders = true;
  let mut files = Vec::new();
  let mut it = std::env::args().skip(1);
  while let Some(arg) = it.next() {
    match arg.as_str() {
      "--step" => step = common::value(&mut it, "--step", "a fraction")?,
      "--budget" => fraction = common::value(&mut it, "--budget", "a fraction")?,
      "--strategy" => {
        placeholders = match it.next().as_deref() {
          Some("placeholders") => true,
          Some("priority") => false,
          other => return Err(format!("--strategy: placeholders or priority, got {other:?}")),
        }
      }
      _ => files.push(arg),
    }
  }
  if files.is_empty() {
    return Err("usage: every_call_cost [--budget F] [--step F] [--strategy S] FILE...".into());
  }
  let mut ratios = Vec::new();
  for file in &files {
    let (format, messages) = common::read_session(file)?;
    let encoding = Encoding::O200kBase;
    let final_tokens = Conversation::new(&messages, encoding).total_tokens();
    let target = (final_tokens as f64 * fraction) as usize;
    let options = PriorityOptions {
      target_tokens: target,
      replan_step: (target as f64 * step) as usize,
      ..PriorityOptions::default()
    };
    let refs: Vec<&Message> = messages.iter().collect();
    let (mut none, mut trimmed) = ((0.0, 0usize, 0usize), (0.0, 0usize, 0usize));
    let (mut previous_all, mut previous_trimmed) = (Vec::new(), Vec::new());
    let mut rewrites = 0;
    let ends = turn_ends(&refs);
    for &end in &ends {
      let conv = Conversation::from_refs(refs[..end].to_vec(), encoding).with_format(format);
      let all = sent(&conv, &Plan::keep_all(conv.len()));
      let plan = if placeholders {
        trim_with_placeholders(&conv, None, &options).outcome.plan
      } else {
        trim_by_priority_plan(&conv, None, &options)
      };
      let now = sent(&conv, &plan);
      let (c, cached, total, _) = cost(&previous_all, &all);
      none = (none.0 + c, none.1 + cached, none.2 + total);
      let (c, cached, total, rewrote) = cost(&previous_trimmed, &now);
      trimmed = (trimmed.0 + c, trimmed.1 + cached, trimmed.2 + total);
      rewrites += usize::from(rewrote);
      (previous_all, previous_trimmed) = (all, now);
    }
    let ratio = trimmed.0 / none.0;
    ratios.push(ratio);
    println!(
      "{:<48} {:>5} calls  {:>7} tokens  {:.2}x  cached {:>3.0}% (everything {:>3.0}%)  rewrites {}",
      std::path::Path::new(file).file_name().map_or(file.clone(), |f| f.to_string_lossy().into()),
      ends.len(),
      final_tokens,
      ratio,
      100.0 * trimmed.1 as f64 / trimmed.2.max(1) as f64,
      100.0 * none.1 as f64 / none.2.max(1) as f64,
      rewrites,
    );
  }
  let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
  let max = ratios.iter().cloned().fold(0.0, f64::max);
  println!("mean {mean:.2}x, max {max:.2}x over {} sessions", ratios.len());
  Ok(())
}

fn main() -> ExitCode {
  common::exit("every_call_cost", run())
}
