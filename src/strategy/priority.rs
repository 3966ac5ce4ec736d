//! Phase 2 trimming: take what matters least first ([`ContentPriority`]).
//!
//! Every message is classified once ([`crate::analysis::classify`]). Removal works on units (a call with
//! all its results, or a single message); a unit's priority is the **highest** of its members'.
//! The [`anchored_units`] (system messages, the last message's unit) are never dropped; every
//! other unit is taken lowest priority first, oldest first within a priority, the seed's
//! never-truncated tiers (`MODIFIED_FILES` and up) last ([`trim_order`]). Both strategies go
//! down that order on one ladder (`Shorten`):
//!
//! 1. each unit's tool results are shortened until the request fits: [`trim_by_priority`] cuts
//!    them to head and tail, [`trim_with_placeholders`] replaces them with placeholders (the
//!    call stays, so the pair stays valid); a unit without results is cut when that alone makes
//!    the request fit, else dropped; a never-truncated one (the task) is cut as far as needed
//!    and dropped only in step 2. This goes tier by tier: before a unit of a higher tier that
//!    may be dropped is shortened, the units of the tiers below it go whole, oldest first, as
//!    far as needed (the never-truncated tiers are all shortened before any of them is dropped),
//!    and, in [`trim_by_priority`], so do the older views of files before a newer one
//!    (`RECENT_FILE_READS`) is cut;
//! 2. when everything shortened is still too much, the fewest units, first in the order, are
//!    dropped whole, and step 1 runs again after them only as far as needed;
//! 3. the most important first, dropped units come back, whole or shortened, where they fit,
//!    and shortened units are whole again (or shortened less) where the budget has room.
//!
//! Both then make the request open as the format wants (Anthropic: a user message first) and,
//! as a last resort when the anchors alone exceed the target, cut them to head and tail, the
//! system messages last of all, down to their markers alone when nothing larger fits (the
//! smallest request the strategy reaches: a smaller budget never gives a larger one). What
//! each rule does to what an agent goes on to use is measured in docs/quality.md.

use std::borrow::Cow;

use crate::analysis::classify::{
  classify_with_operations, conversation_classes, Classes, Classification, ClassifyOptions,
  ContentPriority, Modified,
};
use crate::analysis::file_ops::numbered_file_operations;
use crate::analysis::file_tracker::FileTracker;
use crate::model::conversation::Conversation;
use crate::model::cut::{cut_content, cut_content_to_marker, MIN_CUT_BUDGET};
use crate::model::tokens::message_content_tokens;
use crate::plan::{
  replacement, replacement_counted, replacement_of_results, Action, MetaValue, Opening, Plan,
  Replacement,
};
use crate::strategy::placeholder::{PlaceholderFields, PlaceholderTemplate};
use crate::strategy::replan;
use crate::strategy::{anchored_units, Outcome, Tally};

/// How many characters of the removed content a file placeholder previews.
pub const PLACEHOLDER_PREVIEW_CHARS: usize = 100;

/// Options of the priority strategies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriorityOptions {
  /// The budget, in request tokens (reply priming included).
  pub target_tokens: usize,
  /// How to classify messages.
  pub classify: ClassifyOptions,
  /// The placeholder of [`trim_with_placeholders`] for every tool result; `None` for the seed's
  /// (see [`placeholder`]).
  pub placeholder: Option<PlaceholderTemplate>,
  /// [`trim_with_placeholders`]: keep every placeholder as made. By default (`false`), where the
  /// give-back (step 3, the most important first) reaches a placeholder whose unit cannot be
  /// whole, the placeholder gives way to its result cut to head and tail to fill the room left,
  /// if that is at least twice the placeholder.
  pub keep_placeholders: bool,
  /// Re-plan only at the history's re-plan points, a step of this many tokens apart
  /// ([`crate::strategy::replan`]): the history up to the last point is trimmed to the budget
  /// less a step and what came after is appended whole, so that while the history grows by
  /// less than a step every decision, and its text, stays as it was. 0 plans the whole history
  /// on every call (the seed's way).
  pub replan_step: usize,
}

/// The outcome of a priority strategy with the classification it was based on.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityTrim {
  /// The decisions and their cost.
  pub outcome: Outcome,
  /// Every message's classification, by index; with [`PriorityOptions::replan_step`], those of
  /// the messages planned (up to the last re-plan point), the ones the decisions were made on.
  pub classification: Vec<Classification>,
}

/// Trims `conv` to `options.target_tokens`, lowest priority first: tool results cut to head and
/// tail, units dropped whole only when that is not enough (see the module docs).
///
/// Files count as modified when `tracker` says so; without a tracker one is built from the
/// conversation.
pub fn trim_by_priority(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
) -> PriorityTrim {
  from_last_point(conv, options, |conv, options| {
    trim_by_priority_keeping(conv, tracker, options, &[], Removal::Request)
  })
}

/// `trim` of `conv`, or, with a [`PriorityOptions::replan_step`], `trim` of the history up to
/// its last re-plan point ([`replan::last_point`]) to the budget less a step (nothing left
/// when the step is the budget or more), what came after kept whole. The classification is
/// then that of the planned messages, the ones the decisions were made on (those after are all
/// kept). When that is over the budget (the planned part cannot shrink enough), the smaller of
/// it and `trim` of the whole.
///
/// A smaller budget never sends more: the point does not depend on the budget and `trim` never
/// sends more for a smaller budget, so the planned request only shrinks with the budget; once
/// it no longer fits, it fits no smaller budget either (the planned part is at its smallest),
/// and the smaller of two requests that each only shrink only shrinks.
fn from_last_point(
  conv: &Conversation<'_>,
  options: &PriorityOptions,
  trim: impl Fn(&Conversation<'_>, &PriorityOptions) -> PriorityTrim,
) -> PriorityTrim {
  let (target, step) = (options.target_tokens, options.replan_step);
  let point =
    (step > 0 && conv.total_tokens() > target).then(|| replan::last_point(conv, step)).flatten();
  let Some(point) = point else { return trim(conv, options) };
  let tokens = (0..point).map(|i| conv.tokens(i)).collect();
  let planned =
    Conversation::with_tokens(conv.messages()[..point].to_vec(), conv.encoding(), tokens)
      .with_format(conv.format());
  let smaller = PriorityOptions {
    target_tokens: target.saturating_sub(step),
    replan_step: 0,
    ..options.clone()
  };
  let part = trim(&planned, &smaller);
  let mut plan = part.outcome.plan;
  plan.extend_kept(conv.len());
  let stable =
    PriorityTrim { outcome: Outcome::new(conv, plan, target), classification: part.classification };
  if !stable.outcome.over_budget {
    return stable;
  }
  // Even the planned part at its smallest leaves no room for what came after: the whole
  // history is planned, unless that sends more (a smaller budget never sends more).
  let whole = trim(conv, options);
  if whole.outcome.total_tokens < stable.outcome.total_tokens {
    whole
  } else {
    stable
  }
}

/// How a priority trim may treat what it removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
  /// For a request: units may be cut to head and tail, and every tier goes when it must
  /// ([`trim_by_priority`]).
  Request,
  /// For an archive (the pruner): units are only kept or dropped whole (a cut message would be
  /// neither archived nor whole), and the tiers the seed never drops
  /// ([`ContentPriority::is_protected`]) stay.
  Archive,
}

/// [`trim_by_priority`] that also never drops the units flagged `true` in `keep` (indexed by
/// unit; missing entries are `false`), e.g. the units of the last messages, and removes as
/// `removal` says.
pub fn trim_by_priority_keeping(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
  keep: &[bool],
  removal: Removal,
) -> PriorityTrim {
  let (classes, operations) = conversation_classes(conv, tracker, &options.classify);
  let plan = priority_plan(conv, &classes, options, keep, removal);
  let classification = classes.classifications(conv, &operations);
  PriorityTrim { outcome: Outcome::new(conv, plan, options.target_tokens), classification }
}

/// The plan of [`trim_by_priority`], made to follow the format's rules ([`Plan::conform`]) as
/// its outcome's is, without the outcome's sums and the classifications (what a strategy that
/// replans every turn, such as [`crate::strategy::cache_policy::Strategy::plan`], reads).
pub fn trim_by_priority_plan(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
) -> Plan {
  let (classes, _) = conversation_classes(conv, tracker, &options.classify);
  let mut plan = priority_plan(conv, &classes, options, &[], Removal::Request);
  plan.conform(conv);
  plan
}

/// The decisions of [`trim_by_priority_keeping`] for the messages classified `classes`.
fn priority_plan(
  conv: &Conversation<'_>,
  classes: &Classes,
  options: &PriorityOptions,
  keep: &[bool],
  removal: Removal,
) -> Plan {
  let target = options.target_tokens;
  let priorities = unit_priorities_by(conv, |i| classes.priority(i));
  let mut order = trim_order_keeping(conv, &priorities, keep);
  let (mut plan, mut tally) = match removal {
    Removal::Request => Shorten::new(conv, &order, &priorities, target, Shortening::Cuts).run(),
    Removal::Archive => {
      order.retain(|&u| !priorities[u].is_protected());
      let mut plan = Plan::keep_all(conv.len());
      let mut tally = Tally::keep_all(conv);
      let dropped = ladder(conv, &order, &mut plan, &mut tally, target);
      backfill(conv, &dropped, &mut plan, &mut tally, target);
      (plan, tally)
    }
  };
  let fits = fit_opening(conv, &order, &mut plan, &mut tally, target);
  if removal == Removal::Request && !fits {
    let anchored = anchored_units(conv);
    cut_anchors_to_fit(conv, &order, &priorities, &anchored, &mut plan, &mut tally, target);
  }
  plan
}

/// Goes down the trimming order until the request fits `target`, dropping units whole, and
/// returns the units dropped, in that order.
fn ladder(
  conv: &Conversation<'_>,
  order: &[usize],
  plan: &mut Plan,
  tally: &mut Tally,
  target: usize,
) -> Vec<usize> {
  let mut dropped = Vec::new();
  for &u in order {
    if tally.total() <= target {
      break;
    }
    tally.drop_unit(conv, plan, u);
    dropped.push(u);
  }
  dropped
}

/// The messages of unit `u` that `plan` keeps as they are and a cut may shorten
/// ([`cuttable_message`]): tool results (those of a message of several cut one by one) and,
/// with `plain`, user messages that answer nothing; the largest first.
fn cuttable(conv: &Conversation<'_>, u: usize, plan: &Plan, plain: bool) -> Vec<usize> {
  let mut candidates: Vec<usize> = conv.units()[u]
    .members
    .iter()
    .copied()
    .filter(|&i| matches!(plan.action(i), Action::Keep))
    .filter(|&i| cuttable_message(conv, i, plain))
    .collect();
  largest_first(conv, &mut candidates);
  candidates
}

/// Whether a cut may shorten message `i`: a tool result answering one call (its content is
/// replaced), a message whose results are apart (each cut on its own,
/// [`crate::model::message::Message::has_results_apart`]) and, with `plain`, a user turn; never
/// an assistant message, whose content holds its calls in two formats.
fn cuttable_message(conv: &Conversation<'_>, i: usize, plain: bool) -> bool {
  let shape = conv.shape(i);
  shape.is_single_result() || shape.has_results_apart() || (plain && shape.is_user_turn())
}

