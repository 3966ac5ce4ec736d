//! Trimming strategies: each reads a [`Conversation`] and returns a [`Plan`] with what it cost;
//! with what they write into a plan (placeholders, summaries of what was dropped, archives).

pub mod age;
pub mod archive;
pub mod budget;
pub mod cache_policy;
pub mod dedup;
pub mod placeholder;
pub mod priority;
pub mod pruner;
pub mod replan;
pub mod roles;
pub mod rolling;
pub mod summarized;
pub mod summary;

use crate::model::conversation::Conversation;
use crate::model::tokens::reply_priming;
use crate::plan::{Action, Plan};

/// The units every budget strategy returns whatever the budget, by unit: those holding a
/// `system`/`developer` message and the unit of the last message. A budget is met whenever
/// these fit (and, where the format wants the conversation to open with a user message, the
/// latest user turn before the last unit, which [`crate::plan::Plan::conform`] brings back).
///
/// A last message that is a tool result answering no call (an orphan, which no provider
/// accepts and which the seed's own tests expect to be dropped like any result) anchors
/// nothing; an AI SDK approval response, which answers no call but the approval request of an
/// earlier message (its unit), anchors its unit.
pub fn anchored_units(conv: &Conversation<'_>) -> Vec<bool> {
  let mut anchored = vec![false; conv.units().len()];
  for (u, unit) in conv.units().iter().enumerate() {
    anchored[u] = unit.members.iter().any(|&i| conv.shape(i).is_instruction());
  }
  let Some(last) = conv.len().checked_sub(1) else { return anchored };
  let unit = conv.unit_of(last);
  // An AI SDK approval response answers no call but goes with the message that asked for it.
  let alone = conv.units().get(unit).is_none_or(|u| u.members.len() == 1);
  if !(conv.shape(last).is_tool_result() && conv.answered_call(last).is_none() && alone) {
    anchored[unit] = true;
  }
  anchored
}

/// What a trimming strategy decided and what it comes to.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
  /// The decision for every message.
  pub plan: Plan,
  /// The messages whose original content is not returned (dropped or replaced), ascending.
  pub dropped: Vec<usize>,
  /// The request's tokens before minus after.
  pub saved_tokens: usize,
  /// The request's tokens after trimming, reply priming included.
  pub total_tokens: usize,
  /// Whether `total_tokens` is still above the target: the budget could not be met without
  /// dropping what the strategy never drops.
  pub over_budget: bool,
}

impl Outcome {
  /// Sums up `plan` against `target` tokens.
  pub fn new(conv: &Conversation<'_>, mut plan: Plan, target: usize) -> Self {
    plan.conform(conv);
    let total_tokens = plan.total_tokens(conv);
    let dropped = (0..conv.len()).filter(|&i| !matches!(plan.action(i), Action::Keep)).collect();
    Outcome {
      plan,
      dropped,
      saved_tokens: conv.total_tokens().saturating_sub(total_tokens),
      total_tokens,
      over_budget: total_tokens > target,
    }
  }
}

/// A running count of a plan's request tokens, so that a strategy dropping units one by one
/// checks its budget in O(1) instead of re-adding every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
  /// The tokens of the returned messages.
  sum: usize,
  /// How many messages are returned.
  kept: usize,
  /// The request's reply priming (see [`reply_priming`]).
  priming: usize,
}

impl Tally {
  /// The tally of a plan keeping everything.
  pub fn keep_all(conv: &Conversation<'_>) -> Self {
    let priming = reply_priming(conv.encoding());
    Tally { sum: conv.all_tokens().iter().sum(), kept: conv.len(), priming }
  }

  /// The tally of what `plan` returns.
  pub fn of(conv: &Conversation<'_>, plan: &Plan) -> Self {
    let mut tally = Tally { sum: 0, kept: 0, priming: reply_priming(conv.encoding()) };
    for i in (0..conv.len()).filter(|&i| !plan.is_dropped(i)) {
      tally.sum += plan.tokens_of(conv, i);
      tally.kept += 1;
    }
    tally
  }

  /// The request's tokens: the messages plus reply priming (0 when nothing is returned), as
  /// [`Plan::total_tokens`] counts them.
  pub fn total(&self) -> usize {
    if self.kept == 0 {
      0
    } else {
      self.sum + self.priming
    }
  }

  /// The request's tokens if unit `u` were returned whole, the rest as `plan` has it.
  pub fn total_with_whole(&self, conv: &Conversation<'_>, plan: &Plan, u: usize) -> usize {
    let members = &conv.units()[u].members;
    let now: usize = members.iter().map(|&i| plan.tokens_of(conv, i)).sum();
    let whole: usize = members.iter().map(|&i| conv.tokens(i)).sum();
    self.sum - now + whole + self.priming
  }

  /// Drops every message of unit `u` that `plan` still returns, in the plan and the tally.
  pub fn drop_unit(&mut self, conv: &Conversation<'_>, plan: &mut Plan, u: usize) {
    for &i in &conv.units()[u].members {
      if !plan.is_dropped(i) {
        self.sum -= plan.tokens_of(conv, i);
        self.kept -= 1;
      }
    }
    plan.drop_unit(conv, u);
  }

  /// Returns every message of unit `u` as it is again (those `plan` dropped or replaced), in
  /// the plan and the tally.
  pub fn keep_unit(&mut self, conv: &Conversation<'_>, plan: &mut Plan, u: usize) {
    for &i in &conv.units()[u].members {
      if plan.is_dropped(i) {
        self.sum += conv.tokens(i);
        self.kept += 1;
      } else {
        self.sum = self.sum - plan.tokens_of(conv, i) + conv.tokens(i);
      }
    }
    plan.keep_unit(conv, u);
  }

  /// Replaces message `i` (returned, as it is or already replaced) in the plan and the tally.
  pub fn replace(
    &mut self,
    conv: &Conversation<'_>,
    plan: &mut Plan,
    i: usize,
    replacement: crate::plan::Replacement,
  ) {
    self.sum = self.sum - plan.tokens_of(conv, i) + replacement.tokens;
    plan.replace(i, replacement);
  }
}
