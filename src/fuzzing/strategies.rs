//! Every strategy as the harness runs it: as the binding calls it (its plan made to conform to
//! the conversation's format), how its options come from the knob bits, what it promises never
//! to drop or change (an oracle written from its documentation), and which invariants it
//! promises.

use crate::analysis::classify::{classify_conversation, ClassifyOptions};
use crate::model::conversation::Conversation;
use crate::model::cut::MIN_CUT_BUDGET;
use crate::model::message::{Message, Role};
use crate::plan::Plan;
use crate::strategy::age::trim_by_age;
use crate::strategy::anchored_units;
use crate::strategy::budget::trim_after_rolling;
use crate::strategy::dedup::{deduplicate, DedupOptions};
use crate::strategy::priority::{trim_by_priority, trim_with_placeholders, PriorityOptions};
use crate::strategy::pruner::{prune, PrunerConfig};
use crate::strategy::roles::{apply_max_context_tokens, MaxContextOptions};
use crate::strategy::rolling::{truncate_old_tool_outputs, TruncationConfig};

/// What a strategy promises about one message, whatever the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
  /// Nothing.
  Free,
  /// Returned, kept or replaced, never dropped.
  Returned,
  /// Returned as it is: never dropped nor replaced.
  Untouched,
}

/// What a strategy promises beyond what every strategy does (one decision per message, whole
/// units, guarded messages returned, valid output for valid input, determinism).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Promises {
  /// It only drops messages, never replaces them with placeholders.
  pub drops_only: bool,
  /// Within the budget it returns the input unchanged.
  pub unchanged_within_budget: bool,
  /// Over the budget after trimming, it returns nothing but guarded messages (and the user
  /// message a format that wants one first makes it keep, see [`Plan::conform`]).
  pub fits_unless_protected: bool,
  /// Running it again on its output changes nothing (when the output fits the budget, for a
  /// strategy with one).
  pub idempotent: bool,
  /// The one exception to `idempotent`, truncation's (docs/robustness.md, "Invariants"): a
  /// cut changes what an output holds (the referenced span may go, the marker may hold one),
  /// so a second run may truncate an output at or before the step of the first run's last cut.
  pub retruncates_before_cuts: bool,
  /// It never changes a tool result flagged as an error, even one beside others in a message
  /// whose results it shortens one by one.
  pub keeps_flagged_results: bool,
}

