//! The cost simulator: replays a session turn by turn under several trimming policies and
//! prices every request with a provider's prompt-cache rates.
//!
//! A *turn* is one model call: the request is every message before an assistant message, the
//! assistant message is the reply. Each policy decides what that request sends. Per turn:
//!
//! - `input_tokens`: the tokens of the request sent (reply priming included);
//! - `cached_tokens`: the tokens of the longest run of leading messages that the previous
//!   request of the same policy sent identically, which the provider reads from its cache. Two
//!   returned messages are identical when they serialise identically: the same message kept,
//!   or the same message replaced by the same content and metadata;
//! - `written_tokens`: `input_tokens − cached_tokens`, the rest, processed in full (and, at
//!   Anthropic, written to the cache);
//! - `cost`: `cached × cache_read + written × cache_write`, prices per million tokens
//!   ([`Pricing`]).
//!
//! The policies ([`PolicyKind`]): no trimming (turns over the window are marked), trimming
//! every turn to the window with the strategy (the seeds' way), the high/low-water
//! [`CachePolicy`], and deduplication only ([`deduplicate`]).
//!
//! The model of the cache is the longest common prefix with the previous request, in whole
//! messages: what OpenAI's automatic prefix caching gives, and what Anthropic gives with a
//! cache breakpoint on the last message when the change is at the end. It leaves out cache
//! expiry (Anthropic: 5 minutes by default), minimum cacheable lengths (1,024 tokens) and
//! OpenAI's 128-token granularity, and it counts a partial prefix after a change as cached,
//! which Anthropic only reads at a breakpoint: every figure here is the best case for a
//! policy that rewrites history.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::analysis::growing::GrowingAnalysis;
use crate::error::{Error, Result};
use crate::model::conversation::{Conversation, Layout};
use crate::model::format::Format;
use crate::model::message::{quote, Message, Role};
use crate::model::tokens::{message_tokens, reply_priming, Encoding};
use crate::plan::{Action, Plan};
use crate::strategy::cache_policy::{fit_window, CachePolicy, CachePolicyOptions, Decision};
use crate::strategy::dedup::{
  changed_since, deduplicate, deduplicate_since, revision as dedup_revision, DedupOptions, Revision,
};

/// Prompt-cache prices, in US dollars per million input tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
  /// An input token without caching (the reference for the cost without cache).
  pub input: f64,
  /// An input token read from the cache.
  pub cache_read: f64,
  /// An input token not read from the cache: written to it (Anthropic charges 1.25× the input
  /// price for that), or just processed (OpenAI: the input price).
  pub cache_write: f64,
}

impl Pricing {
  /// Anthropic Claude Sonnet 4 (docs.anthropic.com, prompt caching, 5-minute cache): $3 input,
  /// cache reads 0.1× ($0.30), cache writes 1.25× ($3.75).
  pub const ANTHROPIC: Pricing = Pricing { input: 3.0, cache_read: 0.30, cache_write: 3.75 };
  /// OpenAI gpt-4o (platform.openai.com pricing): $2.50 input, cached input 0.5× ($1.25), no
  /// charge for writing the cache. Later models discount cached input more (gpt-4.1: 0.25×,
  /// gpt-5: 0.1×): give your own table for them.
  pub const OPENAI: Pricing = Pricing { input: 2.5, cache_read: 1.25, cache_write: 2.5 };

  /// A shipped table by name: `anthropic` or `openai`.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `pricing` for any other name.
  pub fn preset(name: &str) -> Result<Pricing> {
    match name {
      "anthropic" => Ok(Pricing::ANTHROPIC),
      "openai" => Ok(Pricing::OPENAI),
      other => Err(Error::option(
        "pricing",
        format!("must be anthropic, openai or a price table, got {}", quote(other)),
      )),
    }
  }

  /// Checks that every price is a finite, non-negative number.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming the price (`pricing.cacheRead`…).
  pub fn validate(&self) -> Result<()> {
    for (name, v) in
      [("input", self.input), ("cacheRead", self.cache_read), ("cacheWrite", self.cache_write)]
    {
      if !(v.is_finite() && v >= 0.0) {
        return Err(Error::option(
          format!("pricing.{name}"),
          format!(
            "must be a non-negative number of dollars per million tokens, got {}",
            crate::error::js_number(v)
          ),
        ));
      }
    }
    Ok(())
  }

  /// The cost in dollars of `cached` tokens read from the cache and `written` tokens not.
  pub fn cost(&self, cached: usize, written: usize) -> f64 {
    (cached as f64 * self.cache_read + written as f64 * self.cache_write) / 1e6
  }
}

/// A policy the simulator compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
  /// Everything is sent; turns over the window are marked (they would be refused).
  None,
  /// The strategy trims to the window on every turn (the seeds' way).
  EveryTurn,
  /// The high/low-water [`CachePolicy`] around the strategy.
  HighLow,
  /// Deduplication only ([`deduplicate`], seed 003's deduplicators with its default threshold:
  /// superseded tool results become placeholders once the request reaches 75% of the window).
  /// Nothing else is trimmed: turns over the window are marked.
  Dedup,
}

