//! Time of `ContextWindow#trim`'s core part: a session grown in a core [`ContextWindow`] one
//! message a turn, each turn trimmed by priority to half the window's tokens, as
//! `npm run bench`'s scenario 2b does through the binding (without the napi read of the new
//! message and the result objects). Prints the median and fastest of the last 100 turns.
//!
//! ```sh
//! node --import @oxc-node/core/register -e "import('./benchmark/data.ts').then(d => process.stdout.write(JSON.stringify(d.buildMessages(1000))))" > /tmp/s.json
//! cargo run --release --no-default-features --example window_turns -- /tmp/s.json [--rounds N]
//! ```

use std::process::ExitCode;
use std::time::Instant;

use context_trim::analysis::classify::ClassifyOptions;
use context_trim::analysis::window::ContextWindow;
use context_trim::strategy::priority::{trim_by_priority, PriorityOptions};
use context_trim::Encoding;

mod common;

fn run() -> Result<(), String> {
  let mut file = None;
  let mut rounds = 5usize;
  let mut it = std::env::args().skip(1);
  while let Some(arg) = it.next() {
    match arg.as_str() {
      "--rounds" => rounds = common::positive(&mut it, "--rounds")?,
      _ if file.is_none() => file = Some(arg),
      other => return Err(format!("unexpected argument {other:?}")),
    }
  }
  let file = file.ok_or("usage: window_turns <session.json> [--rounds N]")?;
  let (format, messages) = common::read_session(&file)?;
  let late = messages.len().saturating_sub(100);
  let mut times = Vec::new();
  for _ in 0..rounds {
    let mut window = ContextWindow::new(Encoding::O200kBase, format);
    for (k, m) in messages.iter().enumerate() {
      window.push(m);
      let classify = ClassifyOptions { preserve_recent_turns: 2, ..ClassifyOptions::default() };
      let options = PriorityOptions {
        target_tokens: window.total_tokens() / 2,
        classify,
        ..PriorityOptions::default()
      };
      let start = Instant::now();
      std::hint::black_box(window.analysed(|conv| trim_by_priority(conv, None, &options)));
      if k >= late {
        times.push(start.elapsed().as_secs_f64() * 1e3);
      }
    }
  }
  times.sort_by(f64::total_cmp);
  println!(
    "{} messages, last 100 turns: median {:.3} ms, fastest {:.3} ms ({} turns)",
    messages.len(),
    times[times.len() / 2],
    times[0],
    times.len()
  );
  Ok(())
}

fn main() -> ExitCode {
  common::exit("window_turns", run())
}
