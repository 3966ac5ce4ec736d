//! Any trimming strategy, plus a summary of what it dropped ([`crate::strategy::summary`]).
//!
//! [`trim_with_summary`] runs a strategy, summarises the messages whose content the outcome no
//! longer returns (dropped, or replaced by a placeholder), and, when asked, inserts the summary
//! into the plan as one message:
//!
//! - **Role and position**: a `user` message, flagged `_summary: true` and starting with
//!   [`SUMMARY_MARKER`], before the first returned message that is not a `system`/`developer`
//!   message (at the end when there is none). Every supported format accepts a user message
//!   there: it is the first message after the instructions, which Anthropic requires to be a
//!   user message; it never comes between a tool call and its results (calls come after the
//!   first non-instruction message, and results after their calls); and a user message
//!   following it is accepted too (Anthropic merges consecutive user turns; OpenAI and the AI
//!   SDK have no alternation rule).
//! - **Budget**: the summary's tokens count. When the trimmed messages plus the summary exceed
//!   the target, the strategy runs again with the target lowered by the summary's size, and the
//!   summary is made again from what that run drops (a few rounds at most, then once more with
//!   room for a summary of `max_tokens`). When the strategy cannot drop more (the never-dropped
//!   messages fill the budget), the summary is made shorter to fit the room they leave, down
//!   to [`MIN_SUMMARY_TOKENS`]; if even that does not fit, it is not inserted (the budget comes
//!   first; the summary is still returned) and the outcome is the strategy's at the target.
//! - **No pile-up**: with insertion, any earlier summary the strategy kept is dropped too and
//!   folded into the new one, so a conversation holds at most one summary. A dropped summary is
//!   folded by [`crate::strategy::summary::Digest::extract`].

use crate::model::conversation::Conversation;
use crate::model::message::{Message, Role, SUMMARY_MARKER};
use crate::model::tokens::{count_tokens, message_tokens, prefix_within, Encoding};
use crate::plan::{Inserted, MetaValue, Plan};
use crate::strategy::priority::PriorityTrim;
use crate::strategy::summary::{Digest, MIN_SUMMARY_TOKENS};
use crate::strategy::Outcome;

/// How many times a strategy is run again to make room for a summary of its own size before
/// room for a summary of the full budget is made.
pub const MAX_ROUNDS: usize = 4;

/// What to do with a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryOptions {
  /// The bound of the summary's text, in tokens ([`crate::strategy::summary::DEFAULT_MAX_SUMMARY_TOKENS`]
  /// by default in the binding).
  pub max_tokens: usize,
  /// Whether to insert it into the returned messages (its tokens then count towards the
  /// budget).
  pub insert: bool,
  /// Whether room is made for a summary of `max_tokens` whatever the draft's size, because
  /// another text of up to `max_tokens` (a summarizer callback's) may replace it.
  pub reserve_max: bool,
}

/// A summary made by [`trim_with_summary`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
  /// The text, starting with [`SUMMARY_MARKER`].
  pub text: String,
  /// The tokens of the text.
  pub tokens: usize,
  /// The messages it summarises (dropped or replaced, earlier summaries included), ascending.
  pub sources: Vec<usize>,
  /// The index of the input message it is inserted before, when inserted.
  pub inserted_before: Option<usize>,
  /// The bound its text was made within: the options' `max_tokens`, or less when only a
  /// shorter summary fits the room the never-dropped messages leave.
  pub max_tokens: usize,
}

/// A strategy's result that carries an [`Outcome`].
pub trait Trimmed {
  /// The outcome.
  fn outcome(&self) -> &Outcome;
  /// The outcome, to change.
  fn outcome_mut(&mut self) -> &mut Outcome;
}

impl Trimmed for Outcome {
  fn outcome(&self) -> &Outcome {
    self
  }
  fn outcome_mut(&mut self) -> &mut Outcome {
    self
  }
}

impl Trimmed for PriorityTrim {
  fn outcome(&self) -> &Outcome {
    &self.outcome
  }
  fn outcome_mut(&mut self) -> &mut Outcome {
    &mut self.outcome
  }
}