impl PolicyKind {
  /// Every policy, in the order they are reported.
  pub const ALL: [PolicyKind; 4] =
    [PolicyKind::None, PolicyKind::EveryTurn, PolicyKind::HighLow, PolicyKind::Dedup];

  /// The policy's name: `none`, `every-turn`, `high-low`, `dedup`.
  pub fn as_str(self) -> &'static str {
    match self {
      PolicyKind::None => "none",
      PolicyKind::EveryTurn => "every-turn",
      PolicyKind::HighLow => "high-low",
      PolicyKind::Dedup => "dedup",
    }
  }

  /// Parses a policy name.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `field` for an unknown name.
  pub fn parse(name: &str, field: &str) -> Result<PolicyKind> {
    PolicyKind::ALL.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
      Error::option(
        field,
        format!("must be one of none, every-turn, high-low, dedup, got {}", quote(name)),
      )
    })
  }
}

/// The options of [`simulate`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimulateOptions {
  /// The window, the strategy and the high/low-water marks ([`PolicyKind::HighLow`]); the
  /// window and the strategy are also those of [`PolicyKind::EveryTurn`].
  pub policy: CachePolicyOptions,
  /// The budget [`PolicyKind::EveryTurn`] trims to (at most the window).
  pub every_turn_budget: usize,
  /// The prices.
  pub pricing: Pricing,
  /// The policies to run, in this order.
  pub policies: Vec<PolicyKind>,
  /// The encoding tokens are counted in.
  pub encoding: Encoding,
  /// The format the messages were read in, whose provider rules trimmed requests follow
  /// ([`Plan::conform`]).
  pub format: Format,
}

/// One simulated model call.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
  /// The index of the reply (the assistant message) in the session.
  pub reply: usize,
  /// The messages sent.
  pub messages: usize,
  /// The tokens sent.
  pub input_tokens: usize,
  /// The tokens read from the cache.
  pub cached_tokens: usize,
  /// The tokens not read from the cache.
  pub written_tokens: usize,
  /// This call's cost in dollars.
  pub cost: f64,
  /// The cost of every call so far, this one included.
  pub cumulative_cost: f64,
  /// Whether the request is over the window.
  pub over_window: bool,
  /// What the high/low-water policy did ([`PolicyKind::HighLow`] only).
  pub decision: Option<Decision>,
}

/// The sums over every turn of a policy.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Totals {
  /// Tokens sent.
  pub input_tokens: usize,
  /// Tokens read from the cache.
  pub cached_tokens: usize,
  /// Tokens not read from the cache.
  pub written_tokens: usize,
  /// The cost in dollars.
  pub cost: f64,
  /// What the same tokens would cost without a cache (`input_tokens × input`).
  pub cost_without_cache: f64,
  /// Turns whose request is over the window.
  pub over_window_turns: usize,
  /// Turns on which the request was re-planned (high/low-water: trimmed or forced; every
  /// turn: the request differs from the whole conversation).
  pub replans: usize,
  /// The largest request, in tokens.
  pub max_input_tokens: usize,
}

impl Totals {
  /// `cached_tokens / input_tokens` (0 without input).
  pub fn cached_fraction(&self) -> f64 {
    if self.input_tokens == 0 {
      0.0
    } else {
      self.cached_tokens as f64 / self.input_tokens as f64
    }
  }
}

/// One policy replayed over the session.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRun {
  /// The policy.
  pub kind: PolicyKind,
  /// Every turn, in order.
  pub turns: Vec<Turn>,
  /// Their sums.
  pub totals: Totals,
}

/// The result of [`simulate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
  /// One run per policy asked for, in the order asked.
  pub runs: Vec<PolicyRun>,
}

/// The end (exclusive) of every turn's request: the index of each assistant message that has
/// at least one message before it.
pub fn turn_ends(messages: &[&Message]) -> Vec<usize> {
  messages
    .iter()
    .enumerate()
    .filter(|(i, m)| *i > 0 && m.role == Role::Assistant)
    .map(|(i, _)| i)
    .collect()
}

