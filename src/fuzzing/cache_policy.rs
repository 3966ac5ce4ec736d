//! The [`CachePolicy`] (`CacheAwareTrimmer`) as the harness runs it: stateful, so it is stepped
//! through every prefix of the conversation (a history growing one message at a time, as an
//! agent's does), then given the whole conversation again and a shorter one (a rewritten
//! history). The rules checked are those of docs/prompt-caching-policy.md.

use crate::model::conversation::Conversation;
use crate::model::format::Format;
use crate::model::message::Message;
use crate::output::validate::{validate, validate_plan};
use crate::plan::{Action, Plan};
use crate::strategy::cache_policy::{
  default_clear_at_least, CachePolicy, CachePolicyOptions, Decision, PolicyStep, Strategy,
};

use super::strategies::{max_context_options, priority_options, truncation_config, Bits};
use super::{ensure, restored_units, restored_with_tokens, Knobs, Violation};

const SUBJECT: &str = "cache_policy";

/// Policy options from knob bits: the strategy (one of five, its own options from the bits
/// left), `highWater` in (0, 1] by 32nds, `lowWater` a fraction of it by 15ths (0 to
/// `highWater`), and `clearAtLeast` 0, the default, a quarter of the window or the whole
/// window. The window is the knobs' budget for the whole conversation (at least 1).
pub fn cache_policy_options(window: usize, bits: u64) -> CachePolicyOptions {
  let mut b = Bits(bits);
  let context_window = window.max(1);
  let strategy_pick = b.take(3) % 5;
  let high_water = (1 + b.take(5)) as f64 / 32.0;
  let low_water = high_water * b.take(4) as f64 / 15.0;
  let clear_at_least = match b.take(2) {
    0 => 0,
    1 => default_clear_at_least(context_window),
    2 => context_window / 4,
    _ => context_window,
  };
  let keep_task = b.take(1) == 1;
  let rest = b.0;
  let strategy = match strategy_pick {
    0 => Strategy::Priority(priority_options(0, rest).classify),
    1 => Strategy::Placeholders(priority_options(0, rest).classify, None),
    2 => Strategy::Truncate(truncation_config(rest)),
    3 => Strategy::Roles(max_context_options(rest)),
    _ => Strategy::Age,
  };
  CachePolicyOptions { context_window, high_water, low_water, clear_at_least, strategy, keep_task }
}

/// Steps a fresh policy through `messages[..1]`, `messages[..2]`, …, the whole conversation,
/// the whole conversation again and its first half, returning every step.
fn run(
  messages: &[Message],
  format: Format,
  knobs: &Knobs,
  options: &CachePolicyOptions,
) -> Vec<PolicyStep> {
  let Ok(mut policy) = CachePolicy::new(options.clone()) else { return Vec::new() };
  let n = messages.len();
  let mut ends: Vec<usize> = (1..=n).collect();
  if n > 0 {
    ends.push(n);
    ends.push(n / 2);
  }
  ends
    .into_iter()
    .map(|end| {
      policy.step(&Conversation::new(&messages[..end], knobs.encoding).with_format(format))
    })
    .collect()
}

