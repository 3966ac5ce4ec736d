//! Time of the rolling-context rules on a parsed session whose messages were already seen once
//! (their memos warm), as the binding's message cache leaves them between agent-loop turns: the
//! core half of a warm `truncateOldToolOutputs` call, without the napi read.
//!
//! ```sh
//! node --import @oxc-node/core/register -e "import('./benchmark/data.ts').then(d => process.stdout.write(JSON.stringify(d.buildMessages(1000))))" > /tmp/s.json
//! cargo run --release --no-default-features --example rolling_warm -- /tmp/s.json [--runs N] [--turns]
//! ```
//!
//! Prints the median and fastest of `N` warm calls (default 50) on the whole session, of the
//! rules alone and of the whole plan (`truncate_old_tool_outputs`: rules, placeholders and cuts),
//! and the rules, one character per message. With `--turns` it also prints one line per prefix of the session (the
//! agent loop's turns) with its rules, for comparing decisions between two builds, and the
//! rules for a few other configurations.

use std::process::ExitCode;
use std::time::Instant;

use context_trim::strategy::rolling::{rules, truncate_old_tool_outputs, Rule, TruncationConfig};
use context_trim::{Conversation, Encoding};

mod common;

fn code(rule: Rule) -> char {
  match rule {
    Rule::NotToolResult => '.',
    Rule::Error => 'E',
    Rule::Small => 's',
    Rule::Quoted => 'Q',
    Rule::Consumed => 'C',
    Rule::Placeholder => 'P',
    Rule::Cut => 'X',
    Rule::Recent => 'r',
  }
}

fn line(conv: &Conversation<'_>, config: &TruncationConfig) -> String {
  rules(conv, config).into_iter().map(code).collect()
}

fn run() -> Result<(), String> {
  let mut file = None;
  let mut runs = 50usize;
  let mut turns = false;
  let mut it = std::env::args().skip(1);
  while let Some(arg) = it.next() {
    match arg.as_str() {
      "--turns" => turns = true,
      "--runs" => runs = common::positive(&mut it, "--runs")?,
      _ if file.is_none() => file = Some(arg),
      other => return Err(format!("unexpected argument {other:?}")),
    }
  }
  let file = file.ok_or("usage: rolling_warm <session.json> [--runs N] [--turns]")?;
  let (_, messages) = common::read_session(&file)?;
  let config = TruncationConfig::default();
  let conv = Conversation::new(&messages, Encoding::O200kBase);

  let start = Instant::now();
  let first = line(&conv, &config);
  let cold = start.elapsed();
  let time = |f: &dyn Fn()| {
    let mut times = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
      let start = Instant::now();
      f();
      times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    (
      times.get(times.len() / 2).copied().unwrap_or_default(),
      times.first().copied().unwrap_or_default(),
    )
  };
  let (median, fastest) = time(&|| {
    std::hint::black_box(rules(std::hint::black_box(&conv), &config));
  });
  let (plan_median, plan_fastest) = time(&|| {
    std::hint::black_box(truncate_old_tool_outputs(std::hint::black_box(&conv), &config));
  });
  println!(
    "messages={} first_ms={:.3} warm_median_ms={median:.3} warm_fastest_ms={fastest:.3} plan_median_ms={plan_median:.3} plan_fastest_ms={plan_fastest:.3}",
    messages.len(),
    cold.as_secs_f64() * 1e3
  );
  println!("rules {first}");

  if turns {
    for k in 1..=messages.len() {
      let prefix = Conversation::from_refs(messages.iter().take(k).collect(), Encoding::O200kBase);
      println!("turn {k} {}", line(&prefix, &config));
    }
    for (max_age, min_quoted_chars) in
      [(0, 40), (2, 40), (5, 1), (5, 7), (5, 20), (5, 41), (9, 100)]
    {
      let other = TruncationConfig { max_age, min_quoted_chars, ..Default::default() };
      println!(
        "config max_age={max_age} min_quoted_chars={min_quoted_chars} {}",
        line(&conv, &other)
      );
    }
  }
  Ok(())
}

fn main() -> ExitCode {
  common::exit("rolling_warm", run())
}
