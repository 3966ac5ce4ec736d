//! Time of the core `simulate` on a session file, one policy at a time (no napi, no CLI): the
//! simulator's and the strategies' own work, for profiling.
//!
//! ```sh
//! cargo run --release --no-default-features --example simulate_policies -- session.json [--window N] [--policies every-turn,high-low]
//! ```

use std::process::ExitCode;
use std::time::Instant;

use context_trim::simulate::{simulate, PolicyKind, Pricing, SimulateOptions};
use context_trim::strategy::cache_policy::{CachePolicyOptions, Strategy};
use context_trim::{Encoding, Message};

mod common;

fn run() -> Result<(), String> {
  let mut file = None;
  let mut window = 128_000usize;
  let mut policies = PolicyKind::ALL.to_vec();
  let mut it = std::env::args().skip(1);
  while let Some(arg) = it.next() {
    match arg.as_str() {
      "--window" => window = common::positive(&mut it, "--window")?,
      "--policies" => {
        let list = it.next().ok_or("--policies needs a list")?;
        policies = list
          .split(',')
          .map(|p| PolicyKind::parse(p, "--policies").map_err(|e| e.to_string()))
          .collect::<Result<_, _>>()?;
      }
      _ if file.is_none() => file = Some(arg),
      other => return Err(format!("unexpected argument {other:?}")),
    }
  }
  let file = file.ok_or("usage: simulate_policies <session.json> [--window N] [--policies L]")?;
  let (format, messages) = common::read_session(&file)?;
  let refs: Vec<&Message> = messages.iter().collect();
  for kind in policies {
    let options = SimulateOptions {
      policy: CachePolicyOptions::new(window, Strategy::Priority(Default::default())),
      every_turn_budget: window,
      pricing: Pricing::ANTHROPIC,
      policies: vec![kind],
      encoding: Encoding::O200kBase,
      format,
    };
    let start = Instant::now();
    let sim = simulate(&refs, &options).map_err(|e| e.to_string())?;
    let run = &sim.runs[0];
    println!(
      "{:<10} {:>9.3} s  turns {}  cost {:.4}  replans {}",
      kind.as_str(),
      start.elapsed().as_secs_f64(),
      run.turns.len(),
      run.totals.cost,
      run.totals.replans
    );
  }
  Ok(())
}

fn main() -> ExitCode {
  common::exit("simulate_policies", run())
}