/// Whether [`cut_within`] makes cuts that together leave the request over its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
  /// Every cut that helps is made, whether or not the request then fits.
  AsFarAsItGoes,
  /// The cuts are made only if the request then fits. They are not even tried when cutting
  /// every candidate to [`MIN_CUT_BUDGET`] could not free what is missing: an estimate, as a
  /// cut may end a few tokens below it (at a whole line), so a fit this close is missed and the
  /// unit goes instead (a smaller request).
  IfItFits,
  /// [`Fill::IfItFits`] bounded by each candidate's own smallest cut (memoised in its message),
  /// so that no fit is missed: the last rung, where a missed fit falls back to a larger
  /// request, which a smaller budget must never give (issue 42).
  IfItFitsExactly,
}

/// Cuts `candidates` (messages `plan` keeps as they are) in turn, each by what is still
/// missing, until the request fits `target`, as `fill` says. Returns whether it fits.
///
/// Cost: nothing is copied, and with [`Fill::IfItFits`], when even cutting every candidate to
/// the smallest cut ([`MIN_CUT_BUDGET`]) could not free what is missing, nothing is tokenised
/// either, so a strategy may ask this of every unit it goes through.
fn cut_within(
  conv: &Conversation<'_>,
  candidates: Vec<usize>,
  plan: &mut Plan,
  tally: &mut Tally,
  target: usize,
  fill: Fill,
) -> bool {
  let missing = tally.total().saturating_sub(target);
  if missing == 0 {
    return true;
  }
  let short = match fill {
    Fill::AsFarAsItGoes => false,
    Fill::IfItFits => most_cuts_free(conv, &candidates) < missing,
    Fill::IfItFitsExactly => {
      let smallest = |&i: &usize| cut_result(conv, i, usize::MAX, Depth::Head).map(|r| r.tokens);
      let free: usize = candidates
        .iter()
        .map(|i| conv.tokens(*i).saturating_sub(smallest(i).unwrap_or(usize::MAX)))
        .sum();
      free < missing
    }
  };
  if short {
    return false;
  }
  let all_or_nothing = fill != Fill::AsFarAsItGoes;
  debug_assert!(
    candidates.iter().all(|&i| matches!(plan.action(i), Action::Keep)) && {
      let mut sorted = candidates.clone();
      sorted.sort_unstable();
      sorted.windows(2).all(|w| w[0] != w[1])
    },
    "cut_within cuts each message kept as it is, once"
  );
  let mut total = tally.total();
  let mut cuts = Vec::new();
  for i in candidates {
    let excess = total.saturating_sub(target);
    if excess == 0 {
      break;
    }
    if let Some(r) = cut_result(conv, i, excess, Depth::Head) {
      total = total - conv.tokens(i) + r.tokens;
      cuts.push((i, r));
    }
  }
  let fits = total <= target;
  if fits || !all_or_nothing {
    for (i, r) in cuts {
      tally.replace(conv, plan, i, r);
    }
  }
  fits
}

/// The most that cutting `messages` could free: each down to the smallest cut
/// ([`MIN_CUT_BUDGET`]), which is as far as a cut goes.
fn most_cuts_free<'i>(
  conv: &Conversation<'_>,
  messages: impl IntoIterator<Item = &'i usize>,
) -> usize {
  messages.into_iter().map(|&i| conv.tokens(i).saturating_sub(MIN_CUT_BUDGET)).sum()
}

/// The content tokens of `results` (a message's, [`crate::model::message::Message::split_results`])
/// and their places, largest first (the place breaks ties).
fn largest_results(
  results: &[crate::model::message::Message],
  encoding: crate::model::tokens::Encoding,
) -> (Vec<usize>, Vec<usize>) {
  let tokens: Vec<usize> = results.iter().map(|r| message_content_tokens(r, encoding)).collect();
  let mut order: Vec<usize> = (0..results.len()).collect();
  order.sort_by_key(|&k| (std::cmp::Reverse(tokens[k]), k));
  (tokens, order)
}

/// Sorts message indices largest first; the index breaks ties, so the order is deterministic.
fn largest_first(conv: &Conversation<'_>, indices: &mut [usize]) {
  indices.sort_by_key(|&i| (std::cmp::Reverse(conv.tokens(i)), i));
}

/// What [`cut_anchors_to_fit`] may cut, in the order it cuts them, among the messages of the
/// [`anchored_units`] that `plan` keeps as they are:
/// 1. tool results (each result of a message of several on its own) and plain user messages,
///    the largest first;
/// 2. the last message;
/// 3. the system and developer messages, the largest first.
///
/// Assistant messages are not cut: in Anthropic's and the AI SDK's formats their content holds
/// their tool calls, and a strategy decides the same in every format.
fn anchor_candidates(conv: &Conversation<'_>, anchored: &[bool], plan: &Plan) -> Vec<usize> {
  let Some(last) = conv.len().checked_sub(1) else { return Vec::new() };
  let kept = |i: usize| anchored[conv.unit_of(i)] && matches!(plan.action(i), Action::Keep);
  let output = |i: usize| cuttable_message(conv, i, true);
  let mut candidates: Vec<usize> = (0..last).filter(|&i| kept(i) && output(i)).collect();
  largest_first(conv, &mut candidates);
  if kept(last) && output(last) {
    candidates.push(last);
  }
  // Each message once: an instruction may be cuttable as well (a system message carrying a
  // tool result, the last message), and a message cut twice would be counted as cut from its
  // whole size twice (the fuzzer found the request's total going below zero).
  let mut listed = vec![false; conv.len()];
  candidates.iter().for_each(|&i| listed[i] = true);
  let mut instructions: Vec<usize> =
    (0..=last).filter(|&i| !listed[i] && kept(i) && conv.shape(i).is_instruction()).collect();
  largest_first(conv, &mut instructions);
  candidates.extend(instructions);
  candidates
}

/// The last rung: when the units every strategy keeps ([`anchored_units`]) do not fit `target`
/// on their own, they are cut to head and tail ([`crate::model::cut::cut_middle`]) in the order of
/// [`anchor_candidates`], each by what is still missing: the other results of the last call,
/// then the last message, and the instructions last of all. The most important dropped task or
/// agent instructions (a plain user message of a never-truncated tier) that such cuts make room
/// for comes back first; failing that, the most important one that fits cut itself (before the
/// anchors). When even the smallest heads and tails ([`MIN_CUT_BUDGET`]) do not fit, the
/// request is the smallest the strategy can reach, never everything whole (issue 42): the
/// opening user message [`Plan::conform`] would bring back is kept to be cut first, and every
/// candidate is cut further, in the same order and by what is still missing, down to its marker
/// alone ([`Depth::Marker`]); only then is the outcome over budget. So a smaller budget never
/// gives a larger request. A request the provider refuses for its length helps no one, and one
/// without its last message leaves the agent blind to what it just did; the head and the tail
/// of a text carry its command, its status and its closing instructions. What is cut is
/// reported by the cut marker and `_cutTokens`.
fn cut_anchors_to_fit(
  conv: &Conversation<'_>,
  order: &[usize],
  priorities: &[ContentPriority],
  anchored: &[bool],
  plan: &mut Plan,
  tally: &mut Tally,
  target: usize,
) {
  // What the messages may take: the target less the opening user message that
  // [`Plan::conform`] brings back (Anthropic), which cutting the anchors does not change.
  // (Called only when the request does not fit with that opening: see [`fit_opening`].)
  let room =
    |plan: &Plan| target.saturating_sub(plan.conform_tokens(conv, &mut Opening::new(conv)));
  // A plain user message of a never-truncated tier (the task, agent instructions) comes back if
  // cutting the anchors a little further makes room for it: the most important one that fits;
  // failing that, the most important one that fits cut itself (first, as the ladder cuts it
  // before any anchor).
  let plain_user = |u: usize| conv.units()[u].members.iter().all(|&i| conv.shape(i).is_user_turn());
  for cut_itself in [false, true] {
    for &u in order.iter().rev() {
      if !priorities[u].is_protected()
        || !plain_user(u)
        || !plan.is_dropped(conv.units()[u].first())
      {
        continue;
      }
      tally.keep_unit(conv, plan, u);
      let mut candidates = if cut_itself { cuttable(conv, u, plan, true) } else { Vec::new() };
      candidates.extend(anchor_candidates(conv, anchored, plan));
      if cut_within(conv, candidates, plan, tally, room(plan), Fill::IfItFitsExactly) {
        return;
      }
      tally.drop_unit(conv, plan, u);
    }
  }
  // Not even that: the smallest request the strategy can reach, rather than everything whole.
  // The opening user message that `Plan::conform` would bring back whole is kept now, to be cut
  // first; then each candidate is cut by what is still missing, to the smallest head and tail,
  // then, in the same order, further down to the marker alone.
  let mut conformed = plan.clone();
  conformed.conform(conv);
  let mut candidates = Vec::new();
  for (u, unit) in conv.units().iter().enumerate() {
    if plan.is_dropped(unit.first()) && !conformed.is_dropped(unit.first()) {
      tally.keep_unit(conv, plan, u);
      candidates.extend(cuttable(conv, u, plan, true));
    }
  }
  candidates.extend(anchor_candidates(conv, anchored, plan));
  let room = room(plan);
  if cut_within(conv, candidates.clone(), plan, tally, room, Fill::AsFarAsItGoes) {
    return;
  }
  for i in candidates {
    let excess = tally.total().saturating_sub(room);
    if excess == 0 {
      return;
    }
    let now = plan.tokens_of(conv, i);
    let from_whole = conv.tokens(i).saturating_sub(now) + excess;
    if let Some(r) = cut_result(conv, i, from_whole, Depth::Marker).filter(|r| r.tokens < now) {
      tally.replace(conv, plan, i, r);
    }
  }
}

/// How far [`cut_result`] may cut a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
  /// Down to [`MIN_CUT_BUDGET`]: a head and a tail are left (every rung of the ladder).
  Head,
  /// Down to the marker alone ([`cut_content_to_marker`]): the last resort, once every anchor
  /// cut to [`MIN_CUT_BUDGET`] still exceeds the budget. A message of several results has them
  /// all cut to [`MIN_CUT_BUDGET`] first, then each further, largest first.
  Marker,
}

/// Message `i` cut to head and tail to at most `max_tokens` (or to [`MIN_CUT_BUDGET`]); `None`
/// when a cut would not make it smaller.
pub(crate) fn cut_to(conv: &Conversation<'_>, i: usize, max_tokens: usize) -> Option<Replacement> {
  cut_result(conv, i, conv.tokens(i).saturating_sub(max_tokens), Depth::Head)
}