/// Runs `trim(target)` and summarises what it dropped (see the [module docs](self)). `trim`
/// may be called again with lower targets to make room for an inserted summary. Without
/// anything dropped there is no summary and the strategy's result is returned as it is.
pub fn trim_with_summary<T: Trimmed>(
  conv: &Conversation<'_>,
  target: usize,
  options: &SummaryOptions,
  mut trim: impl FnMut(usize) -> T,
) -> (T, Option<Summary>) {
  let encoding = conv.encoding();
  let max_cost = summary_message_tokens(options.max_tokens, encoding);
  let mut run_target = target;
  let mut result = trim(target);
  let mut rounds = 0;
  loop {
    if result.outcome().dropped.is_empty() {
      return (result, None);
    }
    if !options.insert {
      return with_summary_of(conv, result, options.max_tokens);
    }
    let mut plan = result.outcome().plan.clone();
    fold_kept_summaries(conv, &mut plan);
    let sources = removed(conv, &plan);
    let digest = Digest::extract(conv, &sources);
    let (_, mut text) = digest.bounded(options.max_tokens, encoding);
    let base = plan.total_tokens(conv);
    let base = if base == 0 { crate::model::tokens::reply_priming(encoding) } else { base };
    let cost = if options.reserve_max { max_cost } else { summary_message(&text, encoding).tokens };
    let fits = base + cost <= target;
    // Once the strategy cannot meet its own target, dropping more is impossible.
    let stuck = result.outcome().over_budget;
    let next = target.saturating_sub(cost);
    if fits || stuck || next >= run_target || rounds == MAX_ROUNDS + 1 {
      // Nothing more can go: a shorter summary may still fit the room that is left.
      let mut max_tokens = options.max_tokens;
      if !fits {
        let room = target.saturating_sub(base + summary_message_tokens(0, encoding));
        max_tokens = room.min(max_tokens);
        text = digest.bounded(max_tokens, encoding).1;
        let floor = MIN_SUMMARY_TOKENS.min(options.max_tokens);
        if max_tokens < floor || base + summary_message(&text, encoding).tokens > target {
          // Not even the shortest summary fits beside what must stay: it would put a request
          // that can meet its budget over it. The strategy's own result at the target (this
          // one when no round lowered it), with its summary returned but not inserted.
          let at_target = if run_target == target { result } else { trim(target) };
          return with_summary_of(conv, at_target, options.max_tokens);
        }
      }
      let at = position(conv, &plan);
      plan.insert_before(at, summary_message(&text, encoding));
      *result.outcome_mut() = Outcome::new(conv, plan, target);
      let tokens = count_tokens(&text, encoding);
      let summary = Summary { text, tokens, sources, inserted_before: Some(at), max_tokens };
      return (result, Some(summary));
    }
    rounds += 1;
    run_target = if rounds > MAX_ROUNDS { target.saturating_sub(max_cost) } else { next };
    result = trim(run_target);
  }
}

/// `result` with the summary of what it removed, not inserted (bounded to `max_tokens`).
fn with_summary_of<T: Trimmed>(
  conv: &Conversation<'_>,
  result: T,
  max_tokens: usize,
) -> (T, Option<Summary>) {
  let sources = removed(conv, &result.outcome().plan);
  if sources.is_empty() {
    return (result, None);
  }
  let (_, text) = Digest::extract(conv, &sources).bounded(max_tokens, conv.encoding());
  let tokens = count_tokens(&text, conv.encoding());
  (result, Some(Summary { text, tokens, sources, inserted_before: None, max_tokens }))
}

/// Replaces the text of the summary `outcome` inserts (e.g. with a summarizer callback's text):
/// the text is given the marker when it lacks it and cut to the summary's `max_tokens`, and the
/// outcome is summed up again against `target`. Returns the text as inserted.
pub fn replace_summary_text(
  conv: &Conversation<'_>,
  outcome: &mut Outcome,
  summary: &mut Summary,
  text: &str,
  target: usize,
) -> String {
  let encoding = conv.encoding();
  let text = bounded_text(text, summary.max_tokens, encoding);
  if let Some(at) = summary.inserted_before {
    let mut plan = outcome.plan.clone();
    for (p, m) in plan.take_insertions() {
      let ours = p == at && m.meta.iter().any(|(k, _)| *k == SUMMARY_FLAG);
      plan.insert_before(p, if ours { summary_message(&text, encoding) } else { m });
    }
    *outcome = Outcome::new(conv, plan, target);
  }
  summary.tokens = count_tokens(&text, encoding);
  summary.text = text.clone();
  text
}

