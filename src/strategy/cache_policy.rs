//! Cache-aware trimming: a trigger/target policy around any strategy, so that a provider's
//! prompt cache stays warm while the request stays inside the context window.
//!
//! A provider caches the prefix of a request: a later request that starts with the same bytes
//! reads that prefix from the cache (Anthropic: 0.1× the input price; OpenAI: 0.5× or less),
//! and whatever follows the first changed byte is paid in full (Anthropic: 1.25×, to write it
//! to the cache). A strategy run on every turn moves its cut every turn and rewrites the
//! prefix every turn. [`CachePolicy`] runs it rarely and remembers what it decided:
//!
//! 1. The decisions of the previous call (which messages are dropped, which are placeholders,
//!    with their exact text) are applied to the new, longer conversation; new messages are
//!    kept, except those joining a unit that was dropped (a new message answering a dropped
//!    call and a kept one drops both). The last message is always sent: when it answers a call
//!    that was dropped, that call comes back. A message is recognised by its index and its
//!    [`Message::fingerprint`]; when any remembered message differs, the history was rewritten
//!    and the decisions are forgotten. The decisions are carried in place, so a call that keeps
//!    them costs a fingerprint comparison per message and the new messages, not a copy of
//!    every placeholder.
//! 2. If that request is at most `high_water × context_window` tokens, it is returned: its
//!    prefix is byte for byte the previous call's ([`Decision::Kept`]).
//! 3. Otherwise the strategy re-plans to `low_water × context_window`. Decisions already made
//!    stay made (a dropped message stays dropped, a placeholder keeps its text), so the new
//!    request changes nothing before the first message the re-plan adds. When the re-plan frees
//!    at least `clear_at_least` tokens it is taken ([`Decision::Trimmed`]); when it frees less
//!    and the window is not exceeded, the previous decisions are kept ([`Decision::Deferred`]):
//!    a cache write is not worth so little. When the window is exceeded it is taken whatever it
//!    frees ([`Decision::Forced`]).
//! 4. A re-plan always sends the last message's unit (the current turn) whole, and always ends
//!    at or under the low-water mark: what the strategy does not free (what it protects, or
//!    what it can only shorten) is freed by dropping the oldest units as [`drop_oldest`] does,
//!    never a system message nor the last unit. Only a request whose system messages and last
//!    unit alone exceed the window stays over it.
//!
//! [`Message::fingerprint`]: crate::model::message::Message::fingerprint

use std::sync::Arc;

use crate::analysis::classify::{current_task, ClassifyOptions};
use crate::error::{js_number, Error, Result};
use crate::model::conversation::Conversation;
use crate::plan::{Action, Plan};
use crate::strategy::age::{drop_oldest, drop_oldest_keeping};
use crate::strategy::anchored_units;
use crate::strategy::placeholder::PlaceholderTemplate;
use crate::strategy::priority::{
  cut_anchors, cut_to, trim_by_priority_plan, trim_with_placeholders, PriorityOptions,
};
use crate::strategy::roles::{apply_max_context_tokens, MaxContextOptions};
use crate::strategy::rolling::{truncate_old_tool_outputs, TruncationConfig};

/// Default of [`CachePolicyOptions::high_water`]: re-plan above 85% of the window.
pub const DEFAULT_HIGH_WATER: f64 = 0.85;
/// Default of [`CachePolicyOptions::low_water`]: re-plan down to 60% of the window.
pub const DEFAULT_LOW_WATER: f64 = 0.60;
/// Default of [`CachePolicyOptions::clear_at_least`], as a fraction of the window: 5%.
pub const DEFAULT_CLEAR_AT_LEAST_FRACTION: f64 = 0.05;

/// The strategy a [`CachePolicy`] runs when it re-plans, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum Strategy {
  /// [`trim_by_priority`]: whole units, lowest priority first.
  Priority(ClassifyOptions),
  /// [`trim_with_placeholders`]: tool results become placeholders before units are dropped,
  /// with the template given (`None`: the seed's placeholders), kept as made
  /// ([`PriorityOptions::keep_placeholders`]): a cut sized to the room left would move with
  /// every re-trim, and the point of this policy is a prefix that stays.
  Placeholders(ClassifyOptions, Option<PlaceholderTemplate>),
  /// [`truncate_old_tool_outputs`]: old tool results become placeholders, long ones are cut.
  /// It has no budget of its own: to reach a target, the largest `max_age` up to the
  /// configured one that reaches it is used.
  Truncate(TruncationConfig),
  /// [`apply_max_context_tokens`]: whole units by role, the drop order first.
  Roles(MaxContextOptions),
  /// [`crate::strategy::age::trim_by_age`]: whole units, oldest first.
  Age,
}

impl Strategy {
  /// The strategy's name as the options spell it: `priority`, `placeholders`, `truncate`,
  /// `roles`, `age`.
  pub fn name(&self) -> &'static str {
    match self {
      Strategy::Priority(_) => "priority",
      Strategy::Placeholders(..) => "placeholders",
      Strategy::Truncate(_) => "truncate",
      Strategy::Roles(_) => "roles",
      Strategy::Age => "age",
    }
  }

  /// How the strategy classifies (what it takes for the current task): its own options for
  /// `priority` and `placeholders`, the defaults for the others.
  fn classify_options(&self) -> ClassifyOptions {
    match self {
      Strategy::Priority(c) | Strategy::Placeholders(c, _) => c.clone(),
      _ => ClassifyOptions::default(),
    }
  }

  /// The strategy's plan for `conv` with a budget of `target` tokens. It may stay above
  /// `target` where the strategy never goes further (a [`CachePolicy`] completes it).
  pub fn plan(&self, conv: &Conversation<'_>, target: usize) -> Plan {
    self.plan_keeping(conv, target, &[])
  }

  /// [`Strategy::plan`] for a re-plan that sends the units flagged in `keep` (indexed by unit)
  /// whatever the strategy decides. `age` keeps them while it drops, so that what it drops
  /// around them (Anthropic's opening user message, needed only while the task is dropped) is
  /// decided knowing they stay; the other strategies decide without them, and the re-plan
  /// brings them back.
  pub fn plan_keeping(&self, conv: &Conversation<'_>, target: usize, keep: &[bool]) -> Plan {
    match self {
      Strategy::Priority(classify) => {
        let options = PriorityOptions {
          target_tokens: target,
          classify: classify.clone(),
          ..PriorityOptions::default()
        };
        trim_by_priority_plan(conv, None, &options)
      }
      Strategy::Placeholders(classify, placeholder) => {
        let options = PriorityOptions {
          target_tokens: target,
          classify: classify.clone(),
          placeholder: placeholder.clone(),
          keep_placeholders: true,
          replan_step: 0,
        };
        trim_with_placeholders(conv, None, &options).outcome.plan
      }
      Strategy::Truncate(config) => truncate_to(conv, config, target),
      Strategy::Roles(options) => apply_max_context_tokens(conv, target, options),
      Strategy::Age => drop_oldest_keeping(conv, Plan::keep_all(conv.len()), target, keep),
    }
  }
}