/// Message `i` cut to head and tail so that it is at least `excess` tokens smaller (or as
/// small as a cut gets: [`MIN_CUT_BUDGET`], or the marker alone with [`Depth::Marker`]), with
/// `_originalLength` and `_cutTokens`; `None` when a cut would not make it smaller. A message
/// whose results are apart has its results cut each on its own text, the largest first, each
/// by what is still missing.
fn cut_result(
  conv: &Conversation<'_>,
  i: usize,
  excess: usize,
  depth: Depth,
) -> Option<Replacement> {
  let m = conv.message(i);
  let encoding = conv.encoding();
  if conv.shape(i).has_results_apart() {
    let split = m.split_results();
    let (tokens, order) = largest_results(split, encoding);
    let mut missing = excess;
    let mut new: Vec<Option<crate::model::cut::Cut>> = vec![None; split.len()];
    let depths: &[Depth] = match depth {
      Depth::Head => &[Depth::Head],
      Depth::Marker => &[Depth::Head, Depth::Marker],
    };
    for &depth in depths {
      for &k in &order {
        if missing == 0 {
          break;
        }
        let now = new[k].as_ref().map_or(tokens[k], |c| c.tokens);
        let cut = match depth {
          Depth::Head => {
            cut_content(&split[k], now.saturating_sub(missing).max(MIN_CUT_BUDGET), encoding)
          }
          Depth::Marker => cut_content_to_marker(&split[k], now.saturating_sub(missing), encoding),
        };
        let Some(cut) = cut else { continue };
        if cut.tokens < now {
          missing = missing.saturating_sub(now - cut.tokens);
          new[k] = Some(cut);
        }
      }
    }
    let cut_tokens: usize = new.iter().flatten().map(|c| c.cut_tokens).sum();
    let new = new.into_iter().map(|c| c.map(|c| (c.text, c.tokens))).collect();
    let meta = vec![
      ("_originalLength", MetaValue::Number(m.content_utf16_len() as f64)),
      ("_cutTokens", MetaValue::Number(cut_tokens as f64)),
    ];
    let r = replacement_of_results(conv, i, new, meta);
    return (r.tokens < conv.tokens(i)).then_some(r);
  }
  let content = message_content_tokens(m, encoding);
  let cut = match depth {
    Depth::Head => cut_content(m, content.saturating_sub(excess).max(MIN_CUT_BUDGET), encoding)?,
    Depth::Marker => match content.saturating_sub(excess) {
      max if max >= MIN_CUT_BUDGET => cut_content(m, max, encoding)?,
      max => cut_content_to_marker(m, max, encoding)?,
    },
  };
  let meta = vec![
    ("_originalLength", MetaValue::Number(m.content_utf16_len() as f64)),
    ("_cutTokens", MetaValue::Number(cut.cut_tokens as f64)),
  ];
  let r = replacement_counted(conv, i, cut.text, cut.tokens, meta);
  (r.tokens < conv.tokens(i)).then_some(r)
}

/// Puts back the dropped units of `dropped` (in trimming order) that still fit, the most
/// important first: a large unit that had to go makes room for smaller ones below it, which
/// would otherwise be lost for nothing.
fn backfill(
  conv: &Conversation<'_>,
  dropped: &[usize],
  plan: &mut Plan,
  tally: &mut Tally,
  target: usize,
) {
  for &u in dropped.iter().rev() {
    if tally.total_with_whole(conv, plan, u) <= target {
      tally.keep_unit(conv, plan, u);
    }
  }
}

/// Where the format wants the conversation to open with a user message (Anthropic), makes the
/// plan open with one within `target`: [`Plan::conform`] keeps the latest user turn before the
/// first returned message; while that would put the request over `target`, the earliest
/// returned unit of `order` is dropped too, so the opening moves to a later user turn. Linear:
/// [`Plan::conform_tokens`] follows the drops. Returns whether the request fits `target`, that
/// opening included (which [`cut_anchors_to_fit`] would otherwise work out again).
fn fit_opening(
  conv: &Conversation<'_>,
  order: &[usize],
  plan: &mut Plan,
  tally: &mut Tally,
  target: usize,
) -> bool {
  if !conv.format().rules().first_must_be_user {
    return tally.total() <= target;
  }
  let mut opening = Opening::new(conv);
  let mut by_position: Vec<usize> = order.to_vec();
  by_position.sort_unstable();
  let mut next = by_position.iter();
  while tally.total() + plan.conform_tokens(conv, &mut opening) > target {
    let Some(&u) = next.find(|&&u| !plan.is_dropped(conv.units()[u].first())) else {
      return false;
    };
    tally.drop_unit(conv, plan, u);
  }
  true
}

/// The priority strategies' last rung for any plan (a [`crate::strategy::cache_policy`]
/// re-plan of any strategy): when the messages `plan` sends do not fit `target`, those of the
/// units flagged in `anchored` that it sends whole are cut as [`cut_anchors_to_fit`] cuts
/// them (tool results and plain user messages the largest first, then the last message, then
/// the instructions; to head and tail, then to the marker alone), so that the request is the
/// smallest this can reach. Nothing is dropped and no earlier shortening changes.
pub fn cut_anchors(conv: &Conversation<'_>, plan: &mut Plan, anchored: &[bool], target: usize) {
  let mut tally = Tally::of(conv, plan);
  if !fit_opening(conv, &[], plan, &mut tally, target) {
    cut_anchors_to_fit(conv, &[], &[], anchored, plan, &mut tally, target);
  }
}

/// Trims `conv` to `options.target_tokens`, replacing tool results with placeholders before
/// dropping anything that would break a pair (see the module docs).
pub fn trim_with_placeholders(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
) -> PriorityTrim {
  from_last_point(conv, options, |conv, options| placeholders_now(conv, tracker, options))
}

/// [`trim_with_placeholders`] of the whole of `conv`.
fn placeholders_now(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
) -> PriorityTrim {
  let (classification, tracker) = prepare(conv, tracker, &options.classify);
  let target = options.target_tokens;
  let priorities = unit_priorities(conv, &classification);
  let order = trim_order_keeping(conv, &priorities, &[]);
  let shortening = Shortening::Placeholders {
    classification: &classification,
    tracker: &tracker,
    template: options.placeholder.as_ref(),
    keep: options.keep_placeholders,
  };
  let (mut plan, mut tally) = Shorten::new(conv, &order, &priorities, target, shortening).run();
  if !fit_opening(conv, &order, &mut plan, &mut tally, target) {
    let anchored = anchored_units(conv);
    cut_anchors_to_fit(conv, &order, &priorities, &anchored, &mut plan, &mut tally, target);
  }
  debug_assert_eq!(tally.total(), plan.total_tokens(conv));
  PriorityTrim { outcome: Outcome::new(conv, plan, target), classification }
}

/// How the priority strategies shorten a unit's tool results before dropping units whole.
#[derive(Clone, Copy)]
enum Shortening<'s> {
  /// [`trim_by_priority`]: cut to head and tail ([`cut_result`]), each by what is still
  /// missing, down to [`MIN_CUT_BUDGET`].
  Cuts,
  /// [`trim_with_placeholders`]: the [`placeholder`], when it at least halves the result;
  /// with `keep`, every placeholder stays as made ([`PriorityOptions::keep_placeholders`]).
  Placeholders {
    classification: &'s [Classification],
    tracker: &'s FileTracker,
    template: Option<&'s PlaceholderTemplate>,
    keep: bool,
  },
}

/// The ladder both priority strategies share: shorten down the trimming order, drop the fewest
/// units whole when shortening everything is not enough, then bring back what still fits.
struct Shorten<'s, 'c> {
  conv: &'s Conversation<'c>,
  order: &'s [usize],
  /// Each unit's priority ([`unit_priorities`]).
  priorities: &'s [ContentPriority],
  target: usize,
  shortening: Shortening<'s>,
  /// Whether the ladder skips work whose outcome it knows: [`Shorten::from`] drops the tiers
  /// that go whole anyway without shortening them first ([`Shorten::hopeless_tier`]), and
  /// [`Shorten::restore`] leaves alone a unit that no cut could bring back. Always, but in the
  /// test that checks they change nothing.
  shortcuts: bool,
}

impl<'s, 'c> Shorten<'s, 'c> {
  /// The ladder of `conv` down `order` to `target`.
  fn new(
    conv: &'s Conversation<'c>,
    order: &'s [usize],
    priorities: &'s [ContentPriority],
    target: usize,
    shortening: Shortening<'s>,
  ) -> Self {
    Shorten { conv, order, priorities, target, shortening, shortcuts: true }
  }

  /// 1. Down the order, each unit's tool results are shortened until the request fits. A unit
  ///    without any is cut instead when that alone makes the request fit, else dropped, unless
  ///    it is of a tier the seed never drops ([`ContentPriority::is_protected`], e.g. the task):
  ///    that one is cut as far as needed, and goes only in step 2, after every unit below it.
  ///    Tier by tier ([`Shorten::from`]): the units of the lower tiers go whole before a unit
  ///    of a higher tier that may be dropped is shortened, and (cuts) older views of files
  ///    before a newer one.
  /// 2. If everything shortened is still too much, the fewest units, first in the order, go
  ///    whole, and the order is shortened again after them only as far as needed, so no unit
  ///    is dropped whole while one after it in the order is only shortened.
  /// 3. Up the order, the most important first: a dropped unit comes back whole when it fits,
  ///    else shortened when that fits; a shortened one is whole again when it fits (cut results
  ///    else cut less, to fill what is left).
  fn run(&self) -> (Plan, Tally) {
    let (conv, order, target) = (self.conv, self.order, self.target);
    let (mut plan, mut tally) = self.from(0);
    if tally.total() > target {
      let cut = ladder(conv, order, &mut plan, &mut tally, target).len();
      if tally.total() <= target {
        (plan, tally) = self.from(cut);
        // A cut can come out larger than what it was asked to free (its marker, parts it
        // keeps): then the next units of the order go too.
        ladder(conv, &order[cut..], &mut plan, &mut tally, target);
      }
    }
    // What had to go, or was shortened before a later unit was dropped (perhaps for nothing,
    // or more than needed), gets back what the budget has left, the most important first.
    for &u in self.order.iter().rev() {
      if plan.is_dropped(self.conv.units()[u].first()) {
        self.restore(u, &mut plan, &mut tally);
      } else {
        self.refill(u, &mut plan, &mut tally);
      }
    }
    (plan, tally)
  }

  /// Gives shortened unit `u` back what the budget has left: whole when that fits, else each
  /// shortened result cut again from its original, to fill it: a cut one where that is larger,
  /// a placeholder (unless `keep`) where that is at least twice the placeholder (the mirror of
  /// [`Shorten::placeholders`]' rule: the head and tail of a result the agent may copy from are
  /// worth more than a pointer to it, a sliver of them is not).
  fn refill(&self, u: usize, plan: &mut Plan, tally: &mut Tally) {
    let conv = self.conv;
    let members = &conv.units()[u].members;
    if !members.iter().any(|&i| matches!(plan.action(i), Action::Replace(_))) {
      return;
    }
    if tally.total_with_whole(conv, plan, u) <= self.target {
      tally.keep_unit(conv, plan, u);
      return;
    }
    match self.shortening {
      Shortening::Cuts => self.cut_again(u, plan, tally, |now| now + 1),
      Shortening::Placeholders { keep: false, .. } => self.cut_again(u, plan, tally, |now| now * 2),
      Shortening::Placeholders { keep: true, .. } => {}
    }
  }

  /// Cuts each shortened tool result of unit `u` (answering one call) again from its original,
  /// to fill the room the budget has left, where that comes to at least `least(now)` tokens,
  /// `now` being what it takes as shortened.
  fn cut_again(
    &self,
    u: usize,
    plan: &mut Plan,
    tally: &mut Tally,
    least: impl Fn(usize) -> usize,
  ) {
    let conv = self.conv;
    for &i in &conv.units()[u].members {
      if !matches!(plan.action(i), Action::Replace(_)) || !cuttable_message(conv, i, false) {
        continue;
      }
      let now = plan.tokens_of(conv, i);
      let room = now + self.target.saturating_sub(tally.total());
      // No cut could be both large enough and within the room: nothing to tokenise.
      if room < least(now) {
        continue;
      }
      let Some(r) = cut_result(conv, i, conv.tokens(i).saturating_sub(room), Depth::Head) else {
        continue;
      };
      if r.tokens >= least(now) && r.tokens <= room {
        tally.replace(conv, plan, i, r);
      }
    }
  }