/// Runs a [`CachePolicy`] with options from `knobs` (see [`cache_policy_options`]) over the
/// growing conversation and checks, on every step: one decision per message; units whole; the
/// step's figures consistent with its plan; the decision rule (`kept` at most the high-water
/// mark, `deferred` above it but within the window, `trimmed` freeing at least
/// `clearAtLeast`, `forced` over the window freeing less); a re-plan down to the low-water mark
/// and within the window unless only what it never drops is left (instruction units, the last
/// unit, the user message a format wants first); the last message sent on every step;
/// earlier decisions standing (a dropped message stays dropped, a placeholder keeps its text)
/// and, without a re-plan, the previous request's decisions unchanged (a byte-stable prefix);
/// valid output for a valid prefix; the whole conversation again kept as it was; a shorter
/// history a reset; and the same steps from a fresh policy on fresh copies.
///
/// # Errors
///
/// The first [`Violation`] found.
pub fn check_cache_policy(
  messages: &[Message],
  format: Format,
  knobs: &Knobs,
) -> Result<(), Violation> {
  let total = Conversation::new(messages, knobs.encoding).total_tokens();
  let options = cache_policy_options(knobs.budget_for(total), knobs.bits);
  ensure(options.validate().is_ok(), SUBJECT, "options from bits are valid", || {
    format!("{options:?}: {:?}", options.validate())
  })?;
  let steps = run(messages, format, knobs, &options);
  let n = messages.len();
  let mut previous: Option<&PolicyStep> = None;
  for (k, step) in steps.iter().enumerate() {
    let end = step.plan.actions().len();
    let expected_end = if k < n {
      k + 1
    } else if k == n {
      n
    } else {
      n / 2
    };
    ensure(end == expected_end, SUBJECT, "one decision per message", || {
      format!("{end} decisions for {expected_end} messages")
    })?;
    let prefix = &messages[..end];
    let conv = Conversation::new(prefix, knobs.encoding).with_format(format);
    check_step(&conv, prefix, format, &options, step, previous).map_err(|mut v| {
      v.detail = format!("step {k} ({end} messages, {:?}): {}", step.decision, v.detail);
      v
    })?;
    previous = Some(step);
  }
  if let [.., last, again, half] = steps.as_slice() {
    if last.total_tokens <= options.high_tokens() {
      ensure(
        again.decision == Decision::Kept && !again.reset && again.plan == last.plan,
        SUBJECT,
        "the same conversation again is kept as it was",
        || format!("{:?} (reset {}) after {:?}", again.decision, again.reset, last.decision),
      )?;
    }
    ensure(
      half.reset && half.estimate_tokens == half.input_tokens,
      SUBJECT,
      "a shorter history resets",
      || {
        format!("reset {}, estimate {} of {}", half.reset, half.estimate_tokens, half.input_tokens)
      },
    )?;
  }
  let copies = messages.to_vec();
  ensure(run(&copies, format, knobs, &options) == steps, SUBJECT, "deterministic", || {
    "a fresh policy on fresh copies of the messages gave other steps".into()
  })?;
  Ok(())
}

fn check_step(
  conv: &Conversation<'_>,
  prefix: &[Message],
  format: Format,
  options: &CachePolicyOptions,
  step: &PolicyStep,
  previous: Option<&PolicyStep>,
) -> Result<(), Violation> {
  let plan = &step.plan;
  let (high, low, window) = (options.high_tokens(), options.low_tokens(), options.context_window);
  ensure(plan.check_units(conv).is_ok(), SUBJECT, "units dropped or kept whole", || {
    plan.check_units(conv).err().unwrap_or_default()
  })?;
  let total = plan.total_tokens(conv);
  ensure(
    step.total_tokens == total
      && step.input_tokens == conv.total_tokens()
      && step.freed_tokens == step.estimate_tokens.saturating_sub(total)
      && step.over_window == (total > window),
    SUBJECT,
    "the figures are the plan's",
    || format!("{step:?} for a plan of {total} tokens, input {}", conv.total_tokens()),
  )?;
  let (estimate, freed) = (step.estimate_tokens, step.freed_tokens);
  let rule = match step.decision {
    Decision::Kept => estimate <= high && total == estimate,
    Decision::Deferred => estimate > high && estimate <= window && total == estimate,
    Decision::Trimmed => estimate > high && freed >= options.clear_at_least,
    Decision::Forced => estimate > window && freed < options.clear_at_least,
  };
  ensure(rule, SUBJECT, "the decision follows the marks", || {
    format!(
      "estimate {estimate}, total {total}, freed {freed}; high {high}, window {window}, clear {}",
      options.clear_at_least
    )
  })?;
  if let Some(last) = conv.len().checked_sub(1) {
    ensure(!plan.is_dropped(last), SUBJECT, "every step sends the last message", || {
      format!("dropped {:?}", plan.dropped())
    })?;
  }
  if step.decision.replanned() {
    let free = droppable_units_returned(conv, plan, options);
    let (restored, restored_tokens) = restored_with_tokens(conv, plan);
    let free: Vec<usize> = free.into_iter().filter(|u| !restored.contains(u)).collect();
    ensure(
      free.is_empty() || total - restored_tokens <= low,
      SUBJECT,
      "a re-plan reaches the low-water mark unless only protected is left",
      || format!("{total} tokens over low water {low}, yet units {free:?} are returned"),
    )?;
    // The user message a format wants first takes the request over the window only when it
    // is larger than the room between the low-water mark and the window.
    ensure(
      total <= window || free.is_empty() || restored_tokens > window - low,
      SUBJECT,
      "within the window unless only protected is left",
      || format!("{total} tokens over the window {window}, yet units {free:?} are returned"),
    )?;
  }
  if let Some(before) = previous.filter(|_| !step.reset) {
    check_recall(conv, plan, &before.plan, step.decision)?;
  }
  if validate(prefix, format).is_empty() {
    let problems = validate_plan(prefix, plan, format);
    ensure(problems.is_empty(), SUBJECT, "valid input gives valid output", || {
      format!("{}: {problems:?}", format.as_str())
    })?;
  }
  Ok(())
}

