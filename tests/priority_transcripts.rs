//! Priority trimming on the real transcripts: invariants at 25%, 50% and 75% of each one's
//! size, and the per-tier figures that docs/priority-trimming.md shows.

use context_trim::classify::{ClassifyOptions, ContentPriority};
use context_trim::plan::Action;
use context_trim::strategy::priority::{
  placeholder, trim_by_priority, trim_order, trim_with_placeholders, PriorityOptions, PriorityTrim,
};
use context_trim::{Conversation, Encoding, FileTracker};

mod common;
use common::transcripts;

fn options(target: usize) -> PriorityOptions {
  PriorityOptions { target_tokens: target, classify: ClassifyOptions::default(), placeholder: None }
}

/// 0 kept, 1 shortened (some result replaced), 2 removed: of one unit under a plan.
fn severity(conv: &Conversation<'_>, t: &PriorityTrim, u: usize) -> u8 {
  let members = &conv.units()[u].members;
  if members.iter().all(|&i| t.outcome.plan.is_dropped(i)) {
    2
  } else if members.iter().any(|&i| matches!(t.outcome.plan.action(i), Action::Replace(_))) {
    1
  } else {
    0
  }
}

fn has_results(conv: &Conversation<'_>, u: usize) -> bool {
  conv.units()[u].members.iter().any(|&i| conv.messages()[i].is_tool_result())
}

/// Whether some tool result of unit `u` has a placeholder smaller than itself.
fn shrinkable(conv: &Conversation<'_>, t: &PriorityTrim, tracker: &FileTracker, u: usize) -> bool {
  conv.units()[u].members.iter().any(|&i| {
    conv.messages()[i].is_tool_result()
      && placeholder(conv, i, &t.classification[i], tracker, None).tokens < conv.tokens(i)
  })
}

#[test]
fn invariants_hold_on_every_transcript_at_every_budget() {
  let mut over = 0;
  for (name, msgs) in transcripts() {
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let tracker = FileTracker::from_conversation(&conv, 0.0);
    for share in [25, 50, 75] {
      let target = conv.total_tokens() * share / 100;
      for (strategy, t) in [
        ("by priority", trim_by_priority(&conv, None, &options(target))),
        ("with placeholders", trim_with_placeholders(&conv, None, &options(target))),
      ] {
        let label = format!("{name} {share}% {strategy}");
        let plan = &t.outcome.plan;
        assert!(plan.check_units(&conv).is_ok(), "{label}");
        assert_eq!(t.outcome.total_tokens, plan.total_tokens(&conv), "{label}");
        let order = trim_order(&conv, &t.classification);
        // Protected units are untouched; their tokens decide whether the budget can be met.
        let mut protected_tokens = 3;
        for u in (0..conv.units().len()).filter(|u| !order.contains(u)) {
          for &i in &conv.units()[u].members {
            assert_eq!(plan.action(i), &Action::Keep, "{label}: protected {i}");
            protected_tokens += conv.tokens(i);
          }
        }
        assert_eq!(t.outcome.over_budget, protected_tokens > target, "{label}");
        assert_eq!(t.outcome.over_budget, t.outcome.total_tokens > target, "{label}");
        if t.outcome.over_budget {
          over += 1;
          assert!(order.iter().all(|&u| severity(&conv, &t, u) == 2), "{label}: all removed");
        }
        // Lower units are always treated at least as harshly: kept units come last, and no
        // tool unit is removed while a lower one is only shortened. A tool unit whose results
        // are already smaller than their placeholders counts as shortened.
        let sev: Vec<u8> = order
          .iter()
          .map(|&u| match severity(&conv, &t, u) {
            0 if strategy == "with placeholders"
              && has_results(&conv, u)
              && !shrinkable(&conv, &t, &tracker, u) =>
            {
              1
            }
            s => s,
          })
          .collect();
        let first_kept = sev.iter().position(|&s| s == 0).unwrap_or(sev.len());
        assert!(sev[first_kept..].iter().all(|&s| s == 0), "{label}: {sev:?}");
        let tool_sev: Vec<u8> =
          order.iter().zip(&sev).filter(|(&u, _)| has_results(&conv, u)).map(|(_, &s)| s).collect();
        assert!(tool_sev.windows(2).all(|w| w[0] >= w[1]), "{label}: {tool_sev:?}");
        // Nothing is taken that was not needed: restoring the highest unit taken goes over.
        if let Some(&last) = order.iter().rev().find(|&&u| severity(&conv, &t, u) > 0) {
          let members = &conv.units()[last].members;
          let now: usize = members.iter().map(|&i| plan.tokens_of(&conv, i)).sum();
          let whole: usize = members.iter().map(|&i| conv.tokens(i)).sum();
          assert!(t.outcome.total_tokens - now + whole > target, "{label}: unit {last} not needed");
        }
      }
    }
  }
  assert!(over > 0, "some budgets cannot be met on the real transcripts");
}