/// A strategy under test.
pub struct Strategy {
  /// Its name, as the Rust function is called.
  pub name: &'static str,
  /// Runs it on a conversation with a budget in tokens and option bits.
  pub run: fn(&Conversation<'_>, usize, u64) -> Plan,
  /// What it promises about each message for the options these bits give.
  pub guards: fn(&Conversation<'_>, u64) -> Vec<Guard>,
  /// What else it promises.
  pub promises: Promises,
}

const BUDGETED: Promises = Promises {
  drops_only: true,
  unchanged_within_budget: true,
  fits_unless_protected: true,
  idempotent: true,
  retruncates_before_cuts: false,
  keeps_flagged_results: false,
};

/// Every strategy of the crate.
pub const STRATEGIES: &[Strategy] = &[
  Strategy {
    name: "apply_max_context_tokens",
    run: |conv, budget, bits| {
      conformed(conv, apply_max_context_tokens(conv, budget, &max_context_options(bits)))
    },
    guards: max_context_guards,
    promises: BUDGETED,
  },
  Strategy {
    name: "trim_by_age",
    run: |conv, budget, _| trim_by_age(conv, budget).plan,
    guards: age_guards,
    promises: BUDGETED,
  },
  Strategy {
    name: "trim_by_priority",
    run: |conv, budget, bits| {
      trim_by_priority(conv, None, &priority_options(budget, bits)).outcome.plan
    },
    guards: priority_guards,
    // Cuts a unit's results rather than dropping it when that frees enough.
    promises: Promises { drops_only: false, ..BUDGETED },
  },
  Strategy {
    name: "trim_with_placeholders",
    run: |conv, budget, bits| {
      trim_with_placeholders(conv, None, &priority_options(budget, bits)).outcome.plan
    },
    guards: priority_guards,
    promises: Promises { drops_only: false, ..BUDGETED },
  },
  Strategy {
    name: "trim_after_rolling",
    run: |conv, budget, bits| {
      let priority = priority_options(budget, bits);
      let rolling = truncation_config(bits >> 6);
      let strategy = |c: &Conversation<'_>| trim_by_priority(c, None, &priority);
      trim_after_rolling(conv, &rolling, None, budget, strategy).outcome.plan
    },
    guards: priority_guards,
    promises: Promises { drops_only: false, ..BUDGETED },
  },
  Strategy {
    name: "truncate_old_tool_outputs",
    run: |conv, _, bits| conformed(conv, truncate_old_tool_outputs(conv, &truncation_config(bits))),
    guards: truncation_guards,
    promises: Promises { retruncates_before_cuts: true, keeps_flagged_results: true, ..REWRITES },
  },
  Strategy {
    name: "deduplicate",
    run: |conv, budget, bits| {
      // Half the time always, half the time from a threshold at the budget.
      let threshold_tokens = (bits & 1 == 1).then_some(budget);
      deduplicate(conv, &DedupOptions { threshold_tokens, ..DedupOptions::default() }).plan
    },
    guards: dedup_guards,
    promises: Promises { keeps_flagged_results: true, ..REWRITES },
  },
  Strategy {
    name: "prune",
    run: |conv, budget, bits| prune(conv, &pruner_config(bits), budget, false).plan,
    guards: pruner_guards,
    promises: BUDGETED,
  },
];

/// What a strategy that rewrites tool results in place (no budget) promises.
const REWRITES: Promises = Promises {
  drops_only: false,
  unchanged_within_budget: false,
  fits_unless_protected: false,
  idempotent: true,
  retruncates_before_cuts: false,
  keeps_flagged_results: false,
};

/// The plan as the binding returns it (see [`Plan::conform`]).
fn conformed(conv: &Conversation<'_>, mut plan: Plan) -> Plan {
  plan.conform(conv);
  plan
}

/// Reads option values from knob bits, a few bits at a time.
pub(super) struct Bits(pub(super) u64);

impl Bits {
  /// The next `n` bits (n < 64) as a number.
  pub(super) fn take(&mut self, n: u32) -> u64 {
    let v = self.0 & ((1 << n) - 1);
    self.0 = self.0.rotate_right(n);
    v
  }

  fn flag(&mut self) -> bool {
    self.take(1) == 1
  }
}

/// `applyMaxContextTokens` options from bits: up to five roles in a drop order, `keepFirstSystem`,
/// and a `minKeep` of 0 to 3 for each role.
pub(crate) fn max_context_options(bits: u64) -> MaxContextOptions {
  let mut b = Bits(bits);
  let mut pool = Role::ALL.to_vec();
  let mut drop_order = Vec::new();
  for _ in 0..b.take(3) % 6 {
    let k = b.take(3) as usize % pool.len();
    drop_order.push(pool.remove(k));
  }
  let keep_first_system = b.flag();
  let min_keep = Role::ALL
    .iter()
    .filter_map(|&role| if b.flag() { Some((role, b.take(2) as usize)) } else { None })
    .collect();
  MaxContextOptions { drop_order, keep_first_system, min_keep }
}

/// Priority options from bits: `preserveRecentTurns` and the recent threshold, 0 to 7 each.
pub(super) fn priority_options(target_tokens: usize, bits: u64) -> PriorityOptions {
  let mut b = Bits(bits);
  let classify = ClassifyOptions {
    preserve_recent_turns: b.take(3) as usize,
    recent_threshold: b.take(3) as usize,
    ..ClassifyOptions::default()
  };
  PriorityOptions { target_tokens, classify, ..PriorityOptions::default() }
}

/// Rolling-context configuration from bits: `maxAge` 0–7, `maxTokensPerOutput` from the
/// minimum up, `smallOutputTokens` 0–255, `minQuotedChars` 1–64.
pub(super) fn truncation_config(bits: u64) -> TruncationConfig {
  let mut b = Bits(bits);
  TruncationConfig {
    max_age: b.take(3) as usize,
    max_tokens_per_output: MIN_CUT_BUDGET + b.take(9) as usize,
    small_output_tokens: b.take(8) as usize,
    min_quoted_chars: 1 + b.take(6) as usize,
    ..TruncationConfig::default()
  }
}

/// A pruner configuration from bits: `keepRecentMessages` 0–7, and a target of the whole
/// window (the budget is passed as the window).
fn pruner_config(bits: u64) -> PrunerConfig {
  PrunerConfig {
    keep_recent_messages: Bits(bits).take(3) as usize,
    target_percentage: 100.0,
    ..PrunerConfig::default()
  }
}

/// Guards of every member of the units of `anchors`.
fn unit_guards(
  conv: &Conversation<'_>,
  anchors: impl IntoIterator<Item = usize>,
  guard: Guard,
) -> Vec<Guard> {
  let mut guards = vec![Guard::Free; conv.len()];
  for i in anchors {
    for &j in &conv.units()[conv.unit_of(i)].members {
      guards[j] = guard;
    }
  }
  guards
}

/// What `applyMaxContextTokens` never drops (docs/max-context-tokens.md, rule 3): the unit of
/// the last message; with `keepFirstSystem` the unit of the first system or developer message;
/// with `minKeep` the units of the last n messages of each role.
fn max_context_guards(conv: &Conversation<'_>, bits: u64) -> Vec<Guard> {
  let options = max_context_options(bits);
  let messages = conv.messages();
  let mut anchors = Vec::new();
  anchors.extend(messages.len().checked_sub(1));
  if options.keep_first_system {
    anchors.extend(messages.iter().position(|m| m.role.is_instruction()));
  }
  for &(role, n) in &options.min_keep {
    let last = messages.iter().enumerate().rev().filter(|(_, m)| m.role == role).take(n);
    anchors.extend(last.map(|(i, _)| i));
  }
  unit_guards(conv, anchors, Guard::Returned)
}

/// What `trimByAge` never drops: the units holding a system or developer message or the last
/// message.
fn age_guards(conv: &Conversation<'_>, _: u64) -> Vec<Guard> {
  let messages = conv.messages();
  let anchors =
    (0..messages.len()).filter(|&i| i + 1 == messages.len() || messages[i].role.is_instruction());
  unit_guards(conv, anchors, Guard::Returned)
}

/// What the priority strategies never drop: the [`anchored_units`] (system and developer
/// messages, the last message's unit). Any of their members may be cut to head and tail (the
/// system messages last of all) when they alone exceed the budget.
fn priority_guards(conv: &Conversation<'_>, _: u64) -> Vec<Guard> {
  let anchored = anchored_units(conv);
  unit_guards(conv, (0..conv.len()).filter(|&i| anchored[conv.unit_of(i)]), Guard::Returned)
}

/// The units holding a message of a tier the seed never drops (system, agent instructions,
/// the current task, the latest results about modified files): what the pruner keeps.
fn protected_guards(conv: &Conversation<'_>, options: &ClassifyOptions) -> Vec<Guard> {
  let classification = classify_conversation(conv, None, options);
  let anchors =
    classification.iter().enumerate().filter(|(_, c)| c.priority.is_protected()).map(|(i, _)| i);
  unit_guards(conv, anchors, Guard::Untouched)
}

/// What `truncateOldToolOutputs` promises: nothing is dropped; messages that are not tool
/// results, and results flagged as errors, are untouched (a message whose results are apart,
/// when each of them is flagged: the others are shortened on their own).
fn truncation_guards(conv: &Conversation<'_>, _: u64) -> Vec<Guard> {
  let flagged = |m: &Message| match m.has_results_apart() {
    true => m.split_results().iter().all(|r| r.is_error),
    false => m.is_error,
  };
  conv
    .messages()
    .iter()
    .map(|m| if m.is_tool_result() && !flagged(m) { Guard::Returned } else { Guard::Untouched })
    .collect()
}

/// What the deduplication never touches: messages that are not tool results and results
/// flagged as errors (of a message of several results, those; the others may be replaced).
fn dedup_guards(conv: &Conversation<'_>, _: u64) -> Vec<Guard> {
  conv
    .messages()
    .iter()
    .map(|m| {
      let several = m.answers.len() > 1;
      if m.is_tool_result() && (several || !m.is_error) {
        Guard::Returned
      } else {
        Guard::Untouched
      }
    })
    .collect()
}

/// What the pruner always keeps: what the priority trimmer never drops (default
/// classification), and the units of the last `keepRecentMessages` messages.
fn pruner_guards(conv: &Conversation<'_>, bits: u64) -> Vec<Guard> {
  let config = pruner_config(bits);
  let mut guards = protected_guards(conv, &ClassifyOptions::default());
  for (g, a) in guards.iter_mut().zip(priority_guards(conv, bits)) {
    if *g == Guard::Free {
      *g = a;
    }
  }
  let recent = conv.len().saturating_sub(config.keep_recent_messages)..conv.len();
  for (j, g) in unit_guards(conv, recent, Guard::Returned).into_iter().enumerate() {
    if guards[j] == Guard::Free {
      guards[j] = g;
    }
  }
  guards
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn option_bits_cover_every_option() {
    assert_eq!(max_context_options(0), MaxContextOptions::default());
    let all = max_context_options(u64::MAX);
    assert_eq!(all.drop_order.len(), 1);
    assert!(all.keep_first_system);
    assert_eq!(all.min_keep, Role::ALL.iter().map(|&r| (r, 3)).collect::<Vec<_>>());
    // Five roles listed, each once.
    let five = max_context_options(0b101);
    assert_eq!(five.drop_order, Role::ALL.to_vec());
    let config = truncation_config(u64::MAX);
    assert_eq!((config.max_age, config.max_tokens_per_output), (7, MIN_CUT_BUDGET + 511));
    assert_eq!((config.small_output_tokens, config.min_quoted_chars), (255, 64));
    assert_eq!(priority_options(9, 0b111_010).classify.preserve_recent_turns, 2);
  }
}
