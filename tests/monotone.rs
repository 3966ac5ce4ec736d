//! Issue 42, part 1: a smaller budget never gives a larger request. For `trimByPriority` and
//! `trimWithPlaceholders` (also with re-plan points, `replanEvery`), `trimByAge`,
//! `applyMaxContextTokens`, `trimConversation`'s rolling pass followed by each of its strategies, the cache-aware trimmer's priority strategies (its
//! `Strategy::plan`) and a fresh `CachePolicy`'s first trim in every strategy, on every bundled
//! transcript and on generated units of many parallel results (one assistant message calling
//! many tools, each with a large result, after a system prompt and a task, in OpenAI's format,
//! a tool message per result, and in Anthropic's, all the results in one user message), the
//! total at each budget of a decreasing sequence, from the full size down to 1, is at most the
//! total at the budget before it.
//!
//! `PROPTEST_CASES` raises the case count for a longer run.

mod common;

use context_trim::analysis::classify::ClassifyOptions;
use context_trim::model::format::parse_messages;
use context_trim::strategy::age::trim_by_age;
use context_trim::strategy::budget::{trim_after_rolling, Views};
use context_trim::strategy::cache_policy::{CachePolicy, CachePolicyOptions, Strategy as Policy};
use context_trim::strategy::priority::{trim_by_priority, trim_with_placeholders, PriorityOptions};
use context_trim::strategy::roles::{apply_max_context_tokens, MaxContextOptions};
use context_trim::strategy::rolling::TruncationConfig;
use context_trim::{Conversation, Encoding, Format, Message};
use proptest::prelude::*;
use serde_json::json;

/// A strategy under test: its name and the request's tokens at a budget.
type Total = (&'static str, fn(&Conversation<'_>, usize) -> usize);

fn options(target: usize) -> PriorityOptions {
  PriorityOptions { target_tokens: target, ..PriorityOptions::default() }
}

/// A fresh `CachePolicy`'s first trim with a window of `b` (at least 1) and `strategy`.
fn first_trim(conv: &Conversation<'_>, b: usize, strategy: Policy) -> usize {
  let options = CachePolicyOptions::new(b.max(1), strategy);
  CachePolicy::new(options).expect("valid options").step(conv).total_tokens
}