  /// Drops the first `cut` units of the order, then shortens the next ones until the request
  /// fits, tier by tier: before the first unit of a higher tier that may be dropped is
  /// shortened, the units of the tiers below it go whole, oldest first, as far as needed. With
  /// cuts, recent file reads go one by one the same way: before a view is cut, the older views
  /// go whole.
  /// Returns the plan and its tally.
  fn from(&self, cut: usize) -> (Plan, Tally) {
    let conv = self.conv;
    let mut plan = Plan::keep_all(conv.len());
    let mut tally = Tally::keep_all(conv);
    let (removed, rest) = self.order.split_at(cut.min(self.order.len()));
    for &u in removed {
      tally.drop_unit(conv, &mut plan, u);
    }
    // The units of `rest` before this one are of lower tiers and not yet dropped whole.
    let mut lower = 0;
    let mut k = 0;
    while let Some(&u) = rest.get(k) {
      if tally.total() <= self.target {
        break;
      }
      let tier = self.priorities[u];
      let higher_tier = k > 0 && self.priorities[rest[k - 1]] < tier;
      // Cuts: views of files go whole, oldest first, before a newer one is cut, since an agent
      // copies from the middle of the view it works on, which a head and tail loses. (A
      // placeholder keeps a pointer to its view, the seed's contract: measured in
      // docs/history/recall-rounds.md, sixth round.)
      let newer_view = k > 0
        && tier == ContentPriority::RecentFileReads
        && self.priorities[rest[k - 1]] == tier
        && matches!(self.shortening, Shortening::Cuts);
      if (higher_tier || newer_view) && !tier.is_protected() {
        for &v in &rest[lower..k] {
          if tally.total() <= self.target {
            break;
          }
          if !plan.is_dropped(conv.units()[v].first()) {
            tally.drop_unit(conv, &mut plan, v);
          }
        }
        lower = k;
        if tally.total() <= self.target {
          break;
        }
      }
      if (k == 0 || higher_tier) && self.shortcuts {
        if let Some(end) = self.hopeless_tier(rest, k, &tally) {
          for &v in &rest[k..end] {
            tally.drop_unit(conv, &mut plan, v);
          }
          (lower, k) = (end, end);
          continue;
        }
      }
      if !self.shorten(u, &mut plan, &mut tally) && !tier.is_protected() {
        tally.drop_unit(conv, &mut plan, u);
      }
      k += 1;
    }
    (plan, tally)
  }

  /// When the tier starting at `rest[k]` (all of it kept whole) goes whole in [`Shorten::from`]
  /// whatever is done to it first, the end of the tier in `rest`; else `None`. That is when the
  /// request is still over the budget without any of it, and a higher tier that may be dropped
  /// follows: shortening its units could not bring the request within the budget (a cut unit
  /// still takes something), and on reaching the next tier its units go whole, oldest first, as
  /// far as needed, which is all of them. Deciding it from the sums skips cutting every unit of
  /// a long history's lower tiers only to drop them all.
  fn hopeless_tier(&self, rest: &[usize], k: usize, tally: &Tally) -> Option<usize> {
    let tier = self.priorities[rest[k]];
    if tier.is_protected() {
      return None;
    }
    let len = rest[k..].iter().take_while(|&&v| self.priorities[v] == tier).count();
    let end = k + len;
    let next = self.priorities[*rest.get(end)?];
    if next <= tier || next.is_protected() {
      return None;
    }
    let conv = self.conv;
    let whole: usize = rest[k..end]
      .iter()
      .flat_map(|&v| conv.units()[v].members.iter())
      .map(|&i| conv.tokens(i))
      .sum();
    (tally.total().saturating_sub(whole) > self.target).then_some(end)
  }

  /// Shortens unit `u`: its tool results as [`Shortening`] says or, for a unit without any,
  /// its plain user messages cut to head and tail when that alone makes the request fit.
  /// Returns false when the unit has nothing to shorten and should go.
  fn shorten(&self, u: usize, plan: &mut Plan, tally: &mut Tally) -> bool {
    let conv = self.conv;
    let members = &conv.units()[u].members;
    if !members.iter().any(|&i| conv.shape(i).is_tool_result()) {
      let candidates = cuttable(conv, u, plan, true);
      if candidates.is_empty() {
        return false;
      }
      // A never-truncated one (the task) is shortened before any never-truncated unit is
      // dropped; any other only when that alone makes the request fit.
      let protected = self.priorities[u].is_protected();
      let fill = if protected { Fill::AsFarAsItGoes } else { Fill::IfItFits };
      return cut_within(conv, candidates, plan, tally, self.target, fill) || protected;
    }
    match self.shortening {
      Shortening::Cuts => {
        let candidates = cuttable(conv, u, plan, false);
        cut_within(conv, candidates, plan, tally, self.target, Fill::AsFarAsItGoes);
      }
      Shortening::Placeholders { .. } => self.placeholders(u, plan, tally),
    }
    true
  }

  /// With [`Shortening::Placeholders`], replaces the tool results of unit `u`, largest first and
  /// only until the request fits, with their placeholders where that at least halves them (a
  /// smaller saving is not worth what the agent loses: the unit stays whole, or goes whole when
  /// the budget needs it); with cuts, nothing.
  fn placeholders(&self, u: usize, plan: &mut Plan, tally: &mut Tally) {
    let Shortening::Placeholders { classification, tracker, template, .. } = self.shortening else {
      return;
    };
    let conv = self.conv;
    let mut results: Vec<usize> = conv.units()[u]
      .members
      .iter()
      .copied()
      .filter(|&i| conv.shape(i).is_tool_result() && !plan.is_dropped(i))
      .collect();
    // The results of parallel calls (several files read in one step) go largest first, only
    // as many as the budget needs.
    largest_first(conv, &mut results);
    for i in results {
      let Some(missing) = tally.total().checked_sub(self.target).filter(|&m| m > 0) else {
        break;
      };
      let r = placeholder_freeing(conv, i, &classification[i], tracker, template, missing);
      // Results apart were each replaced only where that halves them.
      let apart = conv.shape(i).has_results_apart();
      if (apart && r.tokens < conv.tokens(i)) || r.tokens * 2 <= conv.tokens(i) {
        tally.replace(conv, plan, i, r);
      }
    }
  }

  /// Brings dropped unit `u` back if it fits: whole, else shortened (its tool results as
  /// [`Shortening`] says, its plain user messages cut) when that fits. Returns whether it did.
  fn restore(&self, u: usize, plan: &mut Plan, tally: &mut Tally) -> bool {
    let conv = self.conv;
    let whole = tally.total_with_whole(conv, plan, u);
    let fits = whole <= self.target;
    // With cuts alone, a unit that even its smallest cuts could not bring within the budget
    // stays dropped, untouched (what `cut_within` below would refuse without cutting): most
    // dropped units of a long history, tried every call.
    if !fits && self.shortcuts && matches!(self.shortening, Shortening::Cuts) {
      let members = &conv.units()[u].members;
      let cuttable = members.iter().filter(|&&i| cuttable_message(conv, i, true));
      if most_cuts_free(conv, cuttable) < whole - self.target {
        return false;
      }
    }
    tally.keep_unit(conv, plan, u);
    if fits {
      return true;
    }
    self.placeholders(u, plan, tally);
    let candidates = cuttable(conv, u, plan, true);
    if cut_within(conv, candidates, plan, tally, self.target, Fill::IfItFits) {
      return true;
    }
    tally.drop_unit(conv, plan, u);
    false
  }
}

/// Classifies `conv`, building a tracker from it when none is given.
fn prepare<'t>(
  conv: &Conversation<'_>,
  tracker: Option<&'t FileTracker>,
  options: &ClassifyOptions,
) -> (Vec<Classification>, Cow<'t, FileTracker>) {
  let operations = numbered_file_operations(conv);
  let tracker = match tracker {
    Some(t) => Cow::Borrowed(t),
    None => Cow::Owned(FileTracker::from_operations(conv, &operations, 0.0)),
  };
  let modified = Modified::By(&|p| tracker.was_modified(p));
  let classification = classify_with_operations(conv, &operations, modified, options);
  (classification, tracker)
}

/// Each unit's priority: the highest of its members'.
pub fn unit_priorities(
  conv: &Conversation<'_>,
  classification: &[Classification],
) -> Vec<ContentPriority> {
  unit_priorities_by(conv, |i| classification.get(i).map(|c| c.priority))
}

/// [`unit_priorities`] of the messages whose priorities `priority` gives.
fn unit_priorities_by(
  conv: &Conversation<'_>,
  priority: impl Fn(usize) -> Option<ContentPriority>,
) -> Vec<ContentPriority> {
  conv
    .units()
    .iter()
    .map(|u| u.members.iter().filter_map(|&i| priority(i)).max().unwrap_or(ContentPriority::System))
    .collect()
}

/// The units that may be trimmed, in trimming order: every unit but the
/// [`anchored_units`], lowest priority first, oldest first within a priority. The tiers the
/// seed never drops (system aside: [`ContentPriority::is_protected`]) come last, so they are
/// shortened and dropped only when nothing else is left.
pub fn trim_order(conv: &Conversation<'_>, classification: &[Classification]) -> Vec<usize> {
  trim_order_keeping(conv, &unit_priorities(conv, classification), &[])
}

/// [`trim_order`] of the units whose priorities are `priorities` ([`unit_priorities`]), without
/// the units flagged `true` in `keep` (indexed by unit).
pub fn trim_order_keeping(
  conv: &Conversation<'_>,
  priorities: &[ContentPriority],
  keep: &[bool],
) -> Vec<usize> {
  let anchored = anchored_units(conv);
  let trimmable = |u: usize| {
    !anchored[u]
      && !keep.get(u).copied().unwrap_or(false)
      && priorities[u] != ContentPriority::System
  };
  // Units are numbered by their first message, so index order is oldest first within a tier:
  // placing them by tier (a counting sort) sorts by (tier, index) in linear time.
  let mut starts = [0usize; ContentPriority::ALL.len() + 1];
  for u in (0..priorities.len()).filter(|&u| trimmable(u)) {
    starts[priorities[u].rank() + 1] += 1;
  }
  for t in 1..starts.len() {
    starts[t] += starts[t - 1];
  }
  let mut sorted = vec![0; starts[ContentPriority::ALL.len()]];
  for u in (0..priorities.len()).filter(|&u| trimmable(u)) {
    let at = &mut starts[priorities[u].rank()];
    sorted[*at] = u;
    *at += 1;
  }
  sorted
}

/// The placeholder that replaces tool result `i`, with `_truncated: true` and
/// `_originalTokens`.
///
/// With a `template`, that template rendered with the result's age, tokens and file path.
/// Without, the seed's, less what changes from one call to the next (issue 44: a placeholder
/// whose decision stands keeps its text, so a prompt cache keeps it): a result about a file the
/// tracker knows gets [`file_placeholder`]; any other result
/// `[Content truncated - file: P - T tokens]` (the file part only when the result is about a
/// file), where T is its tokens. The seed also wrote the result's age in steps, and in a file
/// placeholder when the file was last accessed and whether it was modified; each changes as
/// the history grows, and the file's current content is one read away, which it says.
///
/// A message whose results are apart (parallel calls answered in one Anthropic or AI SDK
/// message, [`crate::model::message::Message::has_results_apart`]) has each result replaced by
/// its own placeholder (its file, its content tokens), where that at least halves it; the
/// others are kept, as are its other parts.
pub fn placeholder(
  conv: &Conversation<'_>,
  i: usize,
  classification: &Classification,
  tracker: &FileTracker,
  template: Option<&PlaceholderTemplate>,
) -> Replacement {
  placeholder_freeing(conv, i, classification, tracker, template, usize::MAX)
}