/// The metadata flag of an inserted summary.
pub const SUMMARY_FLAG: &str = "_summary";

/// `text` starting with [`SUMMARY_MARKER`] (added on its own line when missing), cut to
/// `max_tokens` tokens.
pub fn bounded_text(text: &str, max_tokens: usize, encoding: Encoding) -> String {
  let marked = if text.trim_start().starts_with(SUMMARY_MARKER) {
    text.trim().to_string()
  } else {
    format!("{SUMMARY_MARKER}\n{}", text.trim())
  };
  if count_tokens(&marked, encoding) <= max_tokens {
    return marked;
  }
  let mut cut = max_tokens;
  loop {
    let end = prefix_within(&marked, cut, encoding);
    let candidate = format!("{}…", marked[..end].trim_end());
    if count_tokens(&candidate, encoding) <= max_tokens || cut == 0 {
      return candidate;
    }
    cut -= 1;
  }
}

/// The summary as an inserted message: a `user` message flagged `_summary: true`.
fn summary_message(text: &str, encoding: Encoding) -> Inserted {
  Inserted::new(Role::User, text.to_string(), vec![(SUMMARY_FLAG, MetaValue::Bool(true))], encoding)
}

/// The tokens of a summary message whose text has `max_tokens` tokens.
fn summary_message_tokens(max_tokens: usize, encoding: Encoding) -> usize {
  message_tokens(&Message::text(Role::User, ""), encoding) + max_tokens
}

/// Drops every summary `plan` still returns (a plain message: no tool calls, not a result).
fn fold_kept_summaries(conv: &Conversation<'_>, plan: &mut Plan) {
  for (i, m) in conv.messages().iter().enumerate() {
    if m.is_summary && !m.has_tool_calls() && !m.is_tool_result() && !plan.is_dropped(i) {
      plan.drop_unit(conv, conv.unit_of(i));
    }
  }
}

/// The messages whose content `plan` does not return: dropped or replaced.
fn removed(conv: &Conversation<'_>, plan: &Plan) -> Vec<usize> {
  (0..conv.len()).filter(|&i| !matches!(plan.action(i), crate::plan::Action::Keep)).collect()
}