/// [`truncate_old_tool_outputs`] with the largest `max_age`, at most `config.max_age`, whose
/// plan fits `target` (found by bisection; a smaller `max_age` truncates more). When even
/// `max_age` 0 does not fit, its plan.
fn truncate_to(conv: &Conversation<'_>, config: &TruncationConfig, target: usize) -> Plan {
  let with_age = |max_age: usize| {
    let config = TruncationConfig { max_age, ..config.clone() };
    truncate_old_tool_outputs(conv, &config)
  };
  let plan = with_age(config.max_age);
  if plan.total_tokens(conv) <= target || config.max_age == 0 {
    return plan;
  }
  // Invariant: `lo` fits or is 0, `hi` does not fit.
  let (mut lo, mut hi) = (0, config.max_age);
  let mut best = with_age(0);
  if best.total_tokens(conv) > target {
    return best;
  }
  while hi - lo > 1 {
    let mid = lo + (hi - lo) / 2;
    let p = with_age(mid);
    if p.total_tokens(conv) <= target {
      (lo, best) = (mid, p);
    } else {
      hi = mid;
    }
  }
  best
}

/// `plan` if it fits `window` tokens, else `plan` with the oldest units dropped down to
/// `target` ([`drop_oldest`]): a unit holding a system message or the last message is never
/// dropped, so only those alone can leave the request over the window.
pub fn fit_window(conv: &Conversation<'_>, plan: Plan, window: usize, target: usize) -> Plan {
  if plan.total_tokens(conv) <= window {
    return plan;
  }
  drop_oldest(conv, plan, target.min(window))
}

/// The options of a [`CachePolicy`].
#[derive(Debug, Clone, PartialEq)]
pub struct CachePolicyOptions {
  /// The context window, in request tokens (reply priming included). Never exceeded.
  pub context_window: usize,
  /// The fraction of the window above which the strategy re-plans.
  pub high_water: f64,
  /// The fraction of the window a re-plan brings the request down to.
  pub low_water: f64,
  /// The fewest tokens a re-plan must free to be made while the window is not exceeded.
  pub clear_at_least: usize,
  /// The strategy that re-plans.
  pub strategy: Strategy,
  /// Whether a re-plan keeps the current task ([`current_task`]) whatever the strategy: not
  /// dropped, and cut only when the system messages, the task and the last unit alone exceed
  /// the low-water mark. With `false`, `truncate`, `roles` and `age` (and the fallback that
  /// drops the oldest units) treat it as any other message.
  pub keep_task: bool,
}

impl CachePolicyOptions {
  /// The default options for a window of `context_window` tokens with `strategy`:
  /// [`DEFAULT_HIGH_WATER`], [`DEFAULT_LOW_WATER`], and `clear_at_least` 5% of the window
  /// ([`DEFAULT_CLEAR_AT_LEAST_FRACTION`]).
  pub fn new(context_window: usize, strategy: Strategy) -> Self {
    CachePolicyOptions {
      context_window,
      high_water: DEFAULT_HIGH_WATER,
      low_water: DEFAULT_LOW_WATER,
      clear_at_least: default_clear_at_least(context_window),
      strategy,
      keep_task: true,
    }
  }

  /// Checks the options.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `contextWindow` when it is 0, `highWater` when it is not
  /// a number in (0, 1], or `lowWater` when it is not a number in [0, `highWater`].
  pub fn validate(&self) -> Result<()> {
    if self.context_window == 0 {
      return Err(Error::option("contextWindow", "must be an integer of at least 1, got 0"));
    }
    let (high, low) = (self.high_water, self.low_water);
    if !(high.is_finite() && high > 0.0 && high <= 1.0) {
      return Err(Error::option(
        "highWater",
        format!("must be a fraction of the window in (0, 1], got {}", js_number(high)),
      ));
    }
    if !(low.is_finite() && (0.0..=high).contains(&low)) {
      return Err(Error::option(
        "lowWater",
        format!(
          "must be a fraction of the window in [0, highWater = {high}], got {}",
          js_number(low)
        ),
      ));
    }
    Ok(())
  }

  /// The units a re-plan never drops (indexed by unit): those holding a system or developer
  /// message ([`anchored_units`]), the last message's and, with
  /// [`CachePolicyOptions::keep_task`], the current task's ([`current_task`], as the strategy
  /// classifies).
  pub fn kept_units(&self, conv: &Conversation<'_>) -> Vec<bool> {
    let mut keep = anchored_units(conv);
    // The last message is always sent, also a result answering no call (which is not anchored).
    if let Some(last) = conv.len().checked_sub(1) {
      keep[conv.unit_of(last)] = true;
    }
    if self.keep_task {
      if let Some(task) = current_task(conv, &self.strategy.classify_options()) {
        keep[conv.unit_of(task)] = true;
      }
    }
    keep
  }

  /// The high-water mark in tokens: `high_water × context_window`, rounded down.
  pub fn high_tokens(&self) -> usize {
    fraction_of(self.context_window, self.high_water)
  }

  /// The low-water mark in tokens: `low_water × context_window`, rounded down.
  pub fn low_tokens(&self) -> usize {
    fraction_of(self.context_window, self.low_water)
  }
}

/// The default `clear_at_least` for a window: [`DEFAULT_CLEAR_AT_LEAST_FRACTION`] of it,
/// rounded down.
pub fn default_clear_at_least(context_window: usize) -> usize {
  fraction_of(context_window, DEFAULT_CLEAR_AT_LEAST_FRACTION)
}

fn fraction_of(tokens: usize, fraction: f64) -> usize {
  // Exact for windows below 2^53 tokens; the product is non-negative and at most `tokens`.
  (tokens as f64 * fraction).floor() as usize
}

/// What a [`CachePolicy`] did on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
  /// At most the high-water mark: the previous decisions, unchanged.
  Kept,
  /// Above the high-water mark: re-planned down to the low-water mark.
  Trimmed,
  /// Above the high-water mark, but a re-plan would free less than `clear_at_least` and the
  /// window is not exceeded: the previous decisions, unchanged.
  Deferred,
  /// Over the window: re-planned although it frees less than `clear_at_least`.
  Forced,
}

