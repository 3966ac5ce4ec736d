//! Time of a warm `trimByPriority` on the core alone: a parsed session whose messages were
//! already trimmed once (their memos warm), as the binding's message cache leaves them between
//! agent-loop turns; each call builds the conversation's layout and runs the strategy, as the
//! binding's compute step does, without the napi read and the result objects.
//!
//! ```sh
//! node --import @oxc-node/core/register -e "import('./benchmark/data.ts').then(d => process.stdout.write(JSON.stringify(d.buildMessages(1000))))" > /tmp/s.json
//! cargo run --release --no-default-features --example priority_warm -- /tmp/s.json [--runs N]
//! ```
//!
//! Prints the median and fastest of `N` warm calls (default 300) at half the session's tokens
//! (or `--target T` tokens, e.g. a model's window on a long session), and a hash of the plan
//! (to compare the decisions of two builds).

use std::hash::{Hash, Hasher};
use std::process::ExitCode;
use std::time::Instant;

use context_trim::strategy::priority::{trim_by_priority, PriorityOptions};
use context_trim::{Conversation, Encoding, Message};

mod common;

fn run() -> Result<(), String> {
  let mut file = None;
  let mut runs = 300usize;
  let mut target = None;
  let mut it = std::env::args().skip(1);
  while let Some(arg) = it.next() {
    match arg.as_str() {
      "--runs" => runs = common::positive(&mut it, "--runs")?,
      "--target" => target = Some(common::value(&mut it, "--target", "a token count")?),
      _ if file.is_none() => file = Some(arg),
      other => return Err(format!("unexpected argument {other:?}")),
    }
  }
  let file = file.ok_or("usage: priority_warm <session.json> [--runs N] [--target T]")?;
  let (format, messages) = common::read_session(&file)?;
  let refs: Vec<&Message> = messages.iter().collect();
  let call = |target: usize| {
    let conv = Conversation::from_refs(refs.clone(), Encoding::O200kBase).with_format(format);
    let options = PriorityOptions { target_tokens: target, ..PriorityOptions::default() };
    trim_by_priority(&conv, None, &options)
  };
  let half = target.unwrap_or_else(|| {
    Conversation::from_refs(refs.clone(), Encoding::O200kBase).total_tokens() / 2
  });
  let first = call(half);
  let mut h = std::hash::DefaultHasher::new();
  format!("{:?}", first.outcome).hash(&mut h);
  let mut times = Vec::with_capacity(runs);
  for _ in 0..runs {
    let start = Instant::now();
    std::hint::black_box(call(std::hint::black_box(half)));
    times.push(start.elapsed().as_secs_f64() * 1e3);
  }
  times.sort_by(f64::total_cmp);
  println!(
    "{} messages, target {half}: median {:.3} ms, fastest {:.3} ms ({} runs); plan {:016x}",
    messages.len(),
    times[times.len() / 2],
    times[0],
    times.len(),
    h.finish()
  );
  Ok(())
}

fn main() -> ExitCode {
  common::exit("priority_warm", run())
}
