//! The fuzzing harness: arbitrary bytes in, every strategy and the validator run, their
//! invariants asserted. Behind the `fuzzing` cargo feature; not part of the library's API.
//!
//! Three callers share it, so an invariant is written once:
//!
//! - the cargo-fuzz targets in `fuzz/fuzz_targets/` call [`fuzz_strategies`] and
//!   [`fuzz_validate`] on whatever libFuzzer makes up;
//! - `tests/fuzz_corpus.rs` replays the committed corpus (`fuzz/corpus/<target>/`) through the
//!   same two functions as a regular `cargo test`;
//! - `tests/properties.rs` generates conversations with proptest and calls
//!   [`check_strategies`] and [`check_validator`].
//!
//! # Input layout
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 0 | format: `0` openai, `1` anthropic, `2` ai-sdk, `3` auto (modulo 4) |
//! | 1 | encoding: `0`–`3` approximate, `4` o200k_base, `5` cl100k_base, `6` o200k_harmony, `7` p50k_base (modulo 8) |
//! | 2–3 | the budget, `u16` little-endian, as a fraction of the conversation's tokens: `budget = total × b / 32768` (0 to 2×) |
//! | 4–11 | option bits, `u64` little-endian, from which each strategy derives its options |
//! | 12… | the messages: a JSON array in the chosen format |
//!
//! Inputs shorter than the header, bytes that are not JSON, and messages the format rejects are
//! fine: parsing must fail with an [`Error`](crate::Error), never panic.
//!
//! # What is checked
//!
//! For every strategy of [`STRATEGIES`] (see [`check_strategies`]): one decision per message;
//! tool-call units dropped or kept whole; never-dropped messages returned (the last message,
//! the first system message, protected tiers, each as the strategy promises); the output valid
//! whenever the input is (with the plan made to conform to the format, as the binding does);
//! the budget met unless only protected messages are left; nothing changed when the input fits; the same plan on a second run and on a fresh copy of the
//! messages (whose memoised counts are empty); trimming the output again changes nothing.
//! Order needs no check: a plan has one decision per input index, so its output is a
//! subsequence of the input by construction.
//!
//! For the validator and the repair (see [`check_validator`]): problems name existing messages
//! and come out the same twice; a valid input is repaired to itself with no repair; a repair's
//! output has no problem but the order problems it documents it leaves; repairing it again
//! changes nothing.

mod cache_policy;
mod strategies;

use std::fmt;

use serde_json::Value;

use crate::model::conversation::Conversation;
use crate::model::format::{parse_messages, Format};
use crate::model::message::{Message, Role};
use crate::model::tokens::{message_tokens, Encoding};
use crate::output::repair::repair;
use crate::output::validate::{validate, validate_plan, ProblemKind};
use crate::plan::{Action, Plan};

pub use cache_policy::{cache_policy_options, check_cache_policy};
pub use strategies::{Guard, Promises, Strategy, STRATEGIES};

/// The length of the input header (see the module documentation).
pub const HEADER_LEN: usize = 12;

/// How a strategy is called: the encoding, the budget and the bits its options come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Knobs {
  /// The encoding the conversation is counted in.
  pub encoding: Encoding,
  /// The budget as a fraction of the conversation's tokens: `total × budget / 32768`.
  pub budget: u16,
  /// Bits from which each strategy derives its options.
  pub bits: u64,
}

impl Knobs {
  /// The budget in tokens for a conversation of `total` tokens.
  pub fn budget_for(&self, total: usize) -> usize {
    // Widened so that no total overflows; the result is at most 2 × total, saturated.
    usize::try_from((total as u128 * u128::from(self.budget)) >> 15).unwrap_or(usize::MAX)
  }
}

/// A decoded fuzz input: the format to read the messages in (`None` = detect), the knobs, and
/// the messages as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
  /// The format, or `None` for `auto`.
  pub format: Option<Format>,
  /// The knobs.
  pub knobs: Knobs,
  /// The messages, as parsed JSON (not yet read in a format).
  pub messages: Value,
}