/// `trimConversation`: the rolling pass with its defaults (current views of files left whole),
/// then `strategy` at the budget when the request still does not fit.
fn after_rolling(
  conv: &Conversation<'_>,
  b: usize,
  strategy: fn(&Conversation<'_>, usize) -> context_trim::strategy::priority::PriorityTrim,
) -> usize {
  let classify = ClassifyOptions::default();
  let views = Views { classify: &classify, tracker: None };
  let rolling = TruncationConfig::default();
  trim_after_rolling(conv, &rolling, Some(views), b, |c| strategy(c, b)).outcome.total_tokens
}

const STRATEGIES: [Total; 16] = [
  ("trimByPriority", |conv, b| trim_by_priority(conv, None, &options(b)).outcome.total_tokens),
  ("trimWithPlaceholders", |conv, b| {
    trim_with_placeholders(conv, None, &options(b)).outcome.total_tokens
  }),
  ("cache-aware priority plan", |conv, b| {
    Policy::Priority(ClassifyOptions::default()).plan(conv, b).total_tokens(conv)
  }),
  ("cache-aware placeholders plan", |conv, b| {
    Policy::Placeholders(ClassifyOptions::default(), None).plan(conv, b).total_tokens(conv)
  }),
  ("trimByAge", |conv, b| trim_by_age(conv, b).total_tokens),
  ("trimConversation, priority", |conv, b| {
    after_rolling(conv, b, |c, b| trim_by_priority(c, None, &options(b)))
  }),
  ("trimConversation, placeholders", |conv, b| {
    after_rolling(conv, b, |c, b| trim_with_placeholders(c, None, &options(b)))
  }),
  ("trimConversation, age", |conv, b| {
    after_rolling(conv, b, |c, b| context_trim::strategy::priority::PriorityTrim {
      outcome: trim_by_age(c, b),
      classification: Vec::new(),
    })
  }),
  ("applyMaxContextTokens", |conv, b| {
    apply_max_context_tokens(conv, b, &MaxContextOptions::default()).total_tokens(conv)
  }),
  ("CachePolicy priority, first trim (window = budget)", |conv, b| {
    first_trim(conv, b, Policy::Priority(ClassifyOptions::default()))
  }),
  ("CachePolicy placeholders, first trim", |conv, b| {
    first_trim(conv, b, Policy::Placeholders(ClassifyOptions::default(), None))
  }),
  ("CachePolicy truncate, first trim", |conv, b| {
    first_trim(conv, b, Policy::Truncate(TruncationConfig::default()))
  }),
  ("CachePolicy roles, first trim", |conv, b| {
    let roles = MaxContextOptions { keep_first_system: true, ..MaxContextOptions::default() };
    first_trim(conv, b, Policy::Roles(roles))
  }),
  ("CachePolicy age, first trim", |conv, b| first_trim(conv, b, Policy::Age)),
  ("trimByPriority, replanEvery", |conv, b| {
    trim_by_priority(conv, None, &replanning(conv, b)).outcome.total_tokens
  }),
  ("trimWithPlaceholders, replanEvery", |conv, b| {
    trim_with_placeholders(conv, None, &replanning(conv, b)).outcome.total_tokens
  }),
];

/// [`options`] with re-plan points an eighth of the conversation apart: a step that does not
/// depend on the budget, as `replanEvery` is given in tokens.
fn replanning(conv: &Conversation<'_>, target: usize) -> PriorityOptions {
  PriorityOptions { replan_step: conv.total_tokens() / 8, ..options(target) }
}

/// The budgets from the full size of `conv` down to 1 in `steps` steps, then every budget of
/// the last `fine` tokens above 0 and of the `fine` below the first budget at which the request
/// stops being met (where a cliff would be).
fn budgets(conv: &Conversation<'_>, steps: usize, fine: usize) -> Vec<usize> {
  let full = conv.total_tokens();
  let mut out: Vec<usize> = (0..=steps).map(|k| (full * (steps - k) / steps).max(1)).collect();
  out.extend(1..=fine.min(full));
  let met = |b: usize| trim_by_priority(conv, None, &options(b)).outcome.total_tokens <= b;
  // The lowest budget met, found by bisection over the sequence's own bounds.
  let (mut lo, mut hi) = (1usize, full.max(1));
  if !met(lo) {
    while hi - lo > 1 {
      let mid = lo + (hi - lo) / 2;
      if met(mid) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    out.extend(hi.saturating_sub(fine).max(1)..=hi + fine);
  }
  out.sort_unstable_by(|a, b| b.cmp(a));
  out.dedup();
  out
}

/// Checks every strategy down `budgets`: the total never grows as the budget shrinks.
fn check(name: &str, conv: &Conversation<'_>, budgets: &[usize]) -> Result<(), String> {
  for (strategy, total) in STRATEGIES {
    let mut before: Option<(usize, usize)> = None;
    for &b in budgets {
      let now = total(conv, b);
      if let Some((larger, then)) = before {
        if now > then {
          return Err(format!(
            "{name}, {strategy}: {now} tokens at a budget of {b}, {then} at {larger}"
          ));
        }
      }
      before = Some((b, now));
    }
  }
  Ok(())
}

#[test]
fn on_every_transcript_a_smaller_budget_never_gives_a_larger_request() {
  for (name, messages) in common::transcripts() {
    for format in [Format::OpenAi, Format::Anthropic] {
      let conv = Conversation::new(&messages, Encoding::O200kBase).with_format(format);
      let budgets = budgets(&conv, 60, 40);
      if let Err(e) = check(&format!("{name} ({format:?})"), &conv, &budgets) {
        panic!("{e}");
      }
    }
  }
}

/// `n` numbered lines of a file `k`: about `lines` × 8 tokens.
fn file(k: usize, lines: usize) -> String {
  (0..lines).map(|l| format!("{l:4}\tlet value_{k}_{l} = compute({l}, \"f{k}\");\n")).collect()
}

/// A session of one step of `sizes.len()` parallel reads, each of `sizes[k]` lines, after a
/// system prompt of `system` lines and a task, in OpenAI's or Anthropic's format.
fn parallel_reads(system: usize, sizes: &[usize], anthropic: bool) -> (Vec<Message>, Format) {
  let prompt = "You are a coding agent. Read before you edit; run the tests.\n".repeat(system);
  let task = "Find where the configuration is loaded and fix the bug.";
  let path = |k: usize| format!("src/module_{k}.rs");
  let value = if anthropic {
    let calls: Vec<_> = (0..sizes.len())
      .map(|k| json!({"type": "tool_use", "id": format!("t{k}"), "name": "read_file", "input": {"path": path(k)}}))
      .collect();
    let results: Vec<_> = sizes
      .iter()
      .enumerate()
      .map(|(k, &n)| json!({"type": "tool_result", "tool_use_id": format!("t{k}"), "content": file(k, n)}))
      .collect();
    json!([
      {"role": "system", "content": prompt},
      {"role": "user", "content": task},
      {"role": "assistant", "content": calls},
      {"role": "user", "content": results},
    ])
  } else {
    let calls: Vec<_> = (0..sizes.len())
      .map(|k| json!({"id": format!("t{k}"), "type": "function", "function": {"name": "read_file", "arguments": json!({"path": path(k)}).to_string()}}))
      .collect();
    let mut messages = vec![
      json!({"role": "system", "content": prompt}),
      json!({"role": "user", "content": task}),
      json!({"role": "assistant", "content": null, "tool_calls": calls}),
    ];
    for (k, &n) in sizes.iter().enumerate() {
      messages
        .push(json!({"role": "tool", "tool_call_id": format!("t{k}"), "content": file(k, n)}));
    }
    json!(messages)
  };
  let format = if anthropic { Format::Anthropic } else { Format::OpenAi };
  match parse_messages(&value, Some(format)) {
    Ok((format, messages)) => (messages, format),
    Err(e) => panic!("the session reads: {e:?}"),
  }
}

proptest! {
  #![proptest_config(ProptestConfig {
    cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
    failure_persistence: None,
    ..ProptestConfig::default()
  })]

  /// Generated units of many parallel results: a smaller budget never gives a larger request.
  #[test]
  fn with_many_parallel_results_a_smaller_budget_never_gives_a_larger_request(
    system in 0..80usize,
    sizes in prop::collection::vec(20..160usize, 1..70),
    anthropic in any::<bool>(),
  ) {
    let (messages, format) = parallel_reads(system, &sizes, anthropic);
    let conv = Conversation::new(&messages, Encoding::O200kBase).with_format(format);
    let budgets = budgets(&conv, 40, 10);
    check(&format!("{} results, {system} system lines", sizes.len()), &conv, &budgets)
      .map_err(TestCaseError::fail)?;
  }
}