impl Decision {
  /// The decision's name: `kept`, `trimmed`, `deferred`, `forced`.
  pub fn as_str(self) -> &'static str {
    match self {
      Decision::Kept => "kept",
      Decision::Trimmed => "trimmed",
      Decision::Deferred => "deferred",
      Decision::Forced => "forced",
    }
  }

  /// Whether the request was re-planned (its prefix may differ from the previous call's).
  pub fn replanned(self) -> bool {
    matches!(self, Decision::Trimmed | Decision::Forced)
  }
}

/// The result of one [`CachePolicy::step`].
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyStep {
  /// The decision for every message of the conversation. The policy shares it, and extends it
  /// in place on its next step unless this one is still held.
  pub plan: Arc<Plan>,
  /// Whether `plan` is the previous step's for every message that step covered, the new
  /// messages added after them: the previous request is then the start of this one. False on
  /// a re-plan, a reset, and when a new message joined a dropped unit that held a returned
  /// message.
  pub extended: bool,
  /// What the policy did.
  pub decision: Decision,
  /// Whether the remembered decisions were forgotten because the history was rewritten (a
  /// remembered message changed or is gone).
  pub reset: bool,
  /// The tokens of the whole conversation, untrimmed.
  pub input_tokens: usize,
  /// The tokens with the remembered decisions applied, before any re-plan.
  pub estimate_tokens: usize,
  /// The tokens of the returned request.
  pub total_tokens: usize,
  /// `estimate_tokens − total_tokens`: what a re-plan freed (0 without one).
  pub freed_tokens: usize,
  /// Whether the returned request is still over the window (only when its system messages and
  /// last unit alone exceed it).
  pub over_window: bool,
}

/// The high/low-water policy (see the [module docs](self)). Call [`step`](Self::step) with the
/// growing conversation before every model call.
///
/// Cost of a call that keeps the previous decisions: one comparison of a memoised fingerprint
/// per remembered message and one pass over the plan's decisions; the remembered decisions are
/// extended in place, not copied (the plan is shared with the last [`PolicyStep`] and copied
/// only while that one is still held).
#[derive(Debug, Clone, PartialEq)]
pub struct CachePolicy {
  options: CachePolicyOptions,
  /// The fingerprint of every message of the last conversation given, by index.
  fingerprints: Vec<u64>,
  /// The decisions returned for them.
  plan: Arc<Plan>,
  /// What `plan` returns of the last conversation given, kept as the decisions change.
  returned: Returned,
}

/// The messages a plan returns and their tokens (reply priming aside), counted as the plan
/// changes rather than over every message again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Returned {
  messages: usize,
  tokens: usize,
}

impl Returned {
  /// What `plan` returns of `members`.
  fn of(conv: &Conversation<'_>, plan: &Plan, members: impl IntoIterator<Item = usize>) -> Self {
    let mut r = Returned::default();
    for i in members {
      if !plan.is_dropped(i) {
        r.messages += 1;
        r.tokens += plan.tokens_of(conv, i);
      }
    }
    r
  }

  /// `self` after `change` to `plan`, which changes no message but `members`.
  fn after(
    self,
    conv: &Conversation<'_>,
    plan: &mut Plan,
    members: &[usize],
    change: impl FnOnce(&mut Plan),
  ) -> Self {
    let before = Returned::of(conv, plan, members.iter().copied());
    change(plan);
    let after = Returned::of(conv, plan, members.iter().copied());
    Returned {
      messages: self.messages - before.messages + after.messages,
      tokens: self.tokens - before.tokens + after.tokens,
    }
  }

  /// The request's tokens ([`Plan::total_tokens`] of a plan that inserts nothing).
  fn total(self, conv: &Conversation<'_>) -> usize {
    match self.messages {
      0 => 0,
      _ => self.tokens + crate::model::tokens::reply_priming(conv.encoding()),
    }
  }
}

impl CachePolicy {
  /// A policy with no decisions yet.
  ///
  /// # Errors
  ///
  /// The errors of [`CachePolicyOptions::validate`].
  pub fn new(options: CachePolicyOptions) -> Result<Self> {
    options.validate()?;
    Ok(CachePolicy {
      options,
      fingerprints: Vec::new(),
      plan: Arc::new(Plan::keep_all(0)),
      returned: Returned::default(),
    })
  }

  /// The options.
  pub fn options(&self) -> &CachePolicyOptions {
    &self.options
  }

  /// How many messages the policy remembers decisions for.
  pub fn remembered(&self) -> usize {
    self.fingerprints.len()
  }

  /// Forgets every decision: the next call starts afresh.
  pub fn reset(&mut self) {
    self.fingerprints.clear();
    self.plan = Arc::new(Plan::keep_all(0));
    self.returned = Returned::default();
  }

  /// Decides what to send for `conv`, the conversation so far, and remembers it.
  pub fn step(&mut self, conv: &Conversation<'_>) -> PolicyStep {
    self.step_checked(conv, true)
  }

  /// [`CachePolicy::step`] for a conversation that extends the last one given: its first
  /// [`CachePolicy::remembered`] messages are the same messages, unchanged (the simulator's
  /// replay of one session). The check that they are, a read of every remembered message,
  /// is left to debug builds, so a step costs what the new messages and the decision cost.
  pub(crate) fn step_extending(&mut self, conv: &Conversation<'_>) -> PolicyStep {
    self.step_checked(conv, false)
  }

  /// [`CachePolicy::step`], checking the remembered messages against `conv` when `check`.
  fn step_checked(&mut self, conv: &Conversation<'_>, check: bool) -> PolicyStep {
    let remembered = self.fingerprints.len();
    let recalled = self.recall(conv, check);
    let reset = recalled.is_none() && remembered > 0;
    if recalled.is_none() {
      self.fingerprints.clear();
      self.plan = Arc::new(Plan::keep_all(conv.len()));
      self.returned = Returned::of(conv, &self.plan, 0..conv.len());
    }
    self
      .fingerprints
      .extend((self.fingerprints.len()..conv.len()).map(|i| conv.message(i).fingerprint()));
    let estimate = self.returned.total(conv);
    debug_assert_eq!(estimate, self.plan.total_tokens(conv));
    let options = &self.options;
    let decision = if estimate <= options.high_tokens() {
      Decision::Kept
    } else {
      let candidate = self.replan(conv, &self.plan);
      let freed = estimate.saturating_sub(candidate.total_tokens(conv));
      let decision = if freed >= options.clear_at_least {
        Decision::Trimmed
      } else if estimate <= options.context_window {
        Decision::Deferred
      } else {
        Decision::Forced
      };
      if decision.replanned() {
        self.returned = Returned::of(conv, &candidate, 0..conv.len());
        self.plan = Arc::new(candidate);
      }
      decision
    };
    let total = if decision.replanned() { self.plan.total_tokens(conv) } else { estimate };
    PolicyStep {
      decision,
      reset,
      input_tokens: conv.total_tokens(),
      estimate_tokens: estimate,
      total_tokens: total,
      freed_tokens: estimate.saturating_sub(total),
      over_window: total > self.options.context_window,
      extended: recalled == Some(true) && !decision.replanned(),
      plan: Arc::clone(&self.plan),
    }
  }