/// Decodes the header and the JSON of a fuzz input; `None` when it is too short or not JSON.
pub fn decode(data: &[u8]) -> Option<Input> {
  let (header, json) = data.split_at_checked(HEADER_LEN)?;
  let format = match header[0] % 4 {
    0 => Some(Format::OpenAi),
    1 => Some(Format::Anthropic),
    2 => Some(Format::AiSdk),
    _ => None,
  };
  let encoding = match header[1] % 8 {
    4 => Encoding::O200kBase,
    5 => Encoding::Cl100kBase,
    6 => Encoding::O200kHarmony,
    7 => Encoding::P50kBase,
    _ => Encoding::Approximate,
  };
  let budget = u16::from_le_bytes([header[2], header[3]]);
  let mut bits = [0u8; 8];
  bits.copy_from_slice(&header[4..HEADER_LEN]);
  let messages = serde_json::from_slice(json).ok()?;
  Some(Input {
    format,
    knobs: Knobs { encoding, budget, bits: u64::from_le_bytes(bits) },
    messages,
  })
}

/// Encodes a header and messages the way [`decode`] reads them (for building corpora).
pub fn encode(format: Option<Format>, knobs: &Knobs, messages: &Value) -> Vec<u8> {
  let mut out = Vec::with_capacity(HEADER_LEN + 256);
  out.push(match format {
    Some(Format::OpenAi) => 0,
    Some(Format::Anthropic) => 1,
    Some(Format::AiSdk) => 2,
    None => 3,
  });
  // The corpus format names tokenizers only (counts with framing).
  out.push(match knobs.encoding.base() {
    Encoding::O200kBase => 4,
    Encoding::Cl100kBase => 5,
    Encoding::O200kHarmony => 6,
    Encoding::P50kBase => 7,
    Encoding::R50kBase
    | Encoding::Approximate
    | Encoding::O200kBaseContent
    | Encoding::Cl100kBaseContent
    | Encoding::O200kHarmonyContent
    | Encoding::P50kBaseContent
    | Encoding::R50kBaseContent
    | Encoding::ApproximateContent => 0,
  });
  out.extend_from_slice(&knobs.budget.to_le_bytes());
  out.extend_from_slice(&knobs.bits.to_le_bytes());
  out.extend_from_slice(messages.to_string().as_bytes());
  out
}

/// A broken invariant: which strategy (or `validate`/`repair`), which invariant, and the
/// details needed to reproduce it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
  /// The strategy, or `validate` / `repair`.
  pub subject: &'static str,
  /// The invariant, as a short phrase.
  pub invariant: &'static str,
  /// What was seen.
  pub detail: String,
}

impl fmt::Display for Violation {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{}: {}: {}", self.subject, self.invariant, self.detail)
  }
}

impl std::error::Error for Violation {}

fn ensure(
  ok: bool,
  subject: &'static str,
  invariant: &'static str,
  detail: impl FnOnce() -> String,
) -> Result<(), Violation> {
  if ok {
    Ok(())
  } else {
    Err(Violation { subject, invariant, detail: detail() })
  }
}

/// Loads every tokenizer once, so that the first input counted in an encoding is not charged
/// with loading it (seconds under a sanitizer, which libFuzzer would report as a timeout). The
/// fuzz targets call it from their `init` block.
pub fn warm_up() {
  for encoding in [
    Encoding::O200kBase,
    Encoding::Cl100kBase,
    Encoding::O200kHarmony,
    Encoding::P50kBase,
    Encoding::R50kBase,
  ] {
    crate::model::tokens::count_tokens("warm up", encoding);
  }
}

/// The fuzz target of the strategies: decodes `data`, reads the messages in the chosen format
/// and runs [`check_strategies`].
///
/// # Panics
///
/// On a broken invariant (that is how libFuzzer learns of it), with the [`Violation`]'s text.
pub fn fuzz_strategies(data: &[u8]) {
  let Some(input) = decode(data) else { return };
  let Ok((format, messages)) = parse_messages(&input.messages, input.format) else { return };
  if let Err(v) = check_strategies(&messages, format, &input.knobs) {
    panic!("{v}");
  }
}