/// Replays `messages` turn by turn under each policy of `options` (see the [module
/// docs](self)).
///
/// The session is analysed once, message by message ([`Layout::push`]), and every turn's
/// request is a view of it: the simulator's own work per turn is the new messages, plus, for a
/// request that sends everything, nothing more. What a strategy does on a turn is the
/// strategy's cost (a trim reads the whole request).
///
/// # Errors
///
/// The errors of [`CachePolicyOptions::validate`] and [`Pricing::validate`].
pub fn simulate(messages: &[&Message], options: &SimulateOptions) -> Result<Simulation> {
  options.policy.validate()?;
  options.pricing.validate()?;
  let ends = turn_ends(messages);
  let mut runners = options
    .policies
    .iter()
    .map(|&kind| Runner::new(kind, options, ends.len()))
    .collect::<Result<Vec<_>>>()?;
  let mut layout = Layout::default();
  // Only the policies that trim read the messages' file operations and which results are
  // superseded (the priority strategies' classification, deduplication): found once per
  // message, as the session grows.
  let mut analysis =
    options.policies.iter().any(|&kind| kind != PolicyKind::None).then(GrowingAnalysis::default);
  let mut replayed = Replayed { prefix: vec![0], fingerprints: Vec::new() };
  for &end in &ends {
    for m in &messages[layout.len()..end] {
      let tokens = message_tokens(m, options.encoding);
      layout.push(m, tokens);
      replayed.push(m, tokens);
    }
    let conv = Conversation::with_layout(messages[..end].to_vec(), options.encoding, &layout)
      .with_format(options.format);
    if let Some(analysis) = &mut analysis {
      analysis.extend(&conv);
    }
    let conv = match &analysis {
      Some(analysis) => analysis.give(conv),
      None => conv,
    };
    for runner in &mut runners {
      runner.turn(&conv, &replayed, options);
    }
  }
  Ok(Simulation { runs: runners.into_iter().map(|r| r.finish(options)).collect() })
}

/// What the replay keeps of the messages so far, by index, for the requests' accounting (read
/// from here rather than from each message: a turn's request may read every one).
struct Replayed {
  /// `prefix[i]`: the tokens of the first `i` messages.
  prefix: Vec<usize>,
  /// Each message's [`Message::fingerprint`].
  fingerprints: Vec<u64>,
}

impl Replayed {
  /// Adds the next message, of `tokens`.
  fn push(&mut self, m: &Message, tokens: usize) {
    self.prefix.push(self.prefix[self.prefix.len() - 1] + tokens);
    self.fingerprints.push(m.fingerprint());
  }
}

/// How a policy's plan for a turn came from its plan for the turn before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
  /// Made afresh.
  Made,
  /// The same, new messages added.
  Extended,
  /// The same but for the messages the supersessions found superseded since `revision`
  /// ([`crate::strategy::dedup::changed_since`]), new messages added; it drops nothing.
  ReplacedSince(Revision),
}

/// What the previous request of a policy sent.
enum Sent {
  /// Every message of the session up to this index, unchanged.
  All(usize),
  /// Each sent message's key and tokens (see [`sent_messages`]), for the first `covered`
  /// messages of the session, and the sum of those tokens.
  Keys { sent: Vec<(u64, usize)>, covered: usize, tokens: usize },
}

impl Sent {
  /// The sent list of a request that sends `sent`.
  fn keys(sent: Vec<(u64, usize)>, covered: usize) -> Sent {
    let tokens = sent.iter().map(|(_, tokens)| tokens).sum();
    Sent::Keys { sent, covered, tokens }
  }
}

/// The tokens of the request that sends `plan` of `conv`, given the sum of its messages' tokens
/// (`Plan::total_tokens` without a pass over the plan, when it inserts nothing).
fn request_tokens(conv: &Conversation<'_>, plan: &Plan, sent: &Sent) -> usize {
  let Sent::Keys { sent, tokens, .. } = sent else { return plan.total_tokens(conv) };
  let total = match (plan.insertions().is_empty(), sent.is_empty()) {
    (true, true) => 0,
    (true, false) => tokens + reply_priming(conv.encoding()),
    (false, _) => plan.total_tokens(conv),
  };
  debug_assert_eq!(total, plan.total_tokens(conv));
  total
}

/// One policy's replay, a turn at a time.
struct Runner {
  kind: PolicyKind,
  policy: CachePolicy,
  dedup: DedupOptions,
  previous: Sent,
  /// [`PolicyKind::Dedup`]: the last plan that deduplicated, with the revision of the
  /// supersessions it was made from ([`crate::strategy::dedup::revision`]).
  deduplicated: Option<(Revision, Arc<Plan>)>,
  turns: Vec<Turn>,
  totals: Totals,
}

impl Runner {
  fn new(kind: PolicyKind, options: &SimulateOptions, turns: usize) -> Result<Runner> {
    let window = options.policy.context_window;
    Ok(Runner {
      kind,
      policy: CachePolicy::new(options.policy.clone())?,
      dedup: DedupOptions {
        threshold_tokens: DedupOptions::threshold_from(Some(window), None)?,
        ..DedupOptions::default()
      },
      previous: Sent::All(0),
      deduplicated: None,
      turns: Vec::with_capacity(turns),
      totals: Totals::default(),
    })
  }