/// [`placeholder`], where the results of a message whose results are apart are replaced the
/// largest first and only until `missing` tokens are freed.
fn placeholder_freeing(
  conv: &Conversation<'_>,
  i: usize,
  classification: &Classification,
  tracker: &FileTracker,
  template: Option<&PlaceholderTemplate>,
  missing: usize,
) -> Replacement {
  let m = conv.message(i);
  let meta = vec![
    ("_truncated", MetaValue::Bool(true)),
    ("_originalTokens", MetaValue::Number(conv.tokens(i) as f64)),
  ];
  let path = classification.metadata.file_path.as_deref();
  if !conv.shape(i).has_results_apart() {
    let text =
      placeholder_text(conv, i, conv.tokens(i), path, &m.content_text(), tracker, template);
    return replacement(conv, i, text, meta);
  }
  let encoding = conv.encoding();
  let split = m.split_results();
  let several = m.several_results();
  let operations = crate::analysis::file_ops::file_operations_of(conv, i);
  // Each result's file: its own operation's (a result beside a text block is the message's).
  let path_of = |k: usize| match several.get(k) {
    Some(r) => operations.iter().find(|op| op.part == Some(r.part)).map(|op| op.path.as_str()),
    None => path,
  };
  let (tokens, order) = largest_results(split, encoding);
  let mut new = vec![None; split.len()];
  let mut freed = 0;
  for k in order {
    if freed >= missing {
      break;
    }
    let content = split[k].content_text();
    let text = placeholder_text(conv, i, tokens[k], path_of(k), &content, tracker, template);
    let new_tokens = crate::model::tokens::count_tokens(&text, encoding);
    if new_tokens * 2 <= tokens[k] {
      freed += tokens[k] - new_tokens;
      new[k] = Some((std::sync::Arc::from(text), new_tokens));
    }
  }
  replacement_of_results(conv, i, new, meta)
}

/// The text of [`placeholder`] for a result of message `i` of `tokens` tokens, about `path`,
/// whose text is `content`.
fn placeholder_text(
  conv: &Conversation<'_>,
  i: usize,
  tokens: usize,
  path: Option<&str>,
  content: &str,
  tracker: &FileTracker,
  template: Option<&PlaceholderTemplate>,
) -> String {
  let age = conv.age(i);
  match (template, path, path.and_then(|p| tracker.get(p))) {
    (Some(template), ..) => template.render(&PlaceholderFields { age, tokens, path }),
    (None, Some(path), Some(_)) => file_placeholder(path, content),
    (None, Some(path), None) => {
      format!("[Content truncated - file: {path} - {tokens} tokens]")
    }
    (None, None, _) => format!("[Content truncated - {tokens} tokens]"),
  }
}