  /// Applies the remembered decisions to `conv` in place: new messages kept, or dropped with a
  /// unit that was dropped (a new tool result of a dropped call). Returns whether the decisions
  /// for the remembered messages stayed as they were, or `None`, changing nothing, when a
  /// remembered message is gone or changed (checked only when `check`; else the caller knows
  /// they are all there).
  fn recall(&mut self, conv: &Conversation<'_>, check: bool) -> Option<bool> {
    let remembered = self.fingerprints.len();
    let same = |fingerprints: &[u64]| {
      fingerprints.iter().enumerate().all(|(i, &f)| conv.message(i).fingerprint() == f)
    };
    debug_assert!(check || (remembered <= conv.len() && same(&self.fingerprints)));
    if remembered > conv.len() || (check && !same(&self.fingerprints)) {
      return None;
    }
    let plan = Arc::make_mut(&mut self.plan);
    // The strategies a policy runs insert nothing; a remembered insertion would not be kept.
    plan.take_insertions();
    plan.extend_kept(conv.len());
    let new = Returned::of(conv, plan, remembered..conv.len());
    let mut returned = Returned {
      messages: self.returned.messages + new.messages,
      tokens: self.returned.tokens + new.tokens,
    };
    // Units only grow by new messages: a unit with a dropped member that gained one goes whole
    // (two units a new message joins may hold a dropped and a returned message).
    let mut unchanged = true;
    let mut last_unit = None;
    for i in remembered..conv.len() {
      let u = conv.unit_of(i);
      if last_unit == Some(u) {
        continue;
      }
      last_unit = Some(u);
      let members = &conv.units()[u].members;
      if members.iter().any(|&m| plan.is_dropped(m)) {
        unchanged &= members.iter().all(|&m| m >= remembered || plan.is_dropped(m));
        returned = returned.after(conv, plan, members, |plan| plan.drop_unit(conv, u));
      }
    }
    // The last message is always sent: when it answers a dropped call, that call comes back.
    if let Some(last) = conv.len().checked_sub(1) {
      let members = &conv.units()[conv.unit_of(last)].members;
      returned = returned.after(conv, plan, members, |plan| {
        unchanged &= !revive_last_unit(conv, plan);
      });
    }
    self.returned = returned;
    Some(unchanged)
  }

  /// The strategy's plan down to the low-water mark, with every removal of `current` kept as
  /// it is ([`impose`]), the units of [`CachePolicyOptions::kept_units`] sent and the last message's
  /// unit sent (as the strategy sends it), completed by [`drop_oldest_keeping`] down to the
  /// low-water mark when the strategy stops above it (unless that makes the request larger),
  /// then by cutting the units it keeps ([`cut_anchors`]) when they alone exceed it, and made
  /// to follow the format's rules ([`Plan::conform`]).
  fn replan(&self, conv: &Conversation<'_>, current: &Plan) -> Plan {
    let low = self.options.low_tokens();
    let keep = self.options.kept_units(conv);
    let mut plan = self.options.strategy.plan_keeping(conv, low, &keep);
    // What a re-plan never drops comes back where the strategy dropped it (`roles` drops
    // system messages when its order says so; a priority strategy's last rung may drop the
    // task), with its other messages as the strategy left them.
    for (u, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
      for &i in &conv.units()[u].members {
        if plan.is_dropped(i) {
          plan.keep(i);
        }
      }
    }
    impose(conv, &mut plan, current.actions().iter(), &keep);
    leave_room_beside_instructions(conv, &mut plan, current, low);
    // The strategy's own decision for the last message's unit (a cut of the last output, when
    // the anchors alone exceed the budget) stands, unless the earlier cuts imposed since (a
    // system prompt cut before) leave room for the output whole.
    if let Some(last) = conv.len().checked_sub(1) {
      let u = conv.unit_of(last);
      if conv.units()[u].members.iter().any(|&i| plan.is_dropped(i)) {
        plan.keep_unit(conv, u);
      }
      let mut total = plan.total_tokens(conv);
      for &i in &conv.units()[u].members {
        let whole = total - plan.tokens_of(conv, i) + conv.tokens(i);
        if matches!(plan.action(i), Action::Replace(r) if r.is_cut()) && whole <= low {
          plan.keep(i);
          total = whole;
        }
      }
    }
    if plan.total_tokens(conv) > low {
      let mut completed = drop_oldest_keeping(conv, plan.clone(), low, &keep);
      completed.conform(conv);
      plan.conform(conv);
      // Not where that makes the request larger: dropping a unit that `Plan::conform` brings
      // back whole (Anthropic's opening user message, which the strategy may have cut) would.
      if completed.total_tokens(conv) <= plan.total_tokens(conv) {
        plan = completed;
      }
    }
    // Only what a re-plan keeps is left, and it alone exceeds the low-water mark: it is cut,
    // as the priority strategies cut their anchors (issue 42: the smallest request the policy
    // can reach, never one over the window while a cut could bring it inside).
    if plan.total_tokens(conv) > low {
      // The last unit's shortenings that no earlier request sent (`truncate` cuts a long new
      // output to its own length) are undone first, so that the anchors' cut starts from the
      // whole output and takes what it must from it before any instruction or the task.
      if let Some(last) = conv.len().checked_sub(1) {
        for &i in &conv.units()[conv.unit_of(last)].members {
          let earlier = matches!(current.actions().get(i), Some(Action::Replace(_)));
          if matches!(plan.action(i), Action::Replace(_)) && !earlier {
            plan.keep(i);
          }
        }
      }
      cut_anchors(conv, &mut plan, &keep, low);
    }
    plan.conform(conv);
    plan
  }
}

/// A cut of a system message stands at every later re-plan (the cached prefix starts there;
/// see [`impose`]), so one that `plan` makes now, where `current` had none, takes at most a third
/// of the low-water mark `low`, leaving the rest to the conversation: cut only as far as the
/// strategy's last resort needed, it would fill most of every later request (a SWE-agent system
/// prompt cut to 986 of 1,215 tokens once the task alone overflowed, then kept so while the
/// history grew; a third measured best on the SWE-agent runs, docs/prompt-caching-policy.md).
fn leave_room_beside_instructions(
  conv: &Conversation<'_>,
  plan: &mut Plan,
  current: &Plan,
  low: usize,
) {
  let cap = low / 3;
  for i in 0..conv.len() {
    if !conv.shape(i).is_instruction()
      || matches!(current.actions().get(i), Some(Action::Replace(_)))
    {
      continue;
    }
    let Action::Replace(r) = plan.action(i) else { continue };
    if r.is_cut() && r.tokens > cap {
      // (A cut goes no lower than a head and a tail: never put a larger one in its place.)
      if let Some(cut) = cut_to(conv, i, cap).filter(|c| c.tokens < r.tokens) {
        plan.replace(i, cut);
      }
    }
  }
}