  /// The request of the turn whose messages are `conv`.
  fn turn(&mut self, conv: &Conversation<'_>, replayed: &Replayed, options: &SimulateOptions) {
    let window = options.policy.context_window;
    let budget = options.every_turn_budget.min(window);
    let (plan, decision, change) = match self.kind {
      PolicyKind::None => (None, None, Change::Made),
      PolicyKind::EveryTurn => {
        let mut plan = fit_window(conv, options.policy.strategy.plan(conv, budget), window, budget);
        plan.conform(conv);
        (Some(Arc::new(plan)), None, Change::Made)
      }
      PolicyKind::HighLow => {
        // The replay only adds messages: what the policy remembers is there as it was.
        let step = self.policy.step_extending(conv);
        let change = if step.extended { Change::Extended } else { Change::Made };
        (Some(step.plan), Some(step.decision), change)
      }
      PolicyKind::Dedup => {
        // Deduplication applies from a size on, and the conversation only grows: from then on
        // the plan is carried from turn to turn, and only what the new messages supersede is
        // decided again.
        let carried = self.deduplicated.as_mut().and_then(|(made, plan)| {
          let now = deduplicate_since(conv, &self.dedup, Arc::make_mut(plan), *made)?;
          let change = if now == *made { Change::Extended } else { Change::ReplacedSince(*made) };
          *made = now;
          Some((Arc::clone(plan), change))
        });
        match carried {
          Some((plan, change)) => (Some(plan), None, change),
          None => {
            let dedup = deduplicate(conv, &self.dedup);
            let plan = Arc::new(dedup.plan);
            let revision = dedup_revision(conv, &self.dedup);
            self.deduplicated = revision.filter(|_| dedup.applied).map(|r| (r, Arc::clone(&plan)));
            (Some(plan), None, Change::Made)
          }
        }
      }
    };
    let plan = plan.filter(|p| !p.is_identity());
    let changed = match change {
      Change::ReplacedSince(revision) => changed_since(conv, &self.dedup, revision),
      Change::Made | Change::Extended => Vec::new(),
    };
    let previous = std::mem::replace(&mut self.previous, Sent::All(0));
    let (sent, input_tokens, cached_tokens, now) = match &plan {
      // Everything is sent: its keys are the messages' fingerprints, and the prefix it shares
      // with a request that also sent everything is the shorter one.
      None => {
        let common = match &previous {
          Sent::All(n) => (*n).min(conv.len()),
          Sent::Keys { sent, .. } => {
            replayed.fingerprints.iter().zip(sent).take_while(|(f, (key, _))| *f == key).count()
          }
        };
        (conv.len(), conv.total_tokens(), replayed.prefix[common], Sent::All(conv.len()))
      }
      // The previous request with the new messages after it: all of it is read from the cache.
      Some(plan) if change == Change::Extended && matches!(previous, Sent::Keys { .. }) => {
        let Sent::Keys { sent, covered, tokens: cached } = previous else { unreachable!() };
        let (count, input, now) = with_new_messages(conv, replayed, plan, sent, covered, cached);
        (count, input, cached, now)
      }
      // The previous request but for the messages deduplicated again, new messages after it:
      // it sent every message, so each one's place in it is its index, and the requests share
      // the messages before the first that changed.
      Some(plan) if resent_in_place(plan, change, &changed, &previous) => {
        let (Change::ReplacedSince(_), Sent::Keys { mut sent, covered, mut tokens }) =
          (change, previous)
        else {
          unreachable!("resent_in_place checked both")
        };
        let mut common = covered;
        for &i in changed.iter().filter(|&&i| i < covered) {
          let Some((key, now)) = sent_messages(conv, replayed, plan, i..i + 1).next() else {
            unreachable!("resent_in_place checked it is sent")
          };
          let (was, before) = std::mem::replace(&mut sent[i], (key, now));
          if was != key {
            common = common.min(i);
          }
          tokens = tokens - before + now;
        }
        let cached = sent[..common].iter().map(|(_, tokens)| tokens).sum();
        let (count, input, now) = with_new_messages(conv, replayed, plan, sent, covered, tokens);
        (count, input, cached, now)
      }
      Some(plan) => {
        let mut sent = Vec::with_capacity(match &previous {
          Sent::Keys { sent, .. } => sent.len() + 1,
          Sent::All(n) => *n,
        });
        sent.extend(sent_messages(conv, replayed, plan, 0..conv.len()));
        let common = match &previous {
          Sent::All(n) => sent
            .iter()
            .zip(&replayed.fingerprints[..*n])
            .take_while(|((key, _), f)| key == *f)
            .count(),
          Sent::Keys { sent: before, .. } => {
            sent.iter().zip(before).take_while(|((key, _), (was, _))| key == was).count()
          }
        };
        let cached: usize = sent[..common].iter().map(|(_, tokens)| tokens).sum();
        let count = sent.len();
        let now = Sent::keys(sent, conv.len());
        (count, request_tokens(conv, plan, &now), cached, now)
      }
    };
    let written_tokens = input_tokens - cached_tokens.min(input_tokens);
    let cost = options.pricing.cost(cached_tokens, written_tokens);
    let totals = &mut self.totals;
    totals.input_tokens += input_tokens;
    totals.cached_tokens += cached_tokens;
    totals.written_tokens += written_tokens;
    totals.cost += cost;
    totals.max_input_tokens = totals.max_input_tokens.max(input_tokens);
    let over_window = input_tokens > window;
    totals.over_window_turns += usize::from(over_window);
    totals.replans += usize::from(match (self.kind, decision) {
      (PolicyKind::HighLow, Some(d)) => d.replanned(),
      _ => plan.is_some(),
    });
    self.turns.push(Turn {
      reply: conv.len(),
      messages: sent,
      input_tokens,
      cached_tokens,
      written_tokens,
      cost,
      cumulative_cost: totals.cost,
      over_window,
      decision,
    });
    self.previous = now;
  }