/// The fuzz target of the cache-aware trimmer: decodes `data` as [`fuzz_strategies`] does and
/// runs [`check_cache_policy`] (a [`CachePolicy`](crate::strategy::cache_policy::CachePolicy) stepped
/// through the growing conversation).
///
/// # Panics
///
/// On a broken invariant, with the [`Violation`]'s text.
pub fn fuzz_cache_policy(data: &[u8]) {
  let Some(input) = decode(data) else { return };
  let Ok((format, messages)) = parse_messages(&input.messages, input.format) else { return };
  if let Err(v) = check_cache_policy(&messages, format, &input.knobs) {
    panic!("{v}");
  }
}

/// The fuzz target of the validator: decodes `data`, reads the messages in every format and in
/// the detected one, and runs [`check_validator`] on each reading that succeeds.
///
/// # Panics
///
/// On a broken invariant, with the [`Violation`]'s text.
pub fn fuzz_validate(data: &[u8]) {
  let Some(input) = decode(data) else { return };
  for format in [None, Some(Format::OpenAi), Some(Format::Anthropic), Some(Format::AiSdk)] {
    if let Ok((format, messages)) = parse_messages(&input.messages, format) {
      if let Err(v) = check_validator(&messages, format) {
        panic!("{v}");
      }
    }
  }
  // A non-array, or an array of anything: each message alone must parse or fail cleanly.
  if let Value::Array(items) = &input.messages {
    for (i, item) in items.iter().enumerate() {
      for format in Format::ALL {
        let _ = format.parse_message(item, i);
      }
    }
  }
}

/// Runs every strategy of [`STRATEGIES`] on `messages` with `knobs` and checks its invariants
/// (see the module documentation).
///
/// # Errors
///
/// The first [`Violation`] found.
pub fn check_strategies(
  messages: &[Message],
  format: Format,
  knobs: &Knobs,
) -> Result<(), Violation> {
  let conv = Conversation::new(messages, knobs.encoding).with_format(format);
  let input_valid = validate(messages, format).is_empty();
  for strategy in STRATEGIES {
    check_strategy(strategy, &conv, messages, format, input_valid, knobs)?;
  }
  Ok(())
}