/// The seed's `createFilePlaceholder`, less what changes as the history grows (see
/// [`placeholder`]): the file's path, the removed content's line count and first
/// [`PLACEHOLDER_PREVIEW_CHARS`] characters.
pub fn file_placeholder(path: &str, content: &str) -> String {
  let (lines, preview) = if content.is_empty() {
    ("unknown".to_string(), "N/A".to_string())
  } else {
    (
      (content.matches('\n').count() + 1).to_string(),
      content.chars().take(PLACEHOLDER_PREVIEW_CHARS).collect(),
    )
  };
  format!(
    "[File: {path}\n  Lines: {lines}\n  Preview: {preview}...\n\n  Use read_file to retrieve current content]"
  )
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::analysis::classify::classify_conversation;
  use crate::analysis::file_ops::FileOpKind;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::testing::{call, named_result, result, user};

  fn options(target: usize, turns: usize) -> PriorityOptions {
    PriorityOptions {
      target_tokens: target,
      classify: ClassifyOptions {
        recent_threshold: turns,
        preserve_recent_turns: turns,
        ..ClassifyOptions::default()
      },
      ..PriorityOptions::default()
    }
  }

  fn session() -> Vec<Message> {
    vec![
      Message::text(Role::System, "You are a coding agent."),
      Message::text(Role::User, "Fix the bug in /w/b.ts"),
      call("1", "read_file", r#"{"path":"/w/a.ts"}"#),
      result("1", &"const a = 1;\n".repeat(80)),
      call("2", "execute_bash", r#"{"command":"npm test"}"#),
      result("2", &"FAIL test/b.test.ts\n".repeat(60)),
      call("3", "edit_file", r#"{"path":"/w/b.ts"}"#),
      result("3", "edited"),
      call("4", "read_file", r#"{"path":"/w/c.ts"}"#),
      result("4", &"export const c = 3;\n".repeat(40)),
      Message::text(Role::Assistant, "Fixed."),
    ]
  }

  /// The ladder's shortcuts (a tier that goes whole anyway dropped without shortening it first,
  /// a unit that no cut could bring back left alone) change nothing: on every transcript and
  /// on all of them in one history, at every other budget from 1% to 95%, with cuts and with
  /// placeholders (the seed's and ones smaller than any cut), the ladder gives the same plan
  /// with them as without, and the first is taken somewhere.
  #[test]
  fn the_ladder_s_shortcuts_change_nothing() {
    let mut sessions = crate::testing::transcripts();
    let all: Vec<Message> = sessions
      .iter()
      .enumerate()
      .flat_map(|(k, (_, m))| m.iter().filter(move |m| k == 0 || m.role != Role::System).cloned())
      .collect();
    sessions.push(("all".into(), all));
    let mut taken = 0;
    for (name, messages) in &sessions {
      let conv = Conversation::from_refs(messages.iter().collect(), Encoding::O200kBase);
      let classification = classify_conversation(&conv, None, &ClassifyOptions::default());
      let tracker = FileTracker::from_conversation(&conv, 0.0);
      let order = trim_order(&conv, &classification);
      let priorities = unit_priorities(&conv, &classification);
      let placeholders = |template| Shortening::Placeholders {
        classification: &classification,
        tracker: &tracker,
        template,
        keep: false,
      };
      // The seed's placeholders, and ones far smaller than the smallest cut: a unit no cut
      // could bring back may come back with them.
      let tiny = PlaceholderTemplate::new("[cut]");
      for percent in (1..=95).step_by(2) {
        let target = conv.total_tokens() * percent / 100;
        for shortening in [Shortening::Cuts, placeholders(None), placeholders(Some(&tiny))] {
          let shorten = Shorten::new(&conv, &order, &priorities, target, shortening);
          let ladder = |shortcuts| {
            let (plan, tally) =
              Shorten { shortcuts, ..Shorten::new(&conv, &order, &priorities, target, shortening) }
                .run();
            (plan, tally.total())
          };
          assert_eq!(ladder(true), ladder(false), "{name} at {percent}%");
          taken += usize::from(shorten.hopeless_tier(&order, 0, &Tally::keep_all(&conv)).is_some());
        }
      }
    }
    assert!(taken > 0, "no tier was ever dropped at once");
  }

  /// The plan a replanning policy reads is the outcome's plan, on every transcript and on all
  /// of them joined, at budgets from 5% to 95%, in both formats' rules.
  #[test]
  fn the_plan_alone_is_the_outcome_s_plan() {
    let mut sessions = crate::testing::transcripts();
    let joined: Vec<Message> = sessions.iter().flat_map(|(_, m)| m.iter().cloned()).collect();
    sessions.push(("all joined".into(), joined));
    for (name, messages) in &sessions {
      for format in [crate::model::format::Format::OpenAi, crate::model::format::Format::Anthropic]
      {
        let conv = Conversation::new(messages, Encoding::O200kBase).with_format(format);
        for percent in (5..=95).step_by(15) {
          let options = options(conv.total_tokens() * percent / 100, 2);
          let plan = trim_by_priority_plan(&conv, None, &options);
          let outcome = trim_by_priority(&conv, None, &options).outcome;
          assert_eq!(plan, outcome.plan, "{name} at {percent}% in {format:?}");
        }
      }
    }
  }

  /// The trimming order is the units (anchored and system ones aside) sorted by tier, then
  /// index, on every transcript.
  #[test]
  fn the_trimming_order_is_sorted_by_tier_then_age() {
    for (name, messages) in crate::testing::transcripts() {
      let conv = Conversation::from_refs(messages.iter().collect(), Encoding::O200kBase);
      let classification = classify_conversation(&conv, None, &ClassifyOptions::default());
      let priorities = unit_priorities(&conv, &classification);
      let anchored = crate::strategy::anchored_units(&conv);
      let mut want: Vec<usize> = (0..priorities.len())
        .filter(|&u| !anchored[u] && priorities[u] != ContentPriority::System)
        .collect();
      want.sort_by_key(|&u| (priorities[u], u));
      let order = trim_order(&conv, &classification);
      assert_eq!(order, want, "{name}");
      assert!(order.windows(2).any(|w| priorities[w[0]] < priorities[w[1]]), "{name}: one tier");
    }
  }

  #[test]
  fn never_removes_system_messages() {
    // The seed's case: the last message is a tool result answering no call (an orphan), so
    // it is dropped like any result.
    let mut msgs = vec![
      Message::text(Role::System, "You are a helpful assistant"),
      Message::text(Role::User, "Hello"),
      Message::text(Role::Tool, "a".repeat(10000)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_by_priority(&conv, None, &options(100, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![2]);
    assert!(!t.outcome.over_budget);
    assert!(t.outcome.total_tokens <= 100);
    // A last message that is not an orphan stays: nothing fits, over budget.
    msgs.push(Message::text(Role::User, "Thanks"));
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_by_priority(&conv, None, &options(0, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![1, 2]);
    assert!(t.outcome.over_budget);
  }

  #[test]
  fn the_last_message_is_kept_with_its_unit_and_cut_only_as_the_last_resort() {
    let msgs = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::User, "task"),
      call("1", "execute_bash", r#"{"command":"make"}"#),
      result("1", &"compiling module ...\n".repeat(400)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let floor = conv.tokens(0) + conv.tokens(2) + conv.tokens(3) + 3;
    for t in [trim_by_priority, trim_with_placeholders] {
      // Room for the anchors: only the task goes, the last message stays as it is.
      let out = t(&conv, None, &options(floor, 1)).outcome;
      assert_eq!(out.plan.dropped(), vec![1]);
      assert!(matches!(out.plan.action(3), Action::Keep) && !out.over_budget);
      // No room for the last output whole: its middle is cut so that the request fits.
      let out = t(&conv, None, &options(100, 1)).outcome;
      let Action::Replace(r) = out.plan.action(3) else { panic!("not cut") };
      assert!(r.content.contains(" tokens cut ...]"));
      assert!(r.meta.iter().any(|(k, _)| *k == "_cutTokens"));
      assert!(matches!(out.plan.action(2), Action::Keep));
      assert!(!out.over_budget && out.total_tokens <= 100);
      // Not even a cut fits: over budget, the last message cut to its marker alone, the
      // smallest the strategy reaches (issue 42: it used to be returned whole).
      let out = t(&conv, None, &options(0, 1)).outcome;
      let Action::Replace(r) = out.plan.action(3) else { panic!("not cut") };
      assert!(marker_only(r) && out.over_budget, "{}", r.content);
    }
  }

  #[test]
  fn when_even_the_cut_last_unit_does_not_fit_the_instructions_are_cut_last_of_all() {
    let mut thinking = call("1", "execute_bash", r#"{"command":"make"}"#);
    thinking.content = crate::model::message::Content::Text("I will now build it. ".repeat(100));
    let msgs = vec![
      Message::text(Role::System, "Use the tools below carefully.\n".repeat(150)),
      Message::text(Role::User, "task"),
      thinking,
      result("1", &"compiling module ...\n".repeat(100)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    for t in [trim_by_priority, trim_with_placeholders] {
      // The system message fits with the last unit once its output is cut: the system message
      // stays whole, the assistant's text too.
      let budget = conv.tokens(0) + conv.tokens(2) + 60;
      let out = t(&conv, None, &options(budget, 1)).outcome;
      assert!(!out.over_budget && out.total_tokens <= budget);
      assert!(matches!(out.plan.action(0), Action::Keep));
      assert!(matches!(out.plan.action(2), Action::Keep));
      assert!(matches!(out.plan.action(3), Action::Replace(_)));
      // Not even that: the system message is cut too, rather than the request refused.
      let out = t(&conv, None, &options(conv.tokens(0), 1)).outcome;
      assert!(!out.over_budget && out.total_tokens <= conv.tokens(0));
      let Action::Replace(system) = out.plan.action(0) else { panic!("system not cut") };
      assert!(system.content.starts_with("Use the tools below carefully."));
      assert!(system.content.contains(" tokens cut ...]"));
      assert!(matches!(out.plan.action(2), Action::Keep));
      assert!(out.plan.check_units(&conv).is_ok());
    }
  }

  #[test]
  fn when_the_last_output_alone_is_over_it_is_cut_further_to_keep_the_task() {
    // nanocoder's "preserves recent turns even with low-priority content".
    let msgs = vec![
      Message::text(Role::User, "User 1"),
      Message::text(Role::Assistant, "Assistant 1"),
      Message::text(Role::User, "User 3"),
      call("1", "bash", r#"{"command":"echo test"}"#),
      result("1", &"x".repeat(10_000)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert!(conv.tokens(4) > 400);
    for t in [trim_by_priority, trim_with_placeholders] {
      let out = t(&conv, None, &options(400, 2)).outcome;
      assert!(!out.over_budget && out.total_tokens <= 400);
      assert!(matches!(out.plan.action(2), Action::Keep), "the task");
      assert!(out.plan.is_dropped(0) && out.plan.is_dropped(1));
      assert!(matches!(out.plan.action(4), Action::Replace(_)));
    }
  }

  /// Whether `r` is a cut down to its marker alone: `[... N tokens cut ...]`, no head or tail.
  fn marker_only(r: &Replacement) -> bool {
    let text = r.content.trim();
    text.starts_with("[... ") && text.ends_with(" tokens cut ...]") && !text.contains('\n')
  }

  /// Issue 42's first case: a system prompt, a task and one 300-line tool result. At 88 tokens
  /// both the system prompt and the output are cut to the smallest head and tail; at 87 they
  /// used to come back whole (2,783 tokens, over budget). Now each smaller budget is met by
  /// cutting them further, down to their markers alone (41 tokens, the smallest the strategy
  /// reaches); below that the request stays at 41, over budget, and never grows.
  #[test]
  fn a_budget_below_the_smallest_head_and_tail_cuts_the_anchors_to_their_markers() {
    let msgs = vec![
      Message::text(Role::System, "You are a careful coding agent. Follow the rules.\n".repeat(60)),
      user("Fix the failing build"),
      call("1", "execute_bash", r#"{"command":"make"}"#),
      result("1", &crate::testing::lines("compiling module", 300)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(conv.total_tokens(), 2_791);
    for t in [trim_by_priority, trim_with_placeholders] {
      let at = |b| t(&conv, None, &options(b, 1)).outcome;
      for b in [88, 87] {
        // Met (cuts end at whole lines, so a few tokens may stay unused).
        let out = at(b);
        assert!(out.total_tokens <= b && !out.over_budget, "{} at {b}", out.total_tokens);
        // (The task goes first; it comes back where the cuts, ending at whole lines, leave
        // room for it.)
        assert!(matches!(out.plan.action(2), Action::Keep), "the call stays");
      }
      let mut before = at(88).total_tokens;
      for b in (1..88).rev() {
        let out = at(b);
        assert!(out.total_tokens <= before, "{} tokens at {b}, {before} above", out.total_tokens);
        assert_eq!(out.over_budget, out.total_tokens > b);
        before = out.total_tokens;
      }
      let out = at(40);
      assert_eq!((out.total_tokens, out.over_budget), (41, true));
      for i in [0, 3] {
        let Action::Replace(r) = out.plan.action(i) else { panic!("{i} not cut") };
        assert!(marker_only(r), "{i}: {}", r.content);
      }
      assert_eq!(at(1).plan, out.plan);
      assert!(out.plan.check_units(&conv).is_ok());
    }
  }

  /// Issue 42's second case: one unit of 60 parallel reads of 993 tokens each (an assistant
  /// message with 60 calls and their 60 results). At 2,900 tokens the results are cut to fit; at
  /// 2,800 they used to come back whole (60,256 tokens, over budget), as each could not be
  /// given the smallest head and tail. Now 2,800 is met too, the results cut each on its own,
  /// largest first, to the smallest head and tail, then some further to their markers; the
  /// smallest request is every result's marker alone (1,396 tokens, over budget), and no
  /// smaller budget gives more. The same in Anthropic's format, all the results in one message.
  #[test]
  fn many_parallel_results_are_each_cut_rather_than_all_returned_whole() {
    let mut calls = Message::text(Role::Assistant, "");
    let mut msgs = vec![Message::text(Role::System, "You are an agent."), user("Read the files")];
    for k in 0..60 {
      calls.tool_calls.push(crate::model::message::ToolCall {
        id: format!("c{k}"),
        name: "read_file".into(),
        arguments: format!(r#"{{"path":"src/f{k}.rs"}}"#),
      });
    }
    msgs.push(calls);
    for k in 0..60 {
      msgs.push(result(&format!("c{k}"), &crate::testing::lines(&format!("f{k} fn x()"), 110)));
    }
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!((conv.total_tokens(), conv.tokens(3)), (60_263, 993));
    for t in [trim_by_priority, trim_with_placeholders] {
      let at = |b| t(&conv, None, &options(b, 1)).outcome;
      for b in [2_900, 2_800] {
        let out = at(b);
        assert!(!out.over_budget && out.total_tokens <= b, "{} at {b}", out.total_tokens);
        assert!((3..63).all(|i| matches!(out.plan.action(i), Action::Replace(_))), "at {b}");
      }
      let out = at(1_000);
      assert_eq!((out.total_tokens, out.over_budget), (1_396, true));
      for i in 3..63 {
        let Action::Replace(r) = out.plan.action(i) else { panic!("{i} not cut") };
        assert!(marker_only(r), "{i}: {}", r.content);
      }
      assert!(matches!(out.plan.action(2), Action::Keep), "the calls stay");
      let mut before = usize::MAX;
      for b in (1..=3_000).rev().step_by(50) {
        let total = at(b).total_tokens;
        assert!(total <= before, "{total} tokens at {b}, {before} above");
        before = total;
      }
    }
    // Anthropic's format: the results in one user message, each cut on its own.
    let mut value = vec![serde_json::json!({"role": "user", "content": "Read the files"})];
    let calls: Vec<_> = (0..60)
      .map(|k| serde_json::json!({"type": "tool_use", "id": format!("c{k}"), "name": "read_file", "input": {"path": format!("src/f{k}.rs")}}))
      .collect();
    let results: Vec<_> = (0..60)
      .map(|k| serde_json::json!({"type": "tool_result", "tool_use_id": format!("c{k}"), "content": crate::testing::lines(&format!("f{k} fn x()"), 110)}))
      .collect();
    value.push(serde_json::json!({"role": "assistant", "content": calls}));
    value.push(serde_json::json!({"role": "user", "content": results}));
    let (format, msgs) =
      crate::model::format::parse_messages(&serde_json::Value::Array(value), None).unwrap();
    let conv = Conversation::new(&msgs, Encoding::O200kBase).with_format(format);
    let mut before = usize::MAX;
    for b in (1..=3_000).rev().step_by(50) {
      let out = trim_by_priority(&conv, None, &options(b, 1)).outcome;
      assert!(out.total_tokens <= before, "{} tokens at {b}, {before} above", out.total_tokens);
      assert_eq!(out.over_budget, out.total_tokens > b);
      before = out.total_tokens;
    }
    let out = trim_by_priority(&conv, None, &options(1, 1)).outcome;
    let Action::Replace(r) = out.plan.action(2) else { panic!("the results not cut") };
    let texts: Vec<_> = (0..60).filter_map(|k| r.result_text(k)).collect();
    assert_eq!(texts.len(), 60);
    assert!(texts.iter().all(|t| t.trim().starts_with("[... ")), "{texts:?}");
  }

  #[test]
  fn a_unit_dropped_for_a_larger_one_comes_back_when_it_fits() {
    let msgs = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::User, "task"),
      call("1", "execute_bash", r#"{"command":"pwd"}"#),
      result("1", "/w"),
      call("2", "execute_bash", r#"{"command":"cat log"}"#),
      result("2", &"line of a long log\n".repeat(300)),
      call("3", "execute_bash", r#"{"command":"true"}"#),
      result("3", "ok"),
      call("4", "execute_bash", r#"{"command":"true"}"#),
      result("4", "ok"),
      Message::text(Role::Assistant, "done"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    // Both old units are stale; the small one goes first, then the large one frees enough
    // room for the small one to come back.
    let target = conv.total_tokens() - conv.tokens(5) + 10;
    let t = trim_by_priority(&conv, None, &options(target, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![4, 5]);
    assert!(!t.outcome.over_budget);
  }

  /// Views of files (recent reads) go whole, oldest first, before a newer one is cut: the agent
  /// copies from the middle of the view it works on (issue 41: Codex sessions lost it to cuts of
  /// every view).
  #[test]
  fn older_views_go_whole_before_a_newer_one_is_shortened() {
    let view = |name: &str| -> String {
      (1..=120).map(|n| format!("{n:>6}\t// {name}: line {n} of the module\n")).collect()
    };
    let mut msgs = vec![user("Refactor the parser.")];
    for (k, file) in ["a.rs", "b.rs", "c.rs"].iter().enumerate() {
      let id = format!("r{k}");
      msgs.push(call(&id, "read_file", &format!(r#"{{"path":"/w/{file}"}}"#)));
      msgs.push(result(&id, &view(file)));
    }
    msgs.push(Message::text(Role::Assistant, "Reading done."));
    msgs.push(user("Go on."));
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    // Room for about one and a half of the three views.
    let view_tokens = conv.tokens(2);
    let budget = conv.total_tokens() - view_tokens - view_tokens / 2;
    let t = trim_by_priority(&conv, None, &options(budget, 1));
    let priorities: Vec<_> = [2, 4, 6].iter().map(|&i| t.classification[i].priority).collect();
    assert_eq!(priorities, vec![ContentPriority::RecentFileReads; 3]);
    let plan = &t.outcome.plan;
    // The oldest view goes whole with its call (before, it was cut to its head and tail
    // first), the next one is cut, the newest is whole.
    assert!(plan.is_dropped(1) && plan.is_dropped(2));
    assert!(matches!(plan.action(4), Action::Replace(_)));
    assert!(matches!(plan.action(6), Action::Keep));
    assert!(!t.outcome.over_budget && t.outcome.total_tokens <= budget);
    // trim_with_placeholders keeps the seed's contract: the older views become placeholders
    // (their calls stay), the newest stays whole.
    let t = trim_with_placeholders(&conv, None, &options(budget, 1));
    let plan = &t.outcome.plan;
    assert!(matches!(plan.action(2), Action::Replace(_)) && !plan.is_dropped(1));
    assert!(matches!(plan.action(6), Action::Keep));
  }

  #[test]
  fn shortens_lowest_priority_first_and_drops_whole_only_when_that_is_not_enough() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let all = trim_by_priority(&conv, None, &options(0, 1));
    let p: Vec<u32> = all.classification.iter().map(|c| c.priority.value()).collect();
    // steps: 2,3 → 1; 4,5 → 2; 6,7 → 3; 8,9,10 → 4 (current). Calls take the priority of
    // their results; the old read of /w/a.ts is that file's newest view, so a recent read.
    assert_eq!(p, vec![100, 80, 50, 50, 30, 30, 70, 70, 50, 50, 60]);
    // Units: 0 [0], 1 [1], 2 [2,3], 3 [4,5], 4 [6,7], 5 [8,9], 6 [10]. The system message and
    // the last unit are never trimmed; the seed's never-dropped tiers (the edit, the task) go
    // last.
    assert_eq!(trim_order(&conv, &all.classification), vec![3, 2, 5, 4, 1]);
    assert_eq!(all.outcome.plan.dropped(), (1..=9).collect::<Vec<_>>());
    assert!(all.outcome.over_budget);
    assert_eq!(all.outcome.total_tokens, conv.tokens(0) + conv.tokens(10) + 3);
    // Room for the task too: everything below it goes, and the budget is met.
    let with_task = conv.tokens(0) + conv.tokens(1) + conv.tokens(10) + 3;
    let t = trim_by_priority(&conv, None, &options(with_task, 1));
    assert_eq!(t.outcome.plan.dropped(), (2..=9).collect::<Vec<_>>());
    assert!(!t.outcome.over_budget);
    // A budget that a cut of the stale bash output alone meets: only it is cut, by what is
    // missing, and its call stays.
    let budget = conv.total_tokens() - conv.tokens(5) / 2;
    let t = trim_by_priority(&conv, None, &options(budget, 1));
    assert_eq!(t.outcome.plan.replaced(), vec![5]);
    assert!(t.outcome.plan.dropped().is_empty());
    let Action::Replace(r) = t.outcome.plan.action(5) else { panic!("not cut") };
    assert!(r.content.starts_with("FAIL test/b.test.ts") && r.content.contains(" tokens cut ...]"));
    assert!(!t.outcome.over_budget && t.outcome.total_tokens <= budget);
    // More than cuts free: units go whole, first in the order, and the rest is cut only as far
    // as needed after them.
    let cut_all =
      conv.tokens(0) + conv.tokens(1) + conv.tokens(6) + conv.tokens(7) + conv.tokens(10);
    let t = trim_by_priority(&conv, None, &options(cut_all + 3, 1));
    assert!(!t.outcome.over_budget);
    assert!(t.outcome.plan.is_dropped(4) && t.outcome.plan.is_dropped(5));
    assert!(t.outcome.plan.check_units(&conv).is_ok());
  }

  #[test]
  fn the_task_is_cut_before_a_modified_file_unit_is_dropped() {
    // Calls are never cut: an old command with a long script (its unit can only go whole) and
    // an edit whose call holds the whole new file. Dropping the old unit and cutting the task
    // makes room for the edit; the task is cut as far as needed before any never-truncated
    // unit (the edit) is dropped, not only when cutting it alone would be enough.
    let script = serde_json::json!({ "command": format!("python - <<'EOF'\n{}EOF", "print('step')\n".repeat(80)) });
    let new_file =
      serde_json::json!({ "path": "/w/a.ts", "content": "export const line = 1;\n".repeat(60) });
    let msgs = vec![
      Message::text(Role::System, "You are a coding agent."),
      user(&"Fix the bug described below, step by step. ".repeat(60)),
      call("1", "execute_bash", &script.to_string()),
      result("1", "ok"),
      call("2", "write_file", &new_file.to_string()),
      result("2", "written"),
      call("3", "execute_bash", r#"{"command":"npm test"}"#),
      result("3", "1 passed"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let budget = conv.total_tokens() - conv.tokens(2) - conv.tokens(3) - conv.tokens(1) / 2;
    let t = trim_by_priority(&conv, None, &options(budget, 1));
    assert_eq!(t.classification[1].priority, ContentPriority::CurrentTask);
    assert_eq!(t.classification[4].priority, ContentPriority::ModifiedFiles);
    assert!(t.classification[2].priority < ContentPriority::ModifiedFiles);
    assert_eq!(t.outcome.plan.dropped(), vec![2, 3]);
    assert!(matches!(t.outcome.plan.action(1), Action::Replace(r) if r.is_cut()));
    assert!(!t.outcome.over_budget);
  }

  #[test]
  fn units_flagged_to_keep_are_skipped_in_trimming_order() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    // Units: 0 [0], 1 [1], 2 [2,3], 3 [4,5], 4 [6,7], 5 [8,9], 6 [10]; order 2, 3, 5, 4, 1.
    let mut keep = vec![false; conv.units().len()];
    keep[2] = true;
    let t = trim_by_priority_keeping(&conv, None, &options(0, 1), &keep, Removal::Request);
    assert_eq!(t.outcome.plan.dropped(), vec![1, 4, 5, 6, 7, 8, 9]);
    // A short table keeps nothing extra.
    let t = trim_by_priority_keeping(&conv, None, &options(0, 1), &[true], Removal::Request);
    assert_eq!(t.outcome.plan.dropped(), (1..=9).collect::<Vec<_>>());
  }

  #[test]
  fn preserves_modified_files_over_old_reads() {
    let mut tracker = FileTracker::new();
    tracker.track_access("/app/edited.ts", 1, FileOpKind::Edit, None, 0.0);
    tracker.track_access("/app/read.ts", 1, FileOpKind::Read, None, 0.0);
    let tool = |path: &str, body: &str| {
      named_result("read_file", &format!("File: {path}\n{}", body.repeat(100)))
    };
    let msgs = vec![
      Message::text(Role::System, "System"),
      tool("/app/edited.ts", "edited.ts content..."),
      tool("/app/read.ts", "read.ts content..."),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_by_priority(&conv, Some(&tracker), &options(500, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![2]);
    assert_eq!(t.classification[1].priority, ContentPriority::ModifiedFiles);
    assert_eq!(t.classification[2].priority, ContentPriority::RecentFileReads);
  }

  #[test]
  fn placeholders_keep_the_call_and_count_towards_the_budget() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let (classification, tracker) = prepare(&conv, None, &ClassifyOptions::default());
    let placeholder_tokens =
      |i: usize| placeholder(&conv, i, &classification[i], &tracker, None).tokens;
    // The stale bash output goes first, with the generic placeholder, when the budget has no
    // room for twice as much of it.
    let after_first = conv.total_tokens() - conv.tokens(5) + placeholder_tokens(5);
    let t = trim_with_placeholders(&conv, None, &options(after_first + 1, 1));
    assert_eq!(t.outcome.plan.dropped(), Vec::<usize>::new());
    assert_eq!(t.outcome.plan.replaced(), vec![5]);
    assert_eq!(t.outcome.dropped, vec![5]);
    let Action::Replace(r) = t.outcome.plan.action(5) else { panic!("not replaced") };
    assert_eq!(&*r.content, format!("[Content truncated - {} tokens]", conv.tokens(5)));
    assert_eq!(
      r.meta,
      vec![
        ("_truncated", MetaValue::Bool(true)),
        ("_originalTokens", MetaValue::Number(conv.tokens(5) as f64))
      ]
    );
    assert_eq!(t.outcome.total_tokens, after_first);
    assert!(!t.outcome.over_budget);
    // A budget just under the whole: the room the placeholder frees beyond what is missing goes
    // back to the output, cut to head and tail instead.
    let t = trim_with_placeholders(&conv, None, &options(conv.total_tokens() - 1, 1));
    assert_eq!(t.outcome.plan.replaced(), vec![5]);
    let Action::Replace(r) = t.outcome.plan.action(5) else { panic!("not replaced") };
    assert!(
      r.content.starts_with("FAIL test/b.test.ts\n") && r.content.contains(" tokens cut ...")
    );
    assert!(r.meta.iter().any(|(k, _)| *k == "_cutTokens"), "{:?}", r.meta);
    assert!(t.outcome.total_tokens < conv.total_tokens());
    // Unless placeholders are kept as made (the seed's behaviour).
    let keep = PriorityOptions { keep_placeholders: true, ..options(conv.total_tokens() - 1, 1) };
    let t = trim_with_placeholders(&conv, None, &keep);
    let Action::Replace(r) = t.outcome.plan.action(5) else { panic!("not replaced") };
    assert!(r.content.starts_with("[Content truncated - "), "{}", r.content);
    // One token less than the placeholder's: the stale bash unit goes whole before the read, a
    // higher tier, is shortened.
    let t = trim_with_placeholders(&conv, None, &options(after_first - 1, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![4, 5]);
    assert!(t.outcome.plan.replaced().is_empty());
    // Less than that: the read of /w/a.ts gets the seed's file placeholder.
    let without_bash = conv.total_tokens() - conv.tokens(4) - conv.tokens(5);
    let tight = without_bash - conv.tokens(3) + placeholder_tokens(3);
    let t = trim_with_placeholders(&conv, None, &options(tight, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![4, 5]);
    assert_eq!(t.outcome.plan.replaced(), vec![3]);
    let Action::Replace(r) = t.outcome.plan.action(3) else { panic!("not replaced") };
    assert!(r.content.starts_with("[File: /w/a.ts\n  Lines: 81\n  Preview: const a = 1;\nconst a"));
    assert!(r.content.ends_with("...\n\n  Use read_file to retrieve current content]"));
    // With one token less missing, the room goes to the read, the higher tier, as a cut: the
    // most important first, so the bash output stays out.
    let t = trim_with_placeholders(&conv, None, &options(without_bash - 1, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![4, 5]);
    assert_eq!(t.outcome.plan.replaced(), vec![3]);
    let Action::Replace(r) = t.outcome.plan.action(3) else { panic!("not replaced") };
    assert!(r.content.contains(" tokens cut ..."), "{}", r.content);
    // Placeholders kept as made: the bash output is whole again.
    let keep = PriorityOptions { keep_placeholders: true, ..options(without_bash - 1, 1) };
    let t = trim_with_placeholders(&conv, None, &keep);
    assert!(t.outcome.plan.dropped().is_empty());
    assert_eq!(t.outcome.plan.replaced(), vec![3]);
  }

  #[test]
  fn placeholders_then_removal_when_placeholders_do_not_fit() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_with_placeholders(&conv, None, &options(0, 1));
    // Everything but the system message and the last unit is gone.
    assert_eq!(t.outcome.plan.dropped(), (1..=9).collect::<Vec<_>>());
    assert!(t.outcome.plan.replaced().is_empty());
    assert!(t.outcome.over_budget);
    assert!(t.outcome.plan.check_units(&conv).is_ok());
    // A budget between: every result placeholdered, then the oldest units removed.
    let floor = conv.tokens(0) + conv.tokens(1) + conv.tokens(10) + 3;
    let t = trim_with_placeholders(&conv, None, &options(floor + 60, 1));
    assert!(!t.outcome.over_budget);
    assert!(t.outcome.total_tokens <= floor + 60);
    assert_eq!(t.outcome.total_tokens, t.outcome.plan.total_tokens(&conv));
    assert!(t.outcome.plan.check_units(&conv).is_ok());
  }

  #[test]
  fn a_small_result_keeps_its_content_and_an_unknown_file_gets_the_generic_placeholder() {
    let msgs =
      vec![call("1", "execute_bash", "{}"), result("1", "ok"), Message::text(Role::User, "next")];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_with_placeholders(&conv, None, &options(conv.total_tokens() - 1, 0));
    // The placeholder would be bigger than "ok": the unit is removed instead.
    assert_eq!(t.outcome.plan.dropped(), vec![0, 1]);
    assert!(t.outcome.plan.replaced().is_empty());
    let c = Classification {
      priority: ContentPriority::StaleToolOutputs,
      tokens: conv.tokens(1),
      step: 1,
      metadata: crate::analysis::classify::Metadata {
        file_path: Some("/x".into()),
        ..Default::default()
      },
    };
    let r = placeholder(&conv, 1, &c, &FileTracker::new(), None);
    assert_eq!(&*r.content, format!("[Content truncated - file: /x - {} tokens]", conv.tokens(1)));
  }

  /// Parallel calls answered in one message (Anthropic `tool_result` blocks): each block gets
  /// its own placeholder, naming its own file (the tracker's file placeholder for the read, the
  /// generic one for the test run), where that at least halves it; a short result is kept.
  #[test]
  fn each_result_of_a_message_of_several_gets_its_own_placeholder() {
    let messages = serde_json::json!([
      {"role": "user", "content": "Check the repo"},
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.ts"}},
        {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "npm test"}},
        {"type": "tool_use", "id": "t3", "name": "bash", "input": {"command": "pwd"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "line of output\n".repeat(400)},
        {"type": "tool_result", "tool_use_id": "t2", "content": "FAIL ".repeat(2500), "is_error": true},
        {"type": "tool_result", "tool_use_id": "t3", "content": "/w"}]},
      {"role": "user", "content": "next"}
    ]);
    let (_, msgs) = crate::model::format::parse_messages(&messages, None).unwrap();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let c = classify_conversation(&conv, None, &ClassifyOptions::default());
    // Classed as its most important result: the recent test output (a recent turn) over the
    // read (a recent read), so the message names no file.
    assert_eq!(c[2].priority, ContentPriority::RecentTurns);
    assert_eq!(c[2].metadata.file_path, None);
    let tracker = FileTracker::from_conversation(&conv, 0.0);
    assert!(tracker.get("a.ts").is_some());
    let split = msgs[2].split_results();
    let tokens = |k: usize| message_content_tokens(&split[k], Encoding::O200kBase);
    let r = placeholder(&conv, 2, &c[2], &tracker, None);
    assert!(r.content.is_empty());
    let read = r.result_text(0).unwrap();
    assert!(read.starts_with("[File: a.ts\n  Lines: 401\n"), "{read}");
    assert_eq!(
      r.result_text(1),
      Some(format!("[Content truncated - {} tokens]", tokens(1)).as_str())
    );
    assert_eq!(r.result_text(2), None, "the short result is kept");
    let after = crate::plan::replaced_message(&msgs[2], &r);
    assert_eq!(r.tokens, crate::model::tokens::message_tokens(&after, Encoding::O200kBase));
    let template = PlaceholderTemplate::new("[{path}: {tokens} tokens]");
    let r = placeholder(&conv, 2, &c[2], &tracker, Some(&template));
    assert_eq!(r.result_text(0), Some(format!("[a.ts: {} tokens]", tokens(0)).as_str()));
    assert_eq!(r.result_text(1), Some(format!("[: {} tokens]", tokens(1)).as_str()));
    // trimWithPlaceholders replaces the largest first, only as far as the budget needs.
    let opts = options(conv.total_tokens() - 100, 0);
    let t = trim_with_placeholders(&conv, None, &opts);
    let Action::Replace(r) = t.outcome.plan.action(2) else { panic!("replaced") };
    assert!(tokens(1) > tokens(0));
    assert!(r.result_text(1).is_some() && r.result_text(0).is_none() && r.result_text(2).is_none());
    assert!(t.outcome.plan.dropped().is_empty() && !t.outcome.over_budget);
    // trimByPriority cuts each result on its own text, the largest first.
    let t = trim_by_priority(&conv, None, &opts);
    let Action::Replace(r) = t.outcome.plan.action(2) else { panic!("replaced") };
    let cut = r.result_text(1).unwrap();
    assert!(cut.starts_with("FAIL FAIL") && cut.contains(" tokens cut ..."), "{cut}");
    assert!(r.result_text(0).is_none() && r.result_text(2).is_none());
    assert!(t.outcome.plan.dropped().is_empty() && !t.outcome.over_budget);
  }

  #[test]
  fn a_placeholder_is_made_only_where_it_at_least_halves_its_result() {
    // A generic placeholder is about 15 tokens: a 20-token output is not worth replacing, a
    // 60-token one is.
    let small = "word ".repeat(18);
    let large = "word ".repeat(60);
    let msgs = vec![
      Message::text(Role::User, "task"),
      call("1", "execute_bash", "{}"),
      result("1", &small),
      call("2", "execute_bash", "{}"),
      result("2", &large),
      Message::text(Role::User, "next"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let placeholder_tokens = |i: usize| {
      let c = classify_conversation(&conv, None, &ClassifyOptions::default());
      placeholder(&conv, i, &c[i], &FileTracker::new(), None).tokens
    };
    assert!(placeholder_tokens(2) * 2 > conv.tokens(2));
    assert!(placeholder_tokens(4) * 2 <= conv.tokens(4));
    // Just under the whole: the small output's unit goes whole (the oldest, lowest) and the
    // large output stays whole.
    let t = trim_with_placeholders(&conv, None, &options(conv.total_tokens() - 1, 0));
    assert!(t.outcome.plan.replaced().is_empty());
    assert_eq!(t.outcome.plan.dropped(), vec![1, 2]);
    // Tighter: the small one's unit goes whole, and the large output becomes its placeholder.
    let units_1_2 = conv.tokens(1) + conv.tokens(2);
    let exact = conv.total_tokens() - units_1_2 - conv.tokens(4) + placeholder_tokens(4);
    let t = trim_with_placeholders(&conv, None, &options(exact, 0));
    assert_eq!(t.outcome.plan.replaced(), vec![4]);
    assert_eq!(t.outcome.plan.dropped(), vec![1, 2]);
    let Action::Replace(r) = t.outcome.plan.action(4) else { panic!("not replaced") };
    assert!(r.content.starts_with("[Content truncated - "), "{}", r.content);
    // Between the two: the room the placeholder frees goes to the large output first (the newer,
    // up the order), cut to head and tail, before the older unit could come back; with
    // placeholders kept as made, the older unit comes back whole.
    let t = trim_with_placeholders(&conv, None, &options(conv.total_tokens() - 40, 0));
    assert_eq!(t.outcome.plan.replaced(), vec![4]);
    assert_eq!(t.outcome.plan.dropped(), vec![1, 2]);
    let Action::Replace(r) = t.outcome.plan.action(4) else { panic!("not replaced") };
    assert!(r.content.contains(" tokens cut ..."), "{}", r.content);
    let keep = PriorityOptions { keep_placeholders: true, ..options(conv.total_tokens() - 40, 0) };
    let t = trim_with_placeholders(&conv, None, &keep);
    assert_eq!(t.outcome.plan.replaced(), vec![4]);
    assert!(t.outcome.plan.dropped().is_empty());
  }

  #[test]
  fn parallel_results_become_placeholders_largest_first_only_as_far_as_needed() {
    // One step reads three files at once; the budget needs the room of the largest alone.
    let mut reads = Message::text(Role::Assistant, "");
    for (id, path) in [("a", "/a.rs"), ("b", "/b.rs"), ("c", "/c.rs")] {
      reads.tool_calls.push(crate::model::message::ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: format!(r#"{{"path":"{path}"}}"#),
      });
    }
    let msgs = vec![
      Message::text(Role::User, "task"),
      reads,
      result("a", &"let a = 1;\n".repeat(60)),
      result("b", &"let b = 2;\n".repeat(200)),
      result("c", &"let c = 3;\n".repeat(60)),
      Message::text(Role::User, "next"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_with_placeholders(&conv, None, &options(conv.total_tokens() - 100, 0));
    assert_eq!(t.outcome.plan.replaced(), vec![3], "only the largest result");
    assert!(t.outcome.plan.dropped().is_empty());
    assert!(t.outcome.total_tokens <= conv.total_tokens() - 100);
  }

  #[test]
  fn a_template_replaces_both_seed_placeholders() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let template =
      PlaceholderTemplate::new("[content truncated - {age} steps ago, {tokens} tokens{path}]");
    let (classification, tracker) = prepare(&conv, None, &ClassifyOptions::default());
    let placeholder_tokens =
      |i: usize| placeholder(&conv, i, &classification[i], &tracker, Some(&template)).tokens;
    let replaced = |budget: usize| {
      let o = PriorityOptions { placeholder: Some(template.clone()), ..options(budget, 0) };
      let t = trim_with_placeholders(&conv, None, &o);
      (0..msgs.len())
        .filter_map(|i| match t.outcome.plan.action(i) {
          Action::Replace(r) => Some((i, r.content.to_string())),
          _ => None,
        })
        .collect::<Vec<_>>()
    };
    // The bash output alone (it goes first), with no room for more: the template, without a path.
    let budget = conv.total_tokens() - conv.tokens(5) + placeholder_tokens(5);
    assert_eq!(
      replaced(budget),
      vec![(5, format!("[content truncated - 2 steps ago, {} tokens]", conv.tokens(5)))]
    );
    // Tighter: the bash unit goes whole and the read of /w/a.ts (a file the tracker knows, the
    // seed's file placeholder) uses the template too, with its path.
    let budget = conv.total_tokens() - conv.tokens(4) - conv.tokens(5) - conv.tokens(3)
      + placeholder_tokens(3);
    assert_eq!(
      replaced(budget),
      vec![(3, format!("[content truncated - 3 steps ago, {} tokens/w/a.ts]", conv.tokens(3)))]
    );
  }

  #[test]
  fn file_placeholder_of_empty_content() {
    assert_eq!(
      file_placeholder("/a", ""),
      "[File: /a\n  Lines: unknown\n  Preview: N/A...\n\n  Use read_file to retrieve current content]"
    );
  }

  /// A message that is both an instruction and a cuttable result (a system message answering a
  /// call: an orphan the validator reports, yet input the strategy must survive) is listed once
  /// by the last rung: listed twice, it was cut twice and counted as cut from its whole size
  /// twice (an overflow at a budget no cut reaches). Where a cut reaches the budget it is cut
  /// once, and the request counts what its copy holds; where none does it is cut once to its
  /// marker alone, the smallest the strategy reaches (issue 42: it used to stay whole).
  #[test]
  fn a_message_both_instruction_and_result_is_listed_once() {
    let mut system = result("x", &"line of output\n".repeat(400));
    system.role = Role::System;
    let messages = vec![system];
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    let listed = anchor_candidates(&conv, &anchored_units(&conv), &Plan::keep_all(1));
    assert_eq!(listed, vec![0]);
    let least = trim_by_priority(&conv, None, &options(0, 2)).outcome;
    let Action::Replace(r) = least.plan.action(0) else { panic!("the message is cut") };
    assert!(marker_only(r) && least.over_budget, "{}", r.content);
    let copy = crate::plan::replaced_message(&messages[0], r);
    assert_eq!(r.tokens, crate::model::tokens::message_tokens(&copy, Encoding::O200kBase));
    let trim = trim_by_priority(&conv, None, &options(conv.tokens(0) / 2, 2));
    let Action::Replace(r) = trim.outcome.plan.action(0) else { panic!("the message is cut") };
    let copy = crate::plan::replaced_message(&messages[0], r);
    assert_eq!(r.tokens, crate::model::tokens::message_tokens(&copy, Encoding::O200kBase));
    assert!(trim.outcome.plan.total_tokens(&conv) <= conv.tokens(0) / 2);
  }
}