  fn finish(mut self, options: &SimulateOptions) -> PolicyRun {
    self.totals.cost_without_cache = self.totals.input_tokens as f64 * options.pricing.input / 1e6;
    PolicyRun { kind: self.kind, turns: self.turns, totals: self.totals }
  }
}

/// The previous request's list `sent` (of the first `covered` messages, `tokens` in all) with
/// the new messages `plan` sends after it: the request's message count, tokens and list. Debug
/// builds check the list against one made afresh.
fn with_new_messages(
  conv: &Conversation<'_>,
  replayed: &Replayed,
  plan: &Plan,
  mut sent: Vec<(u64, usize)>,
  covered: usize,
  tokens: usize,
) -> (usize, usize, Sent) {
  let from = sent.len();
  sent.extend(sent_messages(conv, replayed, plan, covered..conv.len()));
  let tokens = tokens + sent[from..].iter().map(|(_, tokens)| tokens).sum::<usize>();
  debug_assert_eq!(sent, sent_messages(conv, replayed, plan, 0..conv.len()).collect::<Vec<_>>());
  let count = sent.len();
  let now = Sent::Keys { sent, covered: conv.len(), tokens };
  (count, request_tokens(conv, plan, &now), now)
}

/// Whether the request of `plan` is `previous` with messages replaced in place: `plan` changed
/// only messages superseded since the previous turn ([`Change::ReplacedSince`]; `changed` are
/// they) and sends them, and `previous` sent every message it covered.
fn resent_in_place(plan: &Plan, change: Change, changed: &[usize], previous: &Sent) -> bool {
  let (Change::ReplacedSince(_), Sent::Keys { sent, covered, .. }) = (change, previous) else {
    return false;
  };
  sent.len() == *covered && changed.iter().all(|&i| !plan.is_dropped(i))
}

/// The messages of `range` a plan sends, each as (a key equal for identically serialised messages, its
/// tokens).
fn sent_messages<'p>(
  conv: &'p Conversation<'_>,
  replayed: &'p Replayed,
  plan: &'p Plan,
  range: std::ops::Range<usize>,
) -> impl Iterator<Item = (u64, usize)> + 'p {
  range.filter_map(|i| {
    let action = plan.action(i);
    Some((sent_key(replayed.fingerprints[i], action)?, plan.tokens_of(conv, i)))
  })
}