/// Per tier: messages and tokens before, then kept as they were, replaced by a placeholder and
/// removed, and the tokens after.
fn tiers(conv: &Conversation<'_>, t: &PriorityTrim) -> Vec<(&'static str, [usize; 6])> {
  ContentPriority::ALL
    .iter()
    .rev()
    .map(|&p| {
      let idx: Vec<usize> =
        (0..conv.len()).filter(|&i| t.classification[i].priority == p).collect();
      let plan = &t.outcome.plan;
      let count = |f: &dyn Fn(&Action) -> bool| idx.iter().filter(|&&i| f(plan.action(i))).count();
      (
        p.name(),
        [
          idx.len(),
          idx.iter().map(|&i| conv.tokens(i)).sum(),
          count(&|a| matches!(a, Action::Keep)),
          count(&|a| matches!(a, Action::Replace(_))),
          count(&|a| matches!(a, Action::Drop)),
          idx.iter().map(|&i| plan.tokens_of(conv, i)).sum(),
        ],
      )
    })
    .collect()
}

#[test]
fn the_documented_tiers_of_i_got_id_at_half_its_size() {
  let (_, msgs) =
    transcripts().into_iter().find(|(n, _)| n == "sweagent-ctf-i-got-id.json").expect("transcript");
  let conv = Conversation::new(&msgs, Encoding::O200kBase);
  assert_eq!(conv.total_tokens(), 14091);
  let target = conv.total_tokens() / 2;
  assert_eq!(target, 7045);
  let by_priority = trim_by_priority(&conv, None, &options(target));
  let with_placeholders = trim_with_placeholders(&conv, None, &options(target));
  //                       [msgs, tokens, kept, replaced, removed, tokens after]
  assert_eq!(
    tiers(&conv, &by_priority),
    vec![
      ("SYSTEM", [1, 1428, 1, 0, 0, 1428]),
      ("AGENT_INSTRUCTIONS", [0, 0, 0, 0, 0, 0]),
      ("CURRENT_TASK", [1, 566, 1, 0, 0, 566]),
      ("MODIFIED_FILES", [4, 738, 4, 0, 0, 738]),
      ("RECENT_TURNS", [7, 1704, 7, 0, 0, 1704]),
      ("RECENT_FILE_READS", [0, 0, 0, 0, 0, 0]),
      ("OLD_HISTORY", [0, 0, 0, 0, 0, 0]),
      ("STALE_TOOL_OUTPUTS", [30, 9652, 6, 0, 24, 2130]),
      ("SUMMARIZED", [0, 0, 0, 0, 0, 0]),
    ]
  );
  assert_eq!((by_priority.outcome.total_tokens, by_priority.outcome.saved_tokens), (6569, 7522));
  assert_eq!(
    tiers(&conv, &with_placeholders),
    vec![
      ("SYSTEM", [1, 1428, 1, 0, 0, 1428]),
      ("AGENT_INSTRUCTIONS", [0, 0, 0, 0, 0, 0]),
      ("CURRENT_TASK", [1, 566, 1, 0, 0, 566]),
      ("MODIFIED_FILES", [4, 738, 4, 0, 0, 738]),
      ("RECENT_TURNS", [7, 1704, 6, 1, 0, 1323]),
      ("RECENT_FILE_READS", [0, 0, 0, 0, 0, 0]),
      ("OLD_HISTORY", [0, 0, 0, 0, 0, 0]),
      ("STALE_TOOL_OUTPUTS", [30, 9652, 15, 15, 0, 2883]),
      ("SUMMARIZED", [0, 0, 0, 0, 0, 0]),
    ]
  );
  assert_eq!(
    (with_placeholders.outcome.total_tokens, with_placeholders.outcome.saved_tokens),
    (6941, 7150)
  );
  assert!(!by_priority.outcome.over_budget && !with_placeholders.outcome.over_budget);
}

#[test]
fn the_documented_over_budget_case_of_ponyc_4595_at_half_its_size() {
  let (_, msgs) =
    transcripts().into_iter().find(|(n, _)| n == "openhands-ponyc-4595.json").expect("transcript");
  let conv = Conversation::new(&msgs, Encoding::O200kBase);
  assert_eq!(conv.total_tokens(), 29476);
  for t in [
    trim_by_priority(&conv, None, &options(conv.total_tokens() / 2)),
    trim_with_placeholders(&conv, None, &options(conv.total_tokens() / 2)),
  ] {
    let modified = tiers(&conv, &t).into_iter().find(|(n, _)| *n == "MODIFIED_FILES");
    assert_eq!(modified, Some(("MODIFIED_FILES", [16, 23283, 16, 0, 0, 23283])));
    assert!(t.outcome.over_budget);
    assert_eq!(t.outcome.total_tokens, 25787);
  }
}