fn check_strategy(
  s: &Strategy,
  conv: &Conversation<'_>,
  messages: &[Message],
  format: Format,
  input_valid: bool,
  knobs: &Knobs,
) -> Result<(), Violation> {
  let n = messages.len();
  let budget = knobs.budget_for(conv.total_tokens());
  let plan = (s.run)(conv, budget, knobs.bits);
  ensure(plan.actions().len() == n, s.name, "one decision per message", || {
    format!("{} decisions for {n} messages", plan.actions().len())
  })?;
  ensure(plan.check_units(conv).is_ok(), s.name, "units dropped or kept whole", || {
    plan.check_units(conv).err().unwrap_or_default()
  })?;
  if s.promises.drops_only {
    ensure(plan.replaced().is_empty(), s.name, "drops only, never replaces", || {
      format!("replaced {:?}", plan.replaced())
    })?;
  }
  let guards = (s.guards)(conv, knobs.bits);
  let lost: Vec<usize> =
    (0..n).filter(|&i| guards[i] != Guard::Free && plan.is_dropped(i)).collect();
  ensure(lost.is_empty(), s.name, "never drops a protected message", || {
    format!("dropped protected messages {lost:?} at budget {budget}")
  })?;
  let touched: Vec<usize> = (0..n)
    .filter(|&i| guards[i] == Guard::Untouched && !matches!(plan.action(i), Action::Keep))
    .collect();
  ensure(touched.is_empty(), s.name, "never changes an untouchable message", || {
    format!("changed {touched:?} at budget {budget}")
  })?;
  if s.promises.keeps_flagged_results {
    let changed: Vec<(usize, usize)> = (0..n)
      .flat_map(|i| {
        let Action::Replace(r) = plan.action(i) else { return Vec::new() };
        let results = messages[i].split_results();
        let flagged = results.iter().enumerate().filter(|(_, m)| m.is_error);
        flagged.filter(|(k, _)| r.result_text(*k).is_some()).map(|(k, _)| (i, k)).collect()
      })
      .collect();
    ensure(changed.is_empty(), s.name, "never changes a result flagged as an error", || {
      format!("changed (message, result) {changed:?} at budget {budget}")
    })?;
  }
  if input_valid {
    let problems = validate_plan(messages, &plan, format);
    ensure(problems.is_empty(), s.name, "valid input gives valid output", || {
      format!("{} at budget {budget}: {problems:?}", format.as_str())
    })?;
  }
  // What a plan counts for a replaced message is what its copy holds.
  let miscounted: Vec<(usize, usize, usize)> = (0..n)
    .filter_map(|i| {
      let Action::Replace(r) = plan.action(i) else { return None };
      let held = message_tokens(&crate::plan::replaced_message(&messages[i], r), conv.encoding());
      (held != r.tokens).then_some((i, r.tokens, held))
    })
    .collect();
  ensure(miscounted.is_empty(), s.name, "counts a copy as it is", || {
    format!("(message, tokens counted, tokens held) {miscounted:?} at budget {budget}")
  })?;
  let total = plan.total_tokens(conv);
  if s.promises.fits_unless_protected && total > budget {
    // `Plan::conform` may keep a user message again in a format that wants one first, past
    // the budget by that unit: without it, the budget is met or only guarded units are left.
    let (restored, restored_tokens) = restored_with_tokens(conv, &plan);
    let free: Vec<usize> = free_units_returned(conv, &plan, &guards)
      .into_iter()
      .filter(|u| !restored.contains(u))
      .collect();
    ensure(
      free.is_empty() || total - restored_tokens <= budget,
      s.name,
      "meets the budget unless only protected is left",
      || {
        let members: Vec<&[usize]> = free.iter().map(|&u| &conv.units()[u].members[..]).collect();
        format!("{total} tokens over a budget of {budget}, yet units {members:?} are returned")
      },
    )?;
  }
  if s.promises.unchanged_within_budget && conv.total_tokens() <= budget {
    ensure(plan.is_identity(), s.name, "changes nothing within the budget", || {
      format!("{} tokens within {budget}, yet dropped {:?}", conv.total_tokens(), plan.dropped())
    })?;
  }
  let again = (s.run)(conv, budget, knobs.bits);
  ensure(again == plan, s.name, "deterministic", || "a second run gave another plan".into())?;
  let copies: Vec<Message> = messages.to_vec();
  let fresh = Conversation::new(&copies, knobs.encoding).with_format(format);
  let fresh_plan = (s.run)(&fresh, budget, knobs.bits);
  ensure(fresh_plan == plan, s.name, "independent of memoised counts", || {
    "a fresh copy of the messages gave another plan".into()
  })?;
  if s.promises.idempotent {
    let output = output_of(messages, &plan);
    let out_conv = Conversation::new(&output, knobs.encoding).with_format(format);
    // Counted afresh: a budgeted strategy owes nothing on output that does not fit.
    if !s.promises.unchanged_within_budget || out_conv.total_tokens() <= budget {
      let second = (s.run)(&out_conv, budget, knobs.bits);
      // The latest step at which the first run cut an output to its head and tail, for the
      // strategy whose one exception is there (see `Promises::retruncates_before_cuts`).
      let last_cut_step = plan
        .actions()
        .iter()
        .filter(|a| !matches!(a, Action::Drop))
        .enumerate()
        .filter(|(_, a)| matches!(a, Action::Replace(r) if has_meta(r, "_cutTokens")))
        .map(|(k, _)| out_conv.step(k))
        .max()
        .filter(|_| s.promises.retruncates_before_cuts);
      // A placeholder replaced by the same placeholder changes no content.
      let changed: Vec<usize> = (0..output.len())
        .filter(|&k| match second.action(k) {
          Action::Keep => false,
          Action::Drop => true,
          Action::Replace(r) => {
            let truncated_before_cut =
              has_meta(r, "_truncatedAt") && last_cut_step.is_some_and(|s| s >= out_conv.step(k));
            crate::plan::replaced_message(&output[k], r).content != output[k].content
              && !truncated_before_cut
          }
        })
        .collect();
      ensure(changed.is_empty(), s.name, "idempotent", || {
        format!(
          "trimming the output ({total} tokens, budget {budget}) again changed messages {changed:?} of it"
        )
      })?;
    }
  }
  Ok(())
}

/// Whether replacement `r` sets the metadata field `key`.
fn has_meta(r: &crate::plan::Replacement, key: &str) -> bool {
  r.meta.iter().any(|(k, _)| *k == key)
}