/// The key of a message a request sends, equal for identically serialised messages: the
/// message's own [`Message::fingerprint`] when kept, with its replacement's texts when replaced;
/// `None` when dropped (it is not sent).
pub fn sent_key(fingerprint: u64, action: &Action) -> Option<u64> {
  match action {
    Action::Drop => None,
    Action::Keep => Some(fingerprint),
    Action::Replace(r) => {
      let mut h = std::hash::DefaultHasher::new();
      fingerprint.hash(&mut h);
      r.fingerprint().hash(&mut h);
      Some(h.finish())
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::Role;
  use crate::strategy::cache_policy::Strategy;

  fn sent_list(
    conv: &Conversation<'_>,
    plan: &Plan,
    range: std::ops::Range<usize>,
  ) -> Vec<(u64, usize)> {
    let mut replayed = Replayed { prefix: vec![0], fingerprints: Vec::new() };
    for i in 0..conv.len() {
      replayed.push(conv.message(i), conv.tokens(i));
    }
    sent_messages(conv, &replayed, plan, range).collect()
  }

  fn text(role: Role, c: char, chars: usize) -> Message {
    Message::text(role, c.to_string().repeat(chars))
  }

  /// Approximate counts (a token per 4 characters): a message is 3 + its role's tokens
  /// (system 2, user 1, assistant 3) + its content's.
  fn session() -> Vec<Message> {
    vec![
      text(Role::System, 'x', 40),   // 3 + 2 + 10 = 15
      text(Role::User, 'y', 36),     // 3 + 1 + 9 = 13
      text(Role::Assistant, 'a', 8), // 3 + 3 + 2 = 8
      text(Role::User, 'z', 16),     // 3 + 1 + 4 = 8
      text(Role::Assistant, 'b', 8), // 8
      text(Role::User, 'w', 20),     // 3 + 1 + 5 = 9
      text(Role::Assistant, 'c', 8), // 8
    ]
  }

  fn refs(msgs: &[Message]) -> Vec<&Message> {
    msgs.iter().collect()
  }

  fn options(window: usize, policies: Vec<PolicyKind>) -> SimulateOptions {
    SimulateOptions {
      policy: CachePolicyOptions::new(window, Strategy::Age),
      every_turn_budget: window,
      pricing: Pricing::ANTHROPIC,
      policies,
      encoding: Encoding::Approximate,
      format: Format::OpenAi,
    }
  }

  /// (input, cached, written) per turn.
  fn tokens(run: &PolicyRun) -> Vec<(usize, usize, usize)> {
    run.turns.iter().map(|t| (t.input_tokens, t.cached_tokens, t.written_tokens)).collect()
  }

  #[test]
  fn the_arithmetic_of_a_hand_computed_session() {
    let msgs = session();
    assert_eq!(turn_ends(&refs(&msgs)), vec![2, 4, 6]);
    let sim = simulate(&refs(&msgs), &options(100, PolicyKind::ALL.to_vec())).unwrap();
    // Within the window every policy sends everything:
    // turn 1 sends [0, 1]: 15 + 13 + 3 priming = 31, nothing cached;
    // turn 2 sends [0..4): 31 + 8 + 8 = 47, [0, 1] cached = 28, 19 written;
    // turn 3 sends [0..6): 47 + 8 + 9 = 64, [0..4) cached = 44, 20 written.
    for run in &sim.runs {
      assert_eq!(tokens(run), vec![(31, 0, 31), (47, 28, 19), (64, 44, 20)], "{:?}", run.kind);
      // Anthropic, per million tokens: 0.30 a cached token, 3.75 a written one.
      let costs: Vec<f64> = run.turns.iter().map(|t| t.cost * 1e6).collect();
      let expected = [31.0 * 3.75, 28.0 * 0.3 + 19.0 * 3.75, 44.0 * 0.3 + 20.0 * 3.75];
      for (got, want) in costs.iter().zip(expected) {
        assert!((got - want).abs() < 1e-9, "{got} != {want}");
      }
      assert!((run.totals.cost * 1e6 - 284.1).abs() < 1e-9);
      assert!((run.turns[2].cumulative_cost - run.totals.cost).abs() < 1e-15);
      assert_eq!(run.totals.input_tokens, 142);
      assert_eq!(run.totals.cached_tokens, 72);
      assert!((run.totals.cached_fraction() - 72.0 / 142.0).abs() < 1e-12);
      assert!((run.totals.cost_without_cache * 1e6 - 142.0 * 3.0).abs() < 1e-9);
      assert_eq!(
        (run.totals.over_window_turns, run.totals.replans, run.totals.max_input_tokens),
        (0, 0, 64)
      );
    }
  }

  #[test]
  fn the_arithmetic_when_policies_trim() {
    let msgs = session();
    let sim = simulate(&refs(&msgs), &options(50, PolicyKind::ALL.to_vec())).unwrap();
    let [none, every, high_low, dedup] = &sim.runs[..] else { panic!("four runs") };
    // Deduplication finds nothing to supersede in plain text: it sends what none sends.
    assert_eq!(tokens(dedup), tokens(none));
    assert_eq!(dedup.totals.over_window_turns, 1);
    // No trimming: turn 3 (64 tokens) is over the window of 50.
    assert_eq!(tokens(none), vec![(31, 0, 31), (47, 28, 19), (64, 44, 20)]);
    assert_eq!(
      none.turns.iter().map(|t| t.over_window).collect::<Vec<_>>(),
      vec![false, false, true]
    );
    assert_eq!(none.totals.over_window_turns, 1);
    // Every turn, trimmed to 50 oldest first: turn 3 drops [1] (64 − 13 = 51) and [2] (43),
    // sending [0, 3, 4, 5]: only [0] (15) is the previous request's prefix.
    assert_eq!(tokens(every), vec![(31, 0, 31), (47, 28, 19), (43, 15, 28)]);
    assert_eq!(every.totals.replans, 1);
    // High/low water: high 42, low 30, clear at least 2. Turn 2 (47) re-plans to [0, 3]
    // (15 + 8 + 3 = 26); turn 3 applies that ([0, 3, 4, 5] = 43 > 42) and re-plans again,
    // oldest first down to 30: [0, 5] (15 + 9 + 3 = 27).
    assert_eq!(tokens(high_low), vec![(31, 0, 31), (26, 15, 11), (27, 15, 12)]);
    let decisions: Vec<_> = high_low.turns.iter().map(|t| t.decision).collect();
    assert_eq!(
      decisions,
      vec![Some(Decision::Kept), Some(Decision::Trimmed), Some(Decision::Trimmed)]
    );
    assert_eq!(high_low.totals.replans, 2);
    let cost = |t: &[(usize, usize, usize)]| {
      t.iter().map(|&(_, c, w)| c as f64 * 0.3 + w as f64 * 3.75).sum::<f64>()
    };
    assert!((high_low.totals.cost * 1e6 - cost(&tokens(high_low))).abs() < 1e-9);
  }

  #[test]
  fn replaced_messages_are_cached_only_when_their_text_is_unchanged() {
    let mut a = Plan::keep_all(2);
    let msgs = vec![Message::text(Role::User, "q"), Message::text(Role::Tool, "long output")];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let keep = sent_list(&conv, &a, 0..2);
    a.replace(1, crate::plan::replacement(&conv, 1, "[cut 1 step ago]".into(), vec![]));
    let one = sent_list(&conv, &a, 0..2);
    let mut b = Plan::keep_all(2);
    b.replace(1, crate::plan::replacement(&conv, 1, "[cut 2 steps ago]".into(), vec![]));
    let two = sent_list(&conv, &b, 0..2);
    assert_eq!(keep[0], one[0]);
    assert_ne!(keep[1].0, one[1].0);
    assert_ne!(one[1].0, two[1].0);
    assert_eq!(one, sent_list(&conv, &a.clone(), 0..2));
    // A replacement's fingerprint is its content and metadata's, asked or not.
    let Action::Replace(r) = a.action(1) else { panic!("replaced") };
    let fresh = crate::plan::Replacement::new(r.content.clone(), r.meta.clone(), r.tokens);
    assert_eq!(**r, fresh);
    assert_eq!(r.fingerprint(), fresh.fingerprint());
    let flagged = vec![("_truncated", crate::plan::MetaValue::Bool(true))];
    let other = crate::plan::Replacement::new(r.content.clone(), flagged, r.tokens);
    assert_ne!(r.fingerprint(), other.fingerprint());
  }

  /// [`simulate`] with every turn analysed from scratch: a fresh conversation of the turn's
  /// messages, with its own layout and counts, and no supersessions carried from turn to turn.
  fn from_scratch(messages: &[&Message], options: &SimulateOptions) -> Simulation {
    let ends = turn_ends(messages);
    let mut runners: Vec<Runner> = options
      .policies
      .iter()
      .map(|&kind| Runner::new(kind, options, ends.len()).unwrap())
      .collect();
    for &end in &ends {
      let conv = Conversation::from_refs(messages[..end].to_vec(), options.encoding)
        .with_format(options.format);
      let mut replayed = Replayed { prefix: vec![0], fingerprints: Vec::new() };
      for i in 0..end {
        replayed.push(conv.message(i), conv.tokens(i));
      }
      for runner in &mut runners {
        runner.turn(&conv, &replayed, options);
      }
    }
    Simulation { runs: runners.into_iter().map(|r| r.finish(options)).collect() }
  }

  /// A session of parallel reads in Anthropic's form (a step's two results in one message),
  /// files read again and again: carried from turn to turn (the split view, the deduplication
  /// decided result by result only where new messages supersede), the simulation is what a
  /// from-scratch analysis of every turn gives.
  #[test]
  fn carrying_the_analysis_of_parallel_results_changes_nothing() {
    let lines = |f: usize, s: usize| {
      (0..80).map(|k| format!("file {f} line {k} at {}", s / 6)).collect::<Vec<_>>().join("\n")
    };
    let mut value = vec![serde_json::json!({"role": "user", "content": "Fix the bug"})];
    for s in 0..40 {
      let files = [s % 6, (s * 5 + 1) % 6];
      let uses: Vec<_> = files.iter().enumerate().map(|(k, f)| serde_json::json!({"type": "tool_use", "id": format!("t{s}_{k}"), "name": "read_file", "input": {"path": format!("src/f{f}.ts")}})).collect();
      let results: Vec<_> = files.iter().enumerate().map(|(k, f)| serde_json::json!({"type": "tool_result", "tool_use_id": format!("t{s}_{k}"), "content": lines(*f, s)})).collect();
      value.push(serde_json::json!({"role": "assistant", "content": uses}));
      value.push(serde_json::json!({"role": "user", "content": results}));
    }
    value.push(serde_json::json!({"role": "assistant", "content": "Done."}));
    let (_, messages) =
      crate::model::format::parse_messages(&serde_json::Value::Array(value), None).unwrap();
    let refs = refs(&messages);
    let whole = Conversation::from_refs(refs.clone(), Encoding::O200kBase);
    let total = whole.total_tokens();
    for (strategy, percent) in [
      (Strategy::Priority(Default::default()), 40),
      (Strategy::Placeholders(Default::default(), None), 60),
    ] {
      let window = total * percent / 100;
      let mut o = options(window, PolicyKind::ALL.to_vec());
      o.encoding = Encoding::O200kBase;
      o.format = Format::Anthropic;
      o.policy = CachePolicyOptions::new(window, strategy.clone());
      let sim = simulate(&refs, &o).unwrap();
      assert_eq!(sim, from_scratch(&refs, &o), "{strategy:?} at {percent}%");
      let dedup = sim.runs.iter().find(|r| r.kind == PolicyKind::Dedup).unwrap();
      assert!(dedup.totals.replans > 0, "nothing was deduplicated");
    }
  }

  /// Every shared transcript, and two of them one after the other (a longer session whose
  /// second half reads the files of the first again), replayed under every policy with the
  /// strategies that classify (priority, placeholders) and one that does not (age), with
  /// windows that make every trimming policy trim: the simulator, which carries the layout and
  /// the supersessions from turn to turn, gives what a from-scratch analysis of every turn
  /// gives, turn by turn.
  #[test]
  fn carrying_the_analysis_from_turn_to_turn_changes_nothing() {
    let mut sessions = crate::testing::transcripts();
    assert!(sessions.len() >= 7, "the shared transcripts");
    let mut twice = sessions[0].1.clone();
    twice.extend(sessions[1].1.iter().filter(|m| m.role != Role::System).cloned());
    sessions.push((format!("{} then {}", sessions[0].0, sessions[1].0), twice));
    let mut superseded_somewhere = false;
    for (name, messages) in &sessions {
      let refs = refs(messages);
      let whole = Conversation::from_refs(refs.clone(), Encoding::O200kBase);
      superseded_somewhere |=
        !crate::analysis::supersession::superseded_results(&whole, &DedupOptions::default().tools)
          .is_empty();
      let total = whole.total_tokens();
      for (strategy, percent) in [
        (Strategy::Priority(Default::default()), 40),
        (Strategy::Placeholders(Default::default(), None), 60),
        (Strategy::Age, 50),
      ] {
        let window = total * percent / 100;
        let mut o = options(window, PolicyKind::ALL.to_vec());
        o.encoding = Encoding::O200kBase;
        o.policy = CachePolicyOptions::new(window, strategy.clone());
        let sim = simulate(&refs, &o).unwrap();
        assert_eq!(sim, from_scratch(&refs, &o), "{name}, {strategy:?} at {percent}%");
        let trimmed = sim.runs.iter().filter(|r| r.kind != PolicyKind::None);
        assert!(trimmed.clone().any(|r| r.totals.replans > 0), "{name}: nothing was trimmed");
      }
    }
    assert!(superseded_somewhere, "no transcript has a superseded result");
  }

  /// The high/low-water policy's turns that keep the previous decisions extend the previous
  /// request's keys instead of computing them again: every turn's tokens are those computed
  /// from each turn's whole request, on every shared transcript at windows that make it trim.
  #[test]
  fn extended_requests_count_as_whole_ones() {
    for (name, messages) in crate::testing::transcripts() {
      let refs = refs(&messages);
      let total = Conversation::from_refs(refs.clone(), Encoding::O200kBase).total_tokens();
      for percent in [30, 60] {
        let window = total * percent / 100;
        let mut o = options(window, vec![PolicyKind::HighLow]);
        o.encoding = Encoding::O200kBase;
        o.policy = CachePolicyOptions::new(window, Strategy::Priority(Default::default()));
        let sim = simulate(&refs, &o).unwrap();
        let mut policy = CachePolicy::new(o.policy.clone()).unwrap();
        let mut before: Vec<(u64, usize)> = Vec::new();
        let mut expected = Vec::new();
        for end in turn_ends(&refs) {
          let conv = Conversation::from_refs(refs[..end].to_vec(), o.encoding);
          let step = policy.step(&conv);
          let sent = sent_list(&conv, &step.plan, 0..end);
          let common = sent.iter().zip(&before).take_while(|(a, b)| a.0 == b.0).count();
          let cached: usize = sent[..common].iter().map(|(_, t)| t).sum();
          let input = step.plan.total_tokens(&conv);
          expected.push((input, cached, input - cached));
          before = sent;
        }
        let got = tokens(&sim.runs[0]);
        assert_eq!(got, expected, "{name} at {percent}%");
        assert!(sim.runs[0].totals.replans > 0, "{name} at {percent}%: nothing trimmed");
      }
    }
  }

  #[test]
  fn prices_and_policies_are_checked() {
    assert_eq!(Pricing::preset("openai").unwrap(), Pricing::OPENAI);
    assert_eq!(
      Pricing::preset("gemini").unwrap_err().to_string(),
      "pricing: must be anthropic, openai or a price table, got \"gemini\""
    );
    let bad = Pricing { cache_read: -1.0, ..Pricing::ANTHROPIC };
    assert_eq!(
      bad.validate().unwrap_err().to_string(),
      "pricing.cacheRead: must be a non-negative number of dollars per million tokens, got -1"
    );
    assert_eq!(PolicyKind::parse("high-low", "policies[0]").unwrap(), PolicyKind::HighLow);
    assert_eq!(
      PolicyKind::parse("lru", "policies[1]").unwrap_err().to_string(),
      "policies[1]: must be one of none, every-turn, high-low, dedup, got \"lru\""
    );
    let mut o = options(100, vec![PolicyKind::None]);
    o.policy.low_water = 2.0;
    assert!(simulate(&refs(&session()), &o).is_err());
    assert_eq!(simulate(&[], &options(100, vec![PolicyKind::None])).unwrap().runs[0].turns, vec![]);
  }
}