/// Earlier decisions stand: what `before` dropped is dropped, what it replaced keeps its
/// replacement or is dropped; without a re-plan every earlier decision is the same. Every step
/// sends the last message's unit whole (a dropped call whose result arrives last comes back),
/// and in a format that wants a user message first a re-plan may bring back a dropped one.
fn check_recall(
  conv: &Conversation<'_>,
  plan: &Plan,
  before: &Plan,
  decision: Decision,
) -> Result<(), Violation> {
  let common = before.actions().len().min(plan.actions().len());
  // Every step sends the last unit, and a re-plan the user message a format wants first,
  // whatever was decided for them before.
  let last_unit = conv.len().checked_sub(1).map(|last| conv.unit_of(last));
  let brought_back = restored_units(conv, plan);
  // A new message answering calls of two units joins them: a message kept with one follows
  // the other's earlier drop (input no provider accepts; see docs/robustness.md).
  let joins_a_drop = |i: usize| {
    conv.units()[conv.unit_of(i)].members.iter().any(|&j| j < common && before.is_dropped(j))
  };
  let broken: Vec<usize> = (0..common)
    .filter(|&i| Some(conv.unit_of(i)) != last_unit)
    .filter(|&i| !(decision.replanned() && brought_back.contains(&conv.unit_of(i))))
    .filter(|&i| {
      let (was, now) = (before.action(i), plan.action(i));
      match was {
        _ if !decision.replanned() => was != now && !(plan.is_dropped(i) && joins_a_drop(i)),
        Action::Drop => !matches!(now, Action::Drop),
        Action::Replace(_) => !matches!(now, Action::Drop) && was != now,
        Action::Keep => false,
      }
    })
    .collect();
  ensure(broken.is_empty(), SUBJECT, "earlier decisions stand", || {
    format!(
      "messages {broken:?} changed from {:?}",
      broken.iter().map(|&i| before.action(i)).collect::<Vec<_>>()
    )
  })
}

/// The units with a returned message that a re-plan may drop: none of those it always keeps
/// ([`CachePolicyOptions::kept_units`]: instructions, the last message, the task).
fn droppable_units_returned(
  conv: &Conversation<'_>,
  plan: &Plan,
  options: &CachePolicyOptions,
) -> Vec<usize> {
  let kept = options.kept_units(conv);
  let mut units: Vec<usize> = (0..conv.len())
    .filter(|&i| !plan.is_dropped(i))
    .map(|i| conv.unit_of(i))
    .filter(|&u| !kept[u])
    .collect();
  units.dedup();
  units
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn option_bits_cover_every_strategy_and_mark() {
    let names: Vec<&str> = (0..5).map(|s| cache_policy_options(100, s).strategy.name()).collect();
    assert_eq!(names, ["priority", "placeholders", "truncate", "roles", "age"]);
    let all = cache_policy_options(0, u64::MAX);
    assert_eq!(all.context_window, 1);
    assert_eq!((all.high_water, all.low_water, all.clear_at_least), (1.0, 1.0, 1));
    let none = cache_policy_options(1000, 0);
    assert_eq!((none.high_water, none.low_water, none.clear_at_least), (1.0 / 32.0, 0.0, 0));
    for bits in [0, 1, 0xdead_beef, u64::MAX, 0x5555_5555_5555_5555] {
      assert!(cache_policy_options(1000, bits).validate().is_ok());
    }
  }
}