/// Makes `plan` remove at least what `earlier` (decisions for the first messages) removes, so
/// that what a request sent before stays as it was sent: a unit with a dropped message is
/// dropped whole, and a replaced message keeps its replacement (its first text) unless its
/// unit is dropped. Where `plan` shortens a message further than `earlier` did, its unit is
/// dropped instead (the strategy values it least), unless `keep` flags it (indexed by unit):
/// then the earlier text stands. `keep`'s units are never dropped for an earlier drop (they
/// come back, e.g. a task an earlier fallback dropped).
fn impose<'a>(
  conv: &Conversation<'_>,
  plan: &mut Plan,
  earlier: impl Iterator<Item = &'a Action> + Clone,
  keep: &[bool],
) {
  let kept = |u: usize| keep.get(u).copied().unwrap_or(false);
  let mut further = Vec::new();
  for (i, action) in earlier.clone().enumerate() {
    let Action::Replace(r) = action else { continue };
    if plan.is_dropped(i) {
      continue;
    }
    let u = conv.unit_of(i);
    if matches!(plan.action(i), Action::Replace(new) if new.tokens < r.tokens) && !kept(u) {
      further.push(u);
    } else {
      plan.replace(i, (**r).clone());
    }
  }
  for u in further {
    plan.drop_unit(conv, u);
  }
  for (i, action) in earlier.enumerate() {
    let u = conv.unit_of(i);
    if matches!(action, Action::Drop) && !kept(u) {
      plan.drop_unit(conv, u);
    }
  }
}

