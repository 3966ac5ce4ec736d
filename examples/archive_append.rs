//! Time of one prune's archive write as the archive grows: appends `--prunes N` prunes (default
//! 500) of 20 records of about 2 KB each to a scratch archive and prints the median write time
//! of the first and of the last tenth, with the archive's size. Appending costs what is
//! appended, so the two medians should be alike whatever the size.
//!
//! ```sh
//! cargo run --release --no-default-features --example archive_append -- [--prunes N]
//! ```

use std::process::ExitCode;
use std::time::Instant;

use context_trim::strategy::pruner::{write_archive, PrunerConfig};

fn median(mut times: Vec<f64>) -> f64 {
  times.sort_by(f64::total_cmp);
  times[times.len() / 2]
}

fn main() -> ExitCode {
  let args: Vec<String> = std::env::args().collect();
  let prunes = match args.iter().position(|a| a == "--prunes") {
    Some(i) => match args.get(i + 1).and_then(|n| n.parse::<usize>().ok()) {
      Some(n) if n >= 10 => n,
      _ => {
        eprintln!("--prunes wants an integer of at least 10");
        return ExitCode::FAILURE;
      }
    },
    None => 500,
  };
  let dir = std::env::temp_dir().join(format!("context-trim-archive-bench-{}", std::process::id()));
  let config = PrunerConfig {
    archive_path: dir.join("archive.md").display().to_string(),
    ..Default::default()
  };
  let text = "x".repeat(2_000);
  let messages: Vec<(usize, String)> =
    (0..20).map(|i| (i, format!("{{\"role\":\"tool\",\"content\":\"{text}\"}}"))).collect();
  let mut times = Vec::with_capacity(prunes);
  for _ in 0..prunes {
    let start = Instant::now();
    if let Err(e) = write_archive(&config, "2026-11-22T00:00:00.000Z", &messages, |n| {
      format!("# Context Archive {n}\n\n- Archived Items: 20\n")
    }) {
      eprintln!("{e}");
      return ExitCode::FAILURE;
    }
    times.push(start.elapsed().as_secs_f64() * 1e3);
  }
  let size = std::fs::metadata(config.sidecar_path()).map(|m| m.len()).unwrap_or(0);
  let tenth = prunes / 10;
  println!(
    "{prunes} prunes, sidecar {:.1} MB: median write {:.3} ms over the first {tenth}, {:.3} ms over the last {tenth}",
    size as f64 / 1e6,
    median(times[..tenth].to_vec()),
    median(times[prunes - tenth..].to_vec()),
  );
  let _ = std::fs::remove_dir_all(&dir);
  ExitCode::SUCCESS
}