/// The unit [`Plan::conform`] keeps again: the last message's when a strategy returned nothing
/// else, or the user message it keeps first in a format that wants one.
fn restored_units(conv: &Conversation<'_>, plan: &Plan) -> Vec<usize> {
  let mut restored = Vec::new();
  // A request needs a message: `Plan::conform` keeps the last message's unit again when a
  // strategy returned nothing...
  let last = conv.len().checked_sub(1).map(|i| conv.unit_of(i));
  let first_user =
    |i: usize| conv.message(i).role == Role::User && conv.message(i).answers.is_empty();
  let returned_only_last = (0..conv.len())
    .filter(|&i| !plan.is_dropped(i))
    .all(|i| Some(conv.unit_of(i)) == last || first_user(i));
  if let Some(last) = last.filter(|_| returned_only_last) {
    restored.push(last);
  }
  // ...and, in a format that wants a user message first, the user message before it.
  if !conv.format().rules().first_must_be_user {
    return restored;
  }
  let first =
    (0..conv.len()).find(|&i| !plan.is_dropped(i) && !conv.message(i).role.is_instruction());
  if let Some(first) = first.filter(|&i| conv.message(i).role == Role::User) {
    restored.push(conv.unit_of(first));
  }
  restored
}

/// [`restored_units`], each once, with the tokens they return under `plan`.
fn restored_with_tokens(conv: &Conversation<'_>, plan: &Plan) -> (Vec<usize>, usize) {
  let mut restored = restored_units(conv, plan);
  restored.sort_unstable();
  restored.dedup();
  let tokens = restored
    .iter()
    .flat_map(|&u| conv.units()[u].members.iter())
    .map(|&i| plan.tokens_of(conv, i))
    .sum();
  (restored, tokens)
}

/// The units with a message the plan returns although no guard asks for it.
fn free_units_returned(conv: &Conversation<'_>, plan: &Plan, guards: &[Guard]) -> Vec<usize> {
  let mut units: Vec<usize> = (0..conv.len())
    .filter(|&i| !plan.is_dropped(i) && guards[i] == Guard::Free)
    .map(|i| conv.unit_of(i))
    .collect();
  units.dedup();
  units
}

/// The messages `plan` returns: kept ones cloned, replaced ones with their new text.
pub fn output_of(messages: &[Message], plan: &Plan) -> Vec<Message> {
  messages
    .iter()
    .zip(plan.actions())
    .filter_map(|(m, a)| match a {
      Action::Keep => Some(m.clone()),
      Action::Replace(r) => Some(crate::plan::replaced_message(m, r)),
      Action::Drop => None,
    })
    .collect()
}

/// The problems a repair leaves by design: only merging or moving messages would fix them.
fn is_order_problem(kind: ProblemKind) -> bool {
  matches!(kind, ProblemKind::ConsecutiveSameRole | ProblemKind::FirstMessageNotUser)
}