/// Keeps again the dropped messages of the last message's unit (a new result of a call an
/// earlier trim dropped brings the call back). Returns whether any was dropped.
fn revive_last_unit(conv: &Conversation<'_>, plan: &mut Plan) -> bool {
  let Some(last) = conv.len().checked_sub(1) else { return false };
  let mut revived = false;
  for &i in &conv.units()[conv.unit_of(last)].members {
    if plan.is_dropped(i) {
      plan.keep(i);
      revived = true;
    }
  }
  revived
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::plan::MetaValue;
  use crate::testing::{call, result, user};

  const ENC: Encoding = Encoding::O200kBase;

  /// A tool output of about `n` × 8 tokens, unique to `seed`.
  fn big(seed: &str, n: usize) -> String {
    (0..n).map(|i| format!("{seed}-{i:04} payload line\n")).collect()
  }

  /// A session: a system prompt, a task, then `steps` steps each reading a file with a
  /// ~250-token result and a short assistant remark.
  fn session(steps: usize) -> Vec<Message> {
    let mut msgs = vec![Message::text(Role::System, "You are a coding agent."), user("Fix it.")];
    for k in 1..=steps {
      let id = format!("c{k}");
      msgs.push(call(&id, "execute_bash", &format!("{{\"command\":\"cat notes{k}.txt\"}}")));
      msgs.push(result(&id, &big(&format!("out{k}"), 30)));
    }
    msgs
  }

  fn policy(window: usize, strategy: Strategy) -> CachePolicy {
    CachePolicy::new(CachePolicyOptions::new(window, strategy)).unwrap()
  }

  /// What the plan returns, as comparable values: (index, action).
  fn returned(plan: &Plan) -> Vec<(usize, Action)> {
    plan.actions().iter().cloned().enumerate().filter(|(_, a)| !matches!(a, Action::Drop)).collect()
  }

  /// Runs `policy` on every prefix of `msgs` ending in a tool result (each a model call),
  /// checking the window and prefix stability; returns the decisions.
  fn replay(policy: &mut CachePolicy, msgs: &[Message]) -> Vec<Decision> {
    let mut decisions = Vec::new();
    let mut previous: Option<Vec<(usize, Action)>> = None;
    for end in (1..=msgs.len()).filter(|&e| msgs[e - 1].is_tool_result() || e == 2) {
      let conv = Conversation::new(&msgs[..end], ENC);
      let step = policy.step(&conv);
      assert!(step.total_tokens <= policy.options().context_window, "over the window at {end}");
      assert_eq!(step.total_tokens, step.plan.total_tokens(&conv));
      assert!(step.plan.check_units(&conv).is_ok());
      let now = returned(&step.plan);
      if let Some(before) = &previous {
        if !step.decision.replanned() {
          assert_eq!(&now[..before.len()], &before[..], "prefix changed at {end}");
        }
      }
      previous = Some(now);
      decisions.push(step.decision);
    }
    decisions
  }

  #[test]
  fn options_are_checked() {
    let base = CachePolicyOptions::new(1000, Strategy::Age);
    let fraction = "must be a fraction of the window in";
    for (context_window, high_water, low_water, message) in [
      (0, 0.85, 0.6, "contextWindow: must be an integer of at least 1, got 0".to_string()),
      (1000, 1.5, 0.6, format!("highWater: {fraction} (0, 1], got 1.5")),
      (1000, f64::NAN, 0.6, format!("highWater: {fraction} (0, 1], got NaN")),
      (1000, 0.0, 0.0, format!("highWater: {fraction} (0, 1], got 0")),
      (1000, 0.85, 0.9, format!("lowWater: {fraction} [0, highWater = 0.85], got 0.9")),
      (1000, 0.85, -0.1, format!("lowWater: {fraction} [0, highWater = 0.85], got -0.1")),
    ] {
      let o = CachePolicyOptions { context_window, high_water, low_water, ..base.clone() };
      assert_eq!(CachePolicy::new(o).unwrap_err().to_string(), message);
    }
    let o = CachePolicyOptions::new(128_000, Strategy::Age);
    assert_eq!((o.high_tokens(), o.low_tokens(), o.clear_at_least), (108_800, 76_800, 6_400));
  }

  #[test]
  fn between_trims_the_prefix_is_stable_and_the_window_never_exceeded() {
    let msgs = session(60);
    let full = Conversation::new(&msgs, ENC).total_tokens();
    let window = full / 3;
    for strategy in [
      Strategy::Priority(ClassifyOptions::default()),
      Strategy::Placeholders(ClassifyOptions::default(), None),
      Strategy::Truncate(TruncationConfig::default()),
      Strategy::Roles(MaxContextOptions::default()),
      Strategy::Age,
    ] {
      let name = strategy.name();
      let mut p = policy(window, strategy);
      let decisions = replay(&mut p, &msgs);
      let trims = decisions.iter().filter(|d| d.replanned()).count();
      let calls = decisions.len();
      // A trim every few calls, not every call.
      assert!(trims >= 2 && trims * 5 < calls, "{name}: {trims} trims in {calls} calls");
    }
  }

  #[test]
  fn a_trim_goes_down_to_low_water_and_later_calls_keep_its_decisions() {
    let msgs = session(40);
    let window = Conversation::new(&msgs, ENC).total_tokens() / 2;
    let mut p = policy(window, Strategy::Age);
    let mut trimmed: Option<Vec<usize>> = None;
    let mut kept_after_a_trim = 0;
    for end in (4..=msgs.len()).step_by(2) {
      let conv = Conversation::new(&msgs[..end], ENC);
      let step = p.step(&conv);
      match step.decision {
        Decision::Trimmed => {
          assert!(step.estimate_tokens > p.options().high_tokens());
          assert!(step.total_tokens <= p.options().low_tokens());
          assert!(step.freed_tokens >= p.options().clear_at_least);
          // What an earlier trim dropped stays dropped.
          let dropped = step.plan.dropped();
          if let Some(before) = &trimmed {
            assert!(before.iter().all(|i| dropped.contains(i)));
          }
          trimmed = Some(dropped);
        }
        Decision::Kept => {
          if let Some(dropped) = &trimmed {
            // The last trim's drops, and the new messages kept.
            assert_eq!(&step.plan.dropped(), dropped);
            assert_eq!(step.freed_tokens, 0);
            assert_eq!(step.estimate_tokens, step.total_tokens);
            kept_after_a_trim += 1;
          }
        }
        other => panic!("{other:?} at {end}"),
      }
    }
    assert!(trimmed.is_some() && kept_after_a_trim > 3);
  }

  #[test]
  fn a_priority_re_trim_keeps_the_task_and_re_cuts_what_it_cuts_further() {
    // The priority strategy cuts old outputs to fill each budget; imposing a re-trim's earlier,
    // larger cuts used to put it over low water and make the oldest units (the task) go.
    let msgs = session(40);
    let window = Conversation::new(&msgs, ENC).total_tokens() / 3;
    let mut p = policy(window, Strategy::Priority(ClassifyOptions::default()));
    let mut trims = 0;
    for end in (4..=msgs.len()).step_by(2) {
      let conv = Conversation::new(&msgs[..end], ENC);
      let step = p.step(&conv);
      assert!(matches!(step.plan.action(1), Action::Keep), "the task at {end}");
      assert!(step.total_tokens <= window, "{end}");
      if step.decision == Decision::Trimmed {
        trims += 1;
        assert!(step.total_tokens <= p.options().low_tokens(), "{end}");
      }
    }
    assert!(trims > 1);
  }

  /// A system prompt that the first trim has to cut (the task alone overflows, as a SWE-agent
  /// prompt of 1,500 tokens beside its task does at 20% of a run) is cut to at most a third of
  /// the low-water mark, and that cut stands: the later requests keep room for the steps.
  #[test]
  fn a_system_prompt_cut_once_leaves_room_for_the_steps() {
    let mut msgs = vec![Message::text(Role::System, big("rules", 150)), user(&big("task", 20))];
    msgs.extend(session(20).into_iter().skip(2));
    let window = 1_600;
    let mut p = policy(window, Strategy::Priority(ClassifyOptions::default()));
    let low = p.options().low_tokens();
    let mut system_cut = None;
    for end in (2..=msgs.len()).step_by(2) {
      let conv = Conversation::new(&msgs[..end], ENC);
      let step = p.step(&conv);
      assert!(step.total_tokens <= window, "{end}");
      if let Action::Replace(r) = step.plan.action(0) {
        assert!(r.tokens <= low / 3, "the system prompt takes {} of {low} at {end}", r.tokens);
        // Once cut, it keeps its text.
        assert_eq!(*system_cut.get_or_insert_with(|| r.content.clone()), r.content, "{end}");
      }
      // Beside it, the newest step is sent whole.
      if end > 4 {
        assert!(matches!(step.plan.action(end - 1), Action::Keep), "{end}");
      }
    }
    assert!(system_cut.is_some(), "the system prompt was never cut");
  }

  /// Every step of a policy on every prefix of every shared transcript (each a model call), in
  /// the three formats, with windows that make it trim, gives what the former, from-scratch
  /// recall gives: a plan keeping everything with the previous step's decisions imposed on it
  /// (so a new result of a dropped call goes, and a unit a new message joins to a dropped one
  /// goes whole). `extended` holds exactly when the previous request is the start of this one.
  #[test]
  fn decisions_carried_in_place_are_those_imposed_from_scratch() {
    use crate::model::format::Format;
    // Two calls answered only at the end, after the policy dropped them: the first by a result
    // of its own, last in its request (it joins a dropped unit, which comes back), the second
    // by a message that also answers a recent call, followed by a user message (it joins a
    // dropped unit and a returned one, which go).
    let mut late = vec![Message::text(Role::System, "s"), user(&big("task", 20))];
    late.push(call("early1", "execute_bash", "{\"command\":\"make\"}"));
    late.push(user(&big("aside", 10)));
    late.push(call("early2", "execute_bash", "{\"command\":\"make test\"}"));
    late.extend(session(30).into_iter().skip(2));
    late.push(result("early1", &big("build", 10)));
    late.push(call("recent", "execute_bash", "{\"command\":\"ls\"}"));
    late.push(Message::text(Role::Assistant, "Waiting for both."));
    let mut both = Message::text(Role::Tool, big("both", 10));
    both.answers = vec!["early2".into(), "recent".into()];
    late.push(both);
    late.push(user("next"));
    late.push(Message::text(Role::Assistant, "Done."));
    let mut sessions = crate::testing::transcripts();
    sessions.push(("late results".into(), late));
    let mut extended_somewhere = false;
    for (name, msgs) in sessions {
      let total = Conversation::new(&msgs, ENC).total_tokens();
      for (format, strategy, percent) in [
        (Format::OpenAi, Strategy::Priority(ClassifyOptions::default()), 40),
        (Format::Anthropic, Strategy::Placeholders(ClassifyOptions::default(), None), 50),
        (Format::AiSdk, Strategy::Age, 60),
      ] {
        let mut p = policy((total * percent / 100).max(1), strategy);
        let mut previous: Option<Plan> = None;
        // Each request ends before a reply, as the simulator's turns do (several messages are
        // new in one call).
        let ends = (1..msgs.len()).filter(|&e| msgs[e].role == Role::Assistant);
        for end in ends.chain([msgs.len()]) {
          let conv = Conversation::new(&msgs[..end], ENC).with_format(format);
          let step = p.step(&conv);
          let mut expected = Plan::keep_all(end);
          if let Some(before) = &previous {
            impose(&conv, &mut expected, before.actions().iter(), &[]);
            revive_last_unit(&conv, &mut expected);
          }
          assert!(!step.plan.is_dropped(end - 1), "{name}: the last message at {end}");
          let at = format!("{name}, {format:?} at {end}");
          assert_eq!(step.estimate_tokens, expected.total_tokens(&conv), "{at}");
          if !step.decision.replanned() {
            assert_eq!(*step.plan, expected, "{at}");
          }
          let prefix = previous.as_ref().is_none_or(|before| {
            before.actions().iter().zip(step.plan.actions()).all(|(a, b)| a == b)
          });
          assert_eq!(step.extended, prefix && !step.decision.replanned(), "{at}");
          extended_somewhere |=
            step.extended && previous.as_ref().is_some_and(|b| !b.is_identity());
          previous = Some((*step.plan).clone());
        }
      }
    }
    assert!(extended_somewhere, "no call extended a trimmed request");
  }

  #[test]
  fn placeholders_keep_their_first_text() {
    let msgs = session(50);
    let window = Conversation::new(&msgs, ENC).total_tokens() / 2;
    let mut p = policy(window, Strategy::Placeholders(ClassifyOptions::default(), None));
    let mut texts: Vec<Option<String>> = vec![None; msgs.len()];
    let mut changed = 0;
    for end in (4..=msgs.len()).step_by(2) {
      let step = p.step(&Conversation::new(&msgs[..end], ENC));
      for i in step.plan.replaced() {
        let Action::Replace(r) = step.plan.action(i) else { continue };
        match &texts[i] {
          Some(t) => assert_eq!(t.as_str(), &*r.content, "placeholder {i} changed"),
          None => {
            texts[i] = Some(r.content.to_string());
            changed += 1;
          }
        }
      }
    }
    assert!(changed > 5, "{changed} placeholders");
  }

  #[test]
  fn a_rewritten_history_resets_the_policy() {
    let msgs = session(40);
    let window = Conversation::new(&msgs, ENC).total_tokens() / 2;
    let mut p = policy(window, Strategy::Age);
    let step = p.step(&Conversation::new(&msgs, ENC));
    assert_eq!((step.decision, step.reset), (Decision::Trimmed, false));
    assert_eq!(p.remembered(), msgs.len());
    // The same conversation again: nothing to do, same plan.
    let again = p.step(&Conversation::new(&msgs, ENC));
    assert_eq!((again.decision, again.reset), (Decision::Kept, false));
    assert_eq!(again.plan, step.plan);
    // An old tool result edited: the decisions are forgotten, and the request (over high
    // water again) re-planned from scratch.
    let mut edited = msgs.clone();
    edited[3] = result("c1", "short now");
    let fresh = p.step(&Conversation::new(&edited, ENC));
    assert!(fresh.reset);
    assert_eq!(fresh.estimate_tokens, fresh.input_tokens);
    // A shorter history (messages removed at the end) resets too.
    let shorter = p.step(&Conversation::new(&edited[..10], ENC));
    assert!(shorter.reset && shorter.plan.is_identity());
    p.reset();
    assert_eq!(p.remembered(), 0);
    assert!(!p.step(&Conversation::new(&msgs[..4], ENC)).reset);
  }

  #[test]
  fn a_small_gain_is_deferred_until_the_window_forces_it() {
    // Every unit can go but the system prompt and the last message: one ~250-token result a
    // step, so a re-plan to low water frees ~1 unit per step of growth.
    let msgs = session(20);
    let conv = Conversation::new(&msgs, ENC);
    let window = conv.total_tokens() - 10;
    let mut options = CachePolicyOptions::new(window, Strategy::Age);
    options.high_water = 0.5;
    options.low_water = 0.5;
    options.clear_at_least = window; // never worth it
    let mut p = CachePolicy::new(options).unwrap();
    let mut seen = Vec::new();
    for end in (4..=msgs.len()).step_by(2) {
      let step = p.step(&Conversation::new(&msgs[..end], ENC));
      assert!(step.total_tokens <= window);
      seen.push(step.decision);
    }
    assert!(seen.contains(&Decision::Deferred));
    assert_eq!(seen.last(), Some(&Decision::Forced));
    assert_eq!(seen.iter().filter(|d| **d == Decision::Forced).count(), 1);
  }

  #[test]
  fn a_strategy_that_cannot_reach_the_window_is_completed_by_dropping_the_oldest() {
    // Truncation with tool results too small to truncate: only dropping gets inside.
    let mut msgs = vec![Message::text(Role::System, "s")];
    for k in 0..40 {
      msgs.push(user(&format!("question {k} ").repeat(30)));
    }
    let conv = Conversation::new(&msgs, ENC);
    let window = conv.total_tokens() / 2;
    let mut p = policy(window, Strategy::Truncate(TruncationConfig::default()));
    let step = p.step(&conv);
    assert_eq!(step.decision, Decision::Trimmed);
    assert!(step.total_tokens <= p.options().low_tokens());
    assert!(!step.plan.is_dropped(0) && !step.plan.is_dropped(40));
    assert!(step.plan.is_dropped(1));
  }

  #[test]
  fn a_last_output_larger_than_the_window_is_cut_as_the_strategy_cuts_it() {
    // The last read alone exceeds the window: the priority strategies cut it to head and tail
    // (their last resort), and the re-plan sends that cut instead of the whole output.
    let mut msgs = session(3);
    msgs.push(call("last", "execute_bash", r#"{"command":"cat big.txt"}"#));
    msgs.push(result("last", &big("huge", 400)));
    let conv = Conversation::new(&msgs, ENC);
    let last = msgs.len() - 1;
    let window = conv.tokens(last) / 2;
    for strategy in [
      Strategy::Priority(ClassifyOptions::default()),
      Strategy::Placeholders(ClassifyOptions::default(), None),
    ] {
      let name = strategy.name();
      let mut p = policy(window, strategy);
      let step = p.step(&conv);
      assert!(!step.over_window, "{name}: {} tokens over {window}", step.total_tokens);
      assert!(matches!(step.plan.action(last), Action::Replace(r) if r.is_cut()), "{name}");
      assert!(!step.plan.is_dropped(last - 1), "{name}: the call stays");
    }
  }

  #[test]
  fn in_anthropic_format_a_replan_keeps_a_user_message_first() {
    let mut msgs = session(40);
    msgs[1] = user(&big("task", 40));
    let window = Conversation::new(&msgs, ENC).total_tokens() / 2;
    let mut p = policy(window, Strategy::Age);
    let mut trims = 0;
    for end in (4..=msgs.len()).step_by(2) {
      let conv =
        Conversation::new(&msgs[..end], ENC).with_format(crate::model::format::Format::Anthropic);
      let step = p.step(&conv);
      trims += usize::from(step.decision.replanned());
      // The task is the only user message: it stays first after the system prompt.
      let first = (1..end).find(|&i| !step.plan.is_dropped(i));
      assert_eq!(first, Some(1), "at {end}");
      assert!(step.total_tokens <= window);
    }
    assert!(trims >= 2, "{trims} trims");
  }

  #[test]
  fn earlier_decisions_never_split_a_unit() {
    let msgs = session(3);
    let conv = Conversation::new(&msgs, ENC);
    let placeholder = crate::plan::replacement(&conv, 3, "[gone]".into(), vec![]);
    let mut earlier = Plan::keep_all(msgs.len());
    earlier.replace(3, placeholder.clone());
    earlier.drop_unit(&conv, conv.unit_of(4));
    // A later plan dropping the placeholder's unit keeps it dropped, and drops what the
    // earlier one dropped.
    let mut plan = Plan::keep_all(msgs.len());
    plan.drop_unit(&conv, conv.unit_of(3));
    impose(&conv, &mut plan, earlier.actions().iter(), &[]);
    assert_eq!(plan.dropped(), vec![2, 3, 4, 5]);
    assert!(plan.check_units(&conv).is_ok());
    // A later plan keeping it gets the earlier placeholder back.
    let mut plan = Plan::keep_all(msgs.len());
    impose(&conv, &mut plan, earlier.actions().iter(), &[]);
    assert_eq!(plan.action(3), &Action::Replace(Box::new(placeholder)));
    assert_eq!(plan.dropped(), vec![4, 5]);
  }

  /// A session as issue 42 found it: a system prompt and a task, then `steps` steps reading
  /// files of 300 to 1,500 tokens, a third of them two calls in parallel (one assistant
  /// message, a result each); deterministic for `seed`.
  fn parallel_session(seed: u64, steps: usize) -> Vec<Message> {
    let mut state = seed;
    let mut next = move |n: u64| {
      state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
      (state >> 33) % n
    };
    let mut msgs = vec![
      Message::text(Role::System, "You are a coding agent. Read before you edit."),
      user("TASK: fix the parser bug in src/parse.ts and add a test."),
    ];
    let mut id = 0;
    for _ in 0..steps {
      let calls = if next(3) == 0 { 2 } else { 1 };
      let mut m = Message::text(Role::Assistant, "");
      let mut results = Vec::new();
      for _ in 0..calls {
        id += 1;
        let (cid, path) = (format!("c{id}"), format!("src/f{id}.ts"));
        m.tool_calls.push(crate::model::message::ToolCall {
          id: cid.clone(),
          name: "read_file".into(),
          arguments: format!("{{\"path\":\"{path}\"}}"),
        });
        results
          .push(result(&cid, &big(&format!("{path}:{}", next(1000)), 38 + next(150) as usize)));
      }
      msgs.push(m);
      msgs.extend(results);
    }
    msgs
  }

  /// Issue 42: sessions with parallel calls replayed call by call (each time the results of a
  /// step are all in), in windows of 3,000 and 6,000 tokens, in every strategy. The request
  /// is never over the window; the system prompt is always sent, and so is the task (every
  /// strategy keeps it unless told otherwise); and a message once shortened keeps its text at
  /// every later re-plan while its unit is sent.
  #[test]
  fn replans_keep_the_system_prompt_the_task_and_earlier_cuts() {
    let strategies = || {
      [
        Strategy::Priority(ClassifyOptions::default()),
        Strategy::Placeholders(ClassifyOptions::default(), None),
        Strategy::Truncate(TruncationConfig::default()),
        Strategy::Roles(MaxContextOptions::default()),
        Strategy::Age,
      ]
    };
    for seed in 1..=6 {
      let msgs = parallel_session(seed, 30);
      for window in [3_000, 6_000] {
        for strategy in strategies() {
          let name = strategy.name();
          let mut p = policy(window, strategy);
          let mut shortened: std::collections::HashMap<usize, Arc<str>> = Default::default();
          let mut replans = 0;
          for end in 3..=msgs.len() {
            if !msgs[end - 1].is_tool_result() || msgs.get(end).is_some_and(|m| m.is_tool_result())
            {
              continue;
            }
            let conv = Conversation::new(&msgs[..end], ENC);
            let step = p.step(&conv);
            let at = format!("{name}, window {window}, seed {seed}, {end} messages");
            replans += usize::from(step.decision.replanned());
            assert!(step.total_tokens <= window, "{at}: {} tokens", step.total_tokens);
            // Sent whole: the last step's results alone can always be cut to fit beside them.
            assert!(matches!(step.plan.action(0), Action::Keep), "{at}: the system prompt");
            assert!(matches!(step.plan.action(1), Action::Keep), "{at}: the task");
            for i in 0..end {
              match step.plan.action(i) {
                Action::Replace(r) => {
                  let before = shortened.entry(i).or_insert_with(|| r.content.clone());
                  assert!(*before == r.content, "{at}: message {i} shortened again");
                }
                Action::Drop => {
                  shortened.remove(&i);
                }
                Action::Keep => {}
              }
            }
          }
          assert!(replans > 2, "{name}, window {window}: {replans} re-plans");
        }
      }
    }
  }

  #[test]
  fn truncation_uses_the_largest_max_age_that_fits() {
    let msgs = session(30);
    let conv = Conversation::new(&msgs, ENC);
    let config = TruncationConfig { max_age: 20, ..Default::default() };
    let at = |max_age: usize| {
      truncate_old_tool_outputs(&conv, &TruncationConfig { max_age, ..config.clone() })
        .total_tokens(&conv)
    };
    let target = at(12);
    let plan = truncate_to(&conv, &config, target);
    assert_eq!(plan.total_tokens(&conv), target);
    assert!(at(13) > target);
    // Within the configured max_age already: that plan.
    assert_eq!(truncate_to(&conv, &config, at(20)).total_tokens(&conv), at(20));
    // Out of reach: max_age 0.
    assert_eq!(truncate_to(&conv, &config, 0).total_tokens(&conv), at(0));
    let Action::Replace(r) = plan.action(3) else { panic!("replaced") };
    assert_eq!(r.meta[1], ("_truncatedAt", MetaValue::Number(29.0)));
  }
}
