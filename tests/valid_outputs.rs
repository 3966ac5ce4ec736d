//! The invariant of every strategy, on the real transcripts: a valid input gives a valid output,
//! whatever the budget. Add each new strategy to `strategies()`.

use context_trim::model::message::Role;
use context_trim::output::repair::repair;
use context_trim::output::validate::{validate, validate_plan};
use context_trim::strategy::age::trim_by_age;
use context_trim::strategy::dedup::{deduplicate, DedupOptions};
use context_trim::strategy::pruner::{prune, PrunerConfig};
use context_trim::strategy::roles::{apply_max_context_tokens, MaxContextOptions};
use context_trim::strategy::summarized::{trim_with_summary, SummaryOptions};
use context_trim::{Conversation, Encoding, Format, Plan};

mod common;
use common::transcripts;

/// A function from (conversation, budget) to a plan.
type Run = Box<dyn Fn(&Conversation<'_>, usize) -> Plan>;
/// A strategy under test, with a name.
type Strategy = (&'static str, Run);

fn strategies() -> Vec<Strategy> {
  let max = |options: MaxContextOptions| -> Run {
    Box::new(move |conv, budget| apply_max_context_tokens(conv, budget, &options))
  };
  vec![
    ("applyMaxContextTokens oldest-first", max(MaxContextOptions::default())),
    (
      "applyMaxContextTokens assistant, user, system",
      max(MaxContextOptions {
        drop_order: vec![Role::Assistant, Role::User, Role::System],
        ..Default::default()
      }),
    ),
    (
      "applyMaxContextTokens tool, user + keepFirstSystem + minKeep",
      max(MaxContextOptions {
        drop_order: vec![Role::Tool, Role::User],
        keep_first_system: true,
        min_keep: vec![(Role::User, 1), (Role::Assistant, 2)],
      }),
    ),
    (
      "trimByAge with an inserted summary",
      Box::new(|conv, budget| {
        let options = SummaryOptions { max_tokens: 500, insert: true, reserve_max: false };
        trim_with_summary(conv, budget, &options, |t| trim_by_age(conv, t)).0.plan
      }),
    ),
    // The pruner's target is half the window: a window of twice the budget.
    (
      "ContextPruner.prune",
      Box::new(|conv, budget| prune(conv, &PrunerConfig::default(), budget * 2, false).plan),
    ),
    (
      "ContextPruner.prune emergency, keepRecentMessages 1",
      Box::new(|conv, budget| {
        let config = PrunerConfig { keep_recent_messages: 1, ..Default::default() };
        prune(conv, &config, budget * 2, true).plan
      }),
    ),
    (
      "deduplicateToolResults",
      Box::new(|conv, _| deduplicate(conv, &DedupOptions::default()).plan),
    ),
  ]
}

#[test]
fn every_transcript_validates_clean() {
  let all = transcripts();
  assert_eq!(all.len(), 7);
  for (name, messages) in &all {
    assert_eq!(validate(messages, Format::OpenAi), vec![], "{name}");
  }
}

#[test]
fn every_strategy_returns_a_valid_conversation_at_every_budget() {
  let mut runs = 0;
  for (name, messages) in transcripts() {
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    let total = conv.total_tokens();
    let budgets = [0, 500, 2_000, 8_000, total / 4, total / 2, total * 3 / 4, total - 1, total];
    for (strategy, run) in strategies() {
      for budget in budgets {
        let plan = run(&conv, budget);
        assert_eq!(
          validate_plan(&messages, &plan, Format::OpenAi),
          vec![],
          "{strategy} on {name} at {budget}"
        );
        assert_eq!(plan.check_units(&conv), Ok(()), "{strategy} on {name} at {budget}");
        assert!(!plan.is_dropped(messages.len() - 1), "{strategy} on {name} at {budget}");
        assert_eq!(run(&conv, budget), plan, "{strategy} on {name} at {budget}: deterministic");
        runs += 1;
      }
    }
  }
  assert_eq!(runs, 7 * 7 * 9);
}

#[test]
fn oldest_first_meets_every_budget_that_the_last_unit_allows() {
  for (name, messages) in transcripts() {
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    let last_unit = &conv.units()[conv.unit_of(messages.len() - 1)];
    let floor: usize = last_unit.members.iter().map(|&i| conv.tokens(i)).sum::<usize>() + 3;
    for budget in [floor, floor + 1_000, conv.total_tokens() / 2] {
      let plan = apply_max_context_tokens(&conv, budget, &MaxContextOptions::default());
      assert!(plan.total_tokens(&conv) <= budget, "{name} at {budget}");
      // Oldest-first: what is dropped is a prefix of the units.
      let dropped = plan.dropped();
      let first_kept = (0..messages.len()).find(|&i| !plan.is_dropped(i)).unwrap_or(0);
      assert!(dropped.iter().all(|&i| i < first_kept), "{name} at {budget}");
    }
  }
}

#[test]
fn removing_any_one_message_is_caught_and_repaired() {
  let mut broken = 0;
  for (name, messages) in transcripts() {
    for k in 0..messages.len() {
      let mut cut = messages.clone();
      let removed = cut.remove(k);
      let problems = validate(&cut, Format::OpenAi);
      // Removing a call orphans its results; removing a result leaves its call unanswered.
      let breaks_a_pair = removed.has_tool_calls() || removed.is_tool_result();
      assert_eq!(!problems.is_empty(), breaks_a_pair, "{name} without message {k}");
      let fixed = repair(&cut, Format::OpenAi);
      assert_eq!(validate_plan(&cut, &fixed.plan, Format::OpenAi), vec![], "{name} without {k}");
      assert_eq!(fixed.plan.dropped().len(), fixed.repairs.len(), "{name} without {k}");
      broken += usize::from(breaks_a_pair);
    }
  }
  assert!(broken > 200, "{broken}");
}