/// Runs the validator and the repair on `messages` and checks their invariants (see the module
/// documentation).
///
/// # Errors
///
/// The first [`Violation`] found.
pub fn check_validator(messages: &[Message], format: Format) -> Result<(), Violation> {
  let n = messages.len();
  let problems = validate(messages, format);
  // An empty conversation is reported at index 0, the index its first message would have.
  let names_nothing = |p: &&crate::output::validate::Problem| {
    (p.index >= n && !(p.kind == ProblemKind::EmptyConversation && p.index == 0))
      || p.related.is_some_and(|r| r >= n)
  };
  let bad: Vec<_> = problems.iter().filter(names_nothing).collect();
  ensure(bad.is_empty(), "validate", "problems name existing messages", || format!("{bad:?}"))?;
  ensure(validate(messages, format) == problems, "validate", "deterministic", || {
    "a second run gave other problems".into()
  })?;
  let through_plan = validate_plan(messages, &Plan::keep_all(n), format);
  ensure(through_plan == problems, "validate", "an identity plan validates as its input", || {
    format!("{through_plan:?} vs {problems:?}")
  })?;

  let repaired = repair(messages, format);
  let plan = &repaired.plan;
  ensure(plan.actions().len() == n, "repair", "one decision per message", || {
    format!("{} decisions for {n} messages", plan.actions().len())
  })?;
  let changed: Vec<usize> = (0..n).filter(|&i| !matches!(plan.action(i), Action::Keep)).collect();
  let reported: Vec<usize> = repaired.repairs.iter().map(|r| r.index).collect();
  ensure(changed == reported, "repair", "one repair per changed message, in order", || {
    format!("changed {changed:?}, reported {reported:?}")
  })?;
  if problems.is_empty() {
    ensure(plan.is_identity(), "repair", "a valid input is returned whole", || {
      format!("changed {changed:?}")
    })?;
  }
  // A repair that leaves nothing says so (`nothing_left`, thrown as EMPTY_CONVERSATION by the
  // binding), and then the empty conversation is its output's one problem.
  let left: Vec<_> = validate_plan(messages, plan, format)
    .into_iter()
    .filter(|p| !is_order_problem(p.kind))
    .filter(|p| !(repaired.nothing_left.is_some() && p.kind == ProblemKind::EmptyConversation))
    .collect();
  let empty =
    validate_plan(messages, plan, format).iter().any(|p| p.kind == ProblemKind::EmptyConversation);
  ensure(empty == repaired.nothing_left.is_some(), "repair", "says when nothing is left", || {
    format!("nothing_left {:?}, output empty: {empty}", repaired.nothing_left)
  })?;
  ensure(left.is_empty(), "repair", "the output has no problem but order problems", || {
    format!("{}: {left:?}", format.as_str())
  })?;
  let output = output_of(messages, plan);
  let again = repair(&output, format);
  ensure(again.repairs.is_empty(), "repair", "idempotent", || {
    format!("repairing the output again: {:?}", again.repairs)
  })?;
  Ok(())
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn encode_and_decode_round_trip() {
    let knobs = Knobs { encoding: Encoding::Cl100kBase, budget: 12_345, bits: 0xdead_beef };
    let messages = json!([{"role": "user", "content": "hi"}]);
    let bytes = encode(Some(Format::Anthropic), &knobs, &messages);
    let input = decode(&bytes).unwrap();
    assert_eq!(input, Input { format: Some(Format::Anthropic), knobs, messages });
    assert_eq!(decode(&bytes[..HEADER_LEN - 1]), None);
    assert_eq!(decode(b"0123456789ab{not json"), None);
    assert_eq!(decode(&encode(None, &knobs, &json!(5))).unwrap().format, None);
  }

  #[test]
  fn the_budget_is_a_fraction_of_the_total() {
    let k = |budget| Knobs { budget, ..Knobs::default() };
    assert_eq!(k(32_768).budget_for(100), 100);
    assert_eq!(k(16_384).budget_for(100), 50);
    assert_eq!(k(u16::MAX).budget_for(100), 199);
    assert_eq!(k(u16::MAX).budget_for(usize::MAX), usize::MAX);
  }

  #[test]
  fn a_broken_invariant_is_reported_with_its_subject() {
    let v = ensure(false, "repair", "idempotent", || "x".into()).unwrap_err();
    assert_eq!(v.to_string(), "repair: idempotent: x");
    assert!(ensure(true, "repair", "idempotent", || unreachable!()).is_ok());
  }

  #[test]
  fn the_targets_accept_garbage_and_check_real_input() {
    for data in [&b""[..], b"short", b"\x00\x00\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00[{]"] {
      fuzz_strategies(data);
      fuzz_cache_policy(data);
      fuzz_validate(data);
    }
    let chat = json!([
      {"role": "system", "content": "rules"},
      {"role": "user", "content": "task"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "a", "function": {"name": "read_file", "arguments": "{\"path\":\"x\"}"}}]},
      {"role": "tool", "tool_call_id": "a", "content": "contents"},
      {"role": "user", "content": "and now"}
    ]);
    for budget in [0, 8_000, 16_384, 40_000] {
      let knobs = Knobs { budget, ..Knobs::default() };
      let data = encode(Some(Format::OpenAi), &knobs, &chat);
      fuzz_strategies(&data);
      fuzz_validate(&data);
      for bits in [0, 1, 2, 3, 4, 0xdead_beef, u64::MAX] {
        fuzz_cache_policy(&encode(Some(Format::OpenAi), &Knobs { bits, ..knobs }, &chat));
      }
    }
  }
}