/// Where the summary goes: before the first returned message that is not an instruction.
fn position(conv: &Conversation<'_>, plan: &Plan) -> usize {
  (0..conv.len())
    .find(|&i| !plan.is_dropped(i) && !conv.messages()[i].role.is_instruction())
    .unwrap_or(conv.len())
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::format::Format;
  use crate::output::validate::validate_plan;
  use crate::strategy::age::trim_by_age;
  use crate::strategy::priority::{trim_by_priority, PriorityOptions};
  use crate::strategy::summary::Digest;
  use crate::testing::{call, result, user};

  fn session() -> Vec<Message> {
    let mut msgs = vec![Message::text(Role::System, "You are a coding agent.")];
    msgs.push(user("First, list the files."));
    for i in 0..8 {
      msgs.push(call(&format!("c{i}"), "execute_bash", &format!(r#"{{"command":"ls dir{i}"}}"#)));
      msgs.push(result(
        &format!("c{i}"),
        &format!("{}\n[The command completed with exit code {}.]", "file.txt\n".repeat(40), i % 2),
      ));
    }
    msgs.push(Message::text(Role::Assistant, "The issue is in dir3. Done listing."));
    msgs.push(user("Now fix dir3."));
    msgs
  }

  /// The first returned message that is not an instruction.
  fn first_returned(msgs: &[Message], plan: &Plan) -> usize {
    (0..msgs.len()).find(|&i| !plan.is_dropped(i) && !msgs[i].role.is_instruction()).unwrap()
  }

  fn options(insert: bool) -> SummaryOptions {
    SummaryOptions { max_tokens: 200, insert, reserve_max: false }
  }

  fn by_priority<'c>(conv: &'c Conversation<'c>) -> impl FnMut(usize) -> PriorityTrim + 'c {
    move |target| {
      let options = PriorityOptions { target_tokens: target, ..PriorityOptions::default() };
      trim_by_priority(conv, None, &options)
    }
  }

  #[test]
  fn the_summary_is_inserted_after_the_instructions_and_counts() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let target = conv.total_tokens() / 2;
    let (t, summary) = trim_with_summary(&conv, target, &options(true), by_priority(&conv));
    let summary = summary.expect("something was dropped");
    assert_eq!(summary.inserted_before, Some(first_returned(&msgs, &t.outcome.plan)));
    let (at, inserted) = &t.outcome.plan.insertions()[0];
    assert_eq!(*at, summary.inserted_before.unwrap());
    assert_eq!(inserted.role, Role::User);
    assert!(inserted.content.starts_with(SUMMARY_MARKER));
    assert_eq!(inserted.meta, vec![(SUMMARY_FLAG, MetaValue::Bool(true))]);
    assert_eq!(summary.text, inserted.content);
    assert!(summary.tokens <= 200);
    assert!(!t.outcome.over_budget);
    assert!(t.outcome.total_tokens <= target);
    assert_eq!(t.outcome.total_tokens, t.outcome.plan.total_tokens(&conv));
    for format in [Format::OpenAi, Format::Anthropic, Format::AiSdk] {
      assert_eq!(validate_plan(&msgs, &t.outcome.plan, format), vec![], "{format:?}");
    }
    // The summary describes exactly what is gone.
    assert_eq!(summary.sources, t.outcome.dropped);
    let direct = Digest::extract(&conv, &summary.sources).bounded(200, Encoding::O200kBase).1;
    assert_eq!(summary.text, direct);
    // Room was made for the summary: the strategy alone drops no more.
    let plain = by_priority(&conv)(target);
    assert!(plain.outcome.dropped.len() <= t.outcome.dropped.len());
  }

  #[test]
  fn without_insertion_the_budget_is_the_strategys() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let target = conv.total_tokens() / 2;
    let (t, summary) = trim_with_summary(&conv, target, &options(false), by_priority(&conv));
    assert_eq!(t, by_priority(&conv)(target));
    let summary = summary.expect("a summary");
    assert_eq!(summary.inserted_before, None);
    assert!(t.outcome.plan.insertions().is_empty());
    // Nothing dropped: no summary.
    let (all, none) =
      trim_with_summary(&conv, conv.total_tokens(), &options(true), by_priority(&conv));
    assert_eq!(none, None);
    assert!(all.outcome.plan.is_identity());
  }

  #[test]
  fn a_kept_earlier_summary_is_folded_so_there_is_one() {
    let mut msgs = session();
    let earlier = {
      let mut d = Digest::new();
      d.push(crate::strategy::summary::Section::FilesEdited, "/w/old.rs");
      d.render()
    };
    let mut s = user(&earlier);
    s.is_summary = true;
    msgs.insert(1, s);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    // Age-based trimming that drops only one old unit keeps the summary if it could; the fold
    // drops it and carries its content.
    let target = conv.total_tokens() - conv.tokens(3) - conv.tokens(4);
    let (out, summary) =
      trim_with_summary(&conv, target, &options(true), |t| trim_by_age(&conv, t));
    let summary = summary.expect("a summary");
    assert!(out.plan.is_dropped(1), "the earlier summary is folded");
    assert!(summary.text.contains("Files edited:\n- /w/old.rs"));
    assert_eq!(out.plan.insertions().len(), 1);
    assert_eq!(summary.inserted_before, Some(first_returned(&msgs, &out.plan)));
    assert!(out.total_tokens <= target);
    // In Anthropic format the strategy keeps an opening user message (Plan::conform), which
    // may be the earlier summary: it is folded all the same, and the new one opens the turn.
    let conv = Conversation::new(&msgs, Encoding::O200kBase).with_format(Format::Anthropic);
    let target = conv.total_tokens() / 3;
    let (out, summary) =
      trim_with_summary(&conv, target, &options(true), |t| trim_by_age(&conv, t));
    assert!(summary.expect("a summary").text.contains("- /w/old.rs"));
    assert!(out.plan.is_dropped(1));
    assert_eq!(out.plan.insertions().len(), 1);
    assert_eq!(validate_plan(&msgs, &out.plan, Format::Anthropic), vec![]);
  }

  #[test]
  fn when_everything_else_is_dropped_the_summary_goes_at_the_end_of_the_instructions() {
    let msgs = vec![Message::text(Role::System, "s"), user(&"an old request ".repeat(50))];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    // Age-based trimming never drops the last message; mark it dropped by hand instead.
    let drop_request = |t| {
      let mut plan = Plan::keep_all(2);
      plan.drop_message(1);
      Outcome::new(&conv, plan, t)
    };
    let (out, summary) = trim_with_summary(&conv, 400, &options(true), drop_request);
    assert_eq!(summary.expect("a summary").inserted_before, Some(2));
    assert!(!out.over_budget);
    assert_eq!(validate_plan(&msgs, &out.plan, Format::Anthropic), vec![]);
    // Where not even the shortest summary fits, it is returned, not inserted.
    let (out, summary) = trim_with_summary(&conv, 20, &options(true), drop_request);
    let summary = summary.expect("a summary");
    assert_eq!((summary.inserted_before, summary.sources), (None, vec![1]));
    assert!(out.plan.insertions().is_empty());
  }

  /// A summary that does not fit beside what must stay is not inserted: the request meets the
  /// budget it could meet without it (it used to be inserted at its 64-token floor, over the
  /// budget), and the summary is still returned.
  #[test]
  fn a_summary_that_does_not_fit_is_returned_not_inserted() {
    let mut msgs = vec![Message::text(Role::System, "s")];
    for i in 0..10 {
      msgs.push(user(&format!("u{i} ").repeat(100)));
      msgs.push(Message::text(Role::Assistant, format!("a{i} ").repeat(100)));
    }
    msgs.push(user("last"));
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let opts = |reserve_max| SummaryOptions { max_tokens: 500, insert: true, reserve_max };
    for (target, reserve_max) in [(30, false), (70, true)] {
      let (plain, _) = trim_with_summary(&conv, target, &options(false), by_priority(&conv));
      let (t, summary) = trim_with_summary(&conv, target, &opts(reserve_max), by_priority(&conv));
      assert!(!plain.outcome.over_budget && !t.outcome.over_budget, "{target}");
      assert!(t.outcome.total_tokens <= target, "{target}");
      assert_eq!(t.outcome.plan, plain.outcome.plan, "{target}");
      let summary = summary.expect("a summary");
      assert_eq!(summary.inserted_before, None);
      assert!(!summary.sources.is_empty());
    }
  }

  #[test]
  fn a_replaced_text_keeps_the_figures_right() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let target = conv.total_tokens() / 2;
    let opts = SummaryOptions { max_tokens: 100, insert: true, reserve_max: true };
    let (mut t, summary) = trim_with_summary(&conv, target, &opts, by_priority(&conv));
    let mut summary = summary.expect("a summary");
    let room = t.outcome.total_tokens - summary_message(&summary.text, Encoding::O200kBase).tokens;
    assert!(room + summary_message_tokens(100, Encoding::O200kBase) <= target, "room for 100");
    let long = "word ".repeat(500);
    let text = replace_summary_text(&conv, &mut t.outcome, &mut summary, &long, target);
    assert!(text.starts_with(&format!("{SUMMARY_MARKER}\nword word")));
    assert!(text.ends_with('…'));
    assert!(count_tokens(&text, Encoding::O200kBase) <= 100);
    assert_eq!(t.outcome.plan.insertions()[0].1.content, text);
    assert_eq!(t.outcome.total_tokens, t.outcome.plan.total_tokens(&conv));
    assert!(t.outcome.total_tokens <= target);
    assert_eq!(
      bounded_text("  [context-trim summary] x ", 100, Encoding::O200kBase),
      "[context-trim summary] x"
    );
  }
}
