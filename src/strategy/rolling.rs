//! Rolling context (seed 004, phase 1): tool outputs older than `max_age` steps become a
//! placeholder, and younger ones longer than `max_tokens_per_output` keep only their head and
//! tail. Nothing is dropped and nothing moves, so every tool call keeps its result.
//!
//! Each tool result gets one [`Rule`], checked in this order:
//!
//! 1. [`Rule::Error`]: flagged `is_error`/`isError`, or its text is an error report
//!    ([`crate::analysis::detect::is_error_output`]). Kept whole, whatever its age or size.
//! 2. [`Rule::Small`]: under `small_output_tokens` content tokens. Kept whole.
//! 3. [`Rule::Placeholder`]: older than `max_age` steps (age = current step − its step), and
//!    neither quoted nor consumed (below). Its content becomes the placeholder, and
//!    `_originalLength`/`_truncatedAt` are recorded. With `stable_placeholders`, the age written
//!    in both is `max_age + 1`, the age at which the result was first truncated, so the text
//!    does not change from one call to the next (a provider's prompt cache stays valid).
//! 4. [`Rule::Cut`]: longer than `max_tokens_per_output` content tokens: head and tail kept
//!    around a marker naming the tokens cut ([`crate::model::cut`]), `_originalLength`/`_cutTokens`
//!    recorded. The cap applies to every result that is not an error, small, or a placeholder.
//! 5. [`Rule::Quoted`]: the latest tool result before a user message that contains a verbatim
//!    span of at least `min_quoted_chars` characters of that message. Kept.
//! 6. [`Rule::Consumed`]: the latest tool result, at a step before a recent call's (at most
//!    `max_age` steps old), that contains a verbatim span of at least `min_quoted_chars`
//!    characters of the call's argument values, or whose own call named a file path that the
//!    call names ([`PATH_FIELDS`], and file-like words of a `command`, see [`command_paths`]).
//!    Kept while that call is recent.
//! 7. [`Rule::Recent`]: anything else. Kept.
//!
//! "The latest tool result" matters: an agent that views a file, views it again and then edits
//! it took the text it edits from the second view, so only that one is kept for the edit's
//! sake. Tool results at the same step (parallel calls) are all kept.
//!
//! [`RollingContext`] is the `/rolling-context` toggle around it (off by default).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::analysis::memo;
use crate::analysis::span_index::{Marks, Matches, SpanIndex};
use crate::analysis::supersession::{answering_several, read_by_result};
use crate::error::{Error, ErrorKind, Result};
use crate::model::conversation::Conversation;
use crate::model::cut::{cut_content, MIN_CUT_BUDGET};
use crate::model::message::{quote, Message, Role};
use crate::model::tokens::message_content_tokens;
use crate::plan::{replacement_counted, replacement_of_results, MetaValue, Plan, Replacement};
use crate::strategy::placeholder::{PlaceholderFields, PlaceholderTemplate};

/// Default of [`TruncationConfig::max_age`].
pub const DEFAULT_MAX_AGE: usize = 5;
/// Default of [`TruncationConfig::max_tokens_per_output`].
pub const DEFAULT_MAX_TOKENS_PER_OUTPUT: usize = 2000;
/// Default of [`TruncationConfig::placeholder`].
pub const DEFAULT_PLACEHOLDER: &str = "[content truncated - {age} steps ago]";
/// Default of [`TruncationConfig::small_output_tokens`].
pub const DEFAULT_SMALL_OUTPUT_TOKENS: usize = 100;
/// Default of [`TruncationConfig::min_quoted_chars`].
pub const DEFAULT_MIN_QUOTED_CHARS: usize = 40;

/// Argument fields that name a file a tool call reads or writes, taken whole.
pub const PATH_FIELDS: &[&str] =
  &["path", "file", "file_path", "filePath", "filename", "file_name"];
/// The argument field holding a shell command, whose file-like words count as paths.
pub const COMMAND_FIELD: &str = "command";

/// How old and how long tool outputs may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncationConfig {
  /// Steps after which a tool result becomes the placeholder: truncated when its age is
  /// strictly greater.
  pub max_age: usize,
  /// Content tokens above which a younger tool result is cut to its head and tail (at least
  /// [`MIN_CUT_BUDGET`]).
  pub max_tokens_per_output: usize,
  /// The placeholder; `{age}` (or `{N}`) is replaced by the age in steps, `{tokens}` by the
  /// original content's tokens and `{path}` by the file its call names (empty if none), every
  /// occurrence (see [`crate::strategy::placeholder`]).
  pub placeholder: String,
  /// Tool results with fewer content tokens are never truncated.
  pub small_output_tokens: usize,
  /// The shortest verbatim span, in characters, that counts as quoting or consuming an output.
  pub min_quoted_chars: usize,
  /// Write `max_age + 1` (the age at which a result is first truncated) instead of its
  /// current age into the placeholder and `_truncatedAt`, so that a truncated result reads the
  /// same on every later call. Off by default, as the seed writes the current age.
  pub stable_placeholders: bool,
  /// Keep error reports whole ([`Rule::Error`]). On by default; off, an error report is
  /// truncated and cut like any other output (nanocoder's `preserveErrors: false`).
  pub preserve_errors: bool,
}

impl Default for TruncationConfig {
  fn default() -> Self {
    TruncationConfig {
      max_age: DEFAULT_MAX_AGE,
      max_tokens_per_output: DEFAULT_MAX_TOKENS_PER_OUTPUT,
      placeholder: DEFAULT_PLACEHOLDER.to_string(),
      small_output_tokens: DEFAULT_SMALL_OUTPUT_TOKENS,
      min_quoted_chars: DEFAULT_MIN_QUOTED_CHARS,
      stable_placeholders: false,
      preserve_errors: true,
    }
  }
}

impl TruncationConfig {
  /// Checks the values that have bounds beyond their types.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `maxTokensPerOutput` when it is below [`MIN_CUT_BUDGET`]
  /// (the cut marker would not fit), or `minQuotedChars` when it is 0.
  pub fn validate(&self) -> Result<()> {
    if self.max_tokens_per_output < MIN_CUT_BUDGET {
      return Err(Error::option(
        "maxTokensPerOutput",
        format!(
          "must be an integer of at least {MIN_CUT_BUDGET}, got {}",
          self.max_tokens_per_output
        ),
      ));
    }
    if self.min_quoted_chars == 0 {
      return Err(Error::option("minQuotedChars", "must be an integer of at least 1, got 0"));
    }
    Ok(())
  }

  /// The placeholder for a result `age` steps old whose content had `tokens` tokens (and
  /// about no known file).
  pub fn placeholder_for(&self, age: usize, tokens: usize) -> String {
    PlaceholderTemplate::new(&self.placeholder).render(&PlaceholderFields {
      age,
      tokens,
      path: None,
    })
  }
}

pub use crate::strategy::placeholder::PlaceholderPattern;

/// What happens to one message, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
  /// Not a tool result: never touched.
  NotToolResult,
  /// An error report: kept whole.
  Error,
  /// Under `small_output_tokens`: kept whole.
  Small,
  /// Quoted by a later user message: kept (whole when within `max_tokens_per_output`).
  Quoted,
  /// Consumed by a recent call at a later step: kept (whole when within
  /// `max_tokens_per_output`).
  Consumed,
  /// Older than `max_age`, neither quoted nor consumed: replaced by the placeholder.
  Placeholder,
  /// Longer than `max_tokens_per_output` and not a placeholder: cut to its head and tail.
  Cut,
  /// Young and short enough: kept whole.
  Recent,
}

/// The rule applied to every message of `conv` (one per message, in order). A message answering
/// several calls is read as its first result: [`truncate_old_tool_outputs`] reads a
/// conversation that has such messages result by result, each result a message of its own.
pub fn rules(conv: &Conversation<'_>, config: &TruncationConfig) -> Vec<Rule> {
  let messages = conv.messages();
  let placeholder = PlaceholderPattern::new(&config.placeholder);
  // A placeholder of an earlier pass holds nothing a later message could refer to: probed as
  // empty, it cannot take a reference from an older output (with a `min_quoted_chars` shorter
  // than the placeholder, it would otherwise hold spans of its own).
  let texts: Vec<_> = messages
    .iter()
    .map(|m| match m.is_tool_result() {
      true => Some(m.content_text()).filter(|t| !placeholder.matches(t)).unwrap_or_default(),
      false => Cow::Borrowed(""),
    })
    .collect();
  let mut rules = Vec::with_capacity(conv.len());
  // Tool results that only the reference checks can keep.
  let mut pending = Vec::new();
  for (i, m) in messages.iter().enumerate() {
    let result = result_of(m);
    let rule = if !m.is_tool_result() {
      Rule::NotToolResult
    } else if config.preserve_errors && (result.is_error || memo::is_error_output(result)) {
      Rule::Error
    } else if message_content_tokens(result, conv.encoding()) < config.small_output_tokens {
      Rule::Small
    } else {
      pending.push(i);
      Rule::Recent
    };
    rules.push(rule);
  }
  if pending.is_empty() {
    return rules;
  }
  // Every tool result is probed for the spans of later user messages and of recent calls; its
  // marks (where a span can be found) are memoised in the message.
  let marks: Vec<(usize, Cow<'_, Marks>)> = tool_results(conv)
    .map(|i| match texts[i].is_empty() {
      true => (i, Cow::Owned(Marks::new("", config.min_quoted_chars))),
      false => (i, memo::span_marks(messages[i], config.min_quoted_chars)),
    })
    .collect();
  let probes: Vec<(&str, &Marks)> = marks.iter().map(|(i, m)| (&*texts[*i], &**m)).collect();
  let quoted = quoted_sources(conv, config, &probes);
  let consumed = consumed_sources(conv, config, &probes);
  for i in pending {
    let referenced = if quoted[i] {
      Some(Rule::Quoted)
    } else if consumed[i] {
      Some(Rule::Consumed)
    } else {
      None
    };
    rules[i] = if referenced.is_none() && conv.age(i) > config.max_age {
      Rule::Placeholder
    } else if (conv.shape(i).is_single_result() || conv.shape(i).has_results_apart())
      && message_content_tokens(result_of(messages[i]), conv.encoding())
        > config.max_tokens_per_output
    {
      Rule::Cut
    } else {
      referenced.unwrap_or(Rule::Recent)
    };
  }
  rules
}

/// The result a rule reads of tool result `m`: the message itself, or for a result beside a
/// text block ([`Message::has_results_apart`]) that result alone, which is what is shortened.
fn result_of(m: &Message) -> &Message {
  match m.has_results_apart() {
    true => m.split_results().first().unwrap_or(m),
    false => m,
  }
}

/// Truncates old tool outputs and cuts long recent ones (see the [module docs](self)).
///
/// The plan only keeps or replaces messages: nothing is dropped or moved, so tool calls and
/// results stay paired. A conversation with messages of several results (parallel calls
/// answered in one Anthropic or AI SDK message) is read result by result, as the same results
/// one message each would be (OpenAI): each result gets its own rule, and such a message is
/// replaced result by result.
pub fn truncate_old_tool_outputs(conv: &Conversation<'_>, config: &TruncationConfig) -> Plan {
  truncate_old_tool_outputs_leaving(conv, config, |_| None)
}

/// [`truncate_old_tool_outputs`], leaving whole the results that `whole` flags (`true`) among
/// the messages of the conversation it reads: `conv` itself, or `conv` read result by result
/// when it has messages of several results (so that a flag is a result's, as for the same
/// results one message each). `None` flags nothing.
pub fn truncate_old_tool_outputs_leaving(
  conv: &Conversation<'_>,
  config: &TruncationConfig,
  whole: impl FnOnce(&Conversation<'_>) -> Option<Vec<bool>>,
) -> Plan {
  // The rules of the messages of `read`, those `whole` flags kept.
  let rules_leaving = |read: &Conversation<'_>| {
    let mut rules = rules(read, config);
    for (rule, whole) in rules.iter_mut().zip(whole(read).unwrap_or_default()) {
      if whole && matches!(rule, Rule::Placeholder | Rule::Cut) {
        *rule = Rule::Recent;
      }
    }
    rules
  };
  let mut plan = Plan::keep_all(conv.len());
  let template = PlaceholderTemplate::new(&config.placeholder);
  let several = answering_several(conv);
  if several.is_empty() {
    for (i, rule) in rules_leaving(conv).into_iter().enumerate() {
      if let Some(r) = replacement_of_message(conv, i, rule, config, &template) {
        plan.replace(i, r);
      }
    }
    return plan;
  }
  read_by_result(conv, &several, |split, view| {
    let rules = rules_leaving(split);
    let mut s = 0;
    while let Some((i, result)) = view.origin_of(s) {
      let end = (s..split.len()).find(|&x| view.message_of(x) != Some(i)).unwrap_or(split.len());
      let r = match result {
        None => replacement_of_message(conv, i, rules[s], config, &template),
        Some(_) => {
          let each = (s..end).map(|x| (x, rules[x]));
          replacement_of_results_each(conv, i, split, each, config, &template)
        }
      };
      if let Some(r) = r {
        plan.replace(i, r);
      }
      s = end;
    }
  });
  plan
}

/// What [`truncate_old_tool_outputs`] makes of message `i` of `conv` under `rule`, if anything:
/// its placeholder or its cut ([`shortened`]); of a result beside a text block, that result's,
/// the text block kept.
fn replacement_of_message(
  conv: &Conversation<'_>,
  i: usize,
  rule: Rule,
  config: &TruncationConfig,
  template: &PlaceholderTemplate,
) -> Option<Replacement> {
  let m = conv.message(i);
  let new = shortened(conv, i, rule, config, template)?;
  let meta = shortening_meta(m, std::slice::from_ref(&new));
  Some(match m.has_results_apart() {
    true => replacement_of_results(conv, i, vec![Some((new.text, new.tokens))], meta),
    false => replacement_counted(conv, i, new.text, new.tokens, meta),
  })
}

/// The replacement of message `i` of `conv`, a message of several results, from its results
/// read one message each in `split` (`each`: their indices there with their rules, in order):
/// each result shortened as [`shortened`] says, the others kept. `None` when no result changes.
fn replacement_of_results_each(
  conv: &Conversation<'_>,
  i: usize,
  split: &Conversation<'_>,
  each: impl Iterator<Item = (usize, Rule)>,
  config: &TruncationConfig,
  template: &PlaceholderTemplate,
) -> Option<Replacement> {
  let new: Vec<Option<Shortened>> =
    each.map(|(s, rule)| shortened(split, s, rule, config, template)).collect();
  if new.iter().all(Option::is_none) {
    return None;
  }
  let meta = shortening_meta(conv.message(i), new.iter().flatten());
  let texts = new.into_iter().map(|n| n.map(|n| (n.text, n.tokens))).collect();
  Some(replacement_of_results(conv, i, texts, meta))
}

/// A result's new text under [`Rule::Placeholder`] or [`Rule::Cut`].
struct Shortened {
  text: Arc<str>,
  tokens: usize,
  /// For a cut, the tokens cut; for a placeholder, `None`.
  cut_tokens: Option<usize>,
  /// The age the placeholder names.
  age: usize,
}

/// The new text of the result of tool message `i` of `conv` (a message of the conversation, or
/// of its results read one by one; of a result beside a text block, that result,
/// [`result_of`]) under `rule`: the placeholder ([`Rule::Placeholder`], with the result's age,
/// content tokens and file), or the head and tail ([`Rule::Cut`]); `None` under any other
/// rule, or when no cut is made.
fn shortened(
  conv: &Conversation<'_>,
  i: usize,
  rule: Rule,
  config: &TruncationConfig,
  template: &PlaceholderTemplate,
) -> Option<Shortened> {
  let result = result_of(conv.message(i));
  let encoding = conv.encoding();
  let age = if config.stable_placeholders { config.max_age.saturating_add(1) } else { conv.age(i) };
  match rule {
    Rule::Placeholder => {
      let tokens = message_content_tokens(result, encoding);
      let path = template.uses_path().then(|| result_path(conv, i)).flatten();
      let text = template.render(&PlaceholderFields { age, tokens, path: path.as_deref() });
      let tokens = crate::model::tokens::count_tokens(&text, encoding);
      Some(Shortened { text: Arc::from(text), tokens, cut_tokens: None, age })
    }
    Rule::Cut => {
      let cut = cut_content(result, config.max_tokens_per_output, encoding)?;
      Some(Shortened { text: cut.text, tokens: cut.tokens, cut_tokens: Some(cut.cut_tokens), age })
    }
    Rule::NotToolResult
    | Rule::Error
    | Rule::Small
    | Rule::Quoted
    | Rule::Consumed
    | Rule::Recent => None,
  }
}

/// The metadata of message `m` shortened as `new` says: `_originalLength` (the message's),
/// then `_truncatedAt` when a result became the placeholder and `_cutTokens` (the sum) when one
/// was cut.
fn shortening_meta<'n>(
  m: &Message,
  new: impl IntoIterator<Item = &'n Shortened>,
) -> Vec<(&'static str, MetaValue)> {
  let (mut truncated_at, mut cut_tokens) = (None, None);
  for n in new {
    match n.cut_tokens {
      Some(cut) => *cut_tokens.get_or_insert(0) += cut,
      None => truncated_at = Some(n.age),
    }
  }
  let mut meta = vec![("_originalLength", MetaValue::Number(m.content_utf16_len() as f64))];
  meta.extend(truncated_at.map(|age| ("_truncatedAt", MetaValue::Number(age as f64))));
  meta.extend(cut_tokens.map(|cut| ("_cutTokens", MetaValue::Number(cut as f64))));
  meta
}

/// The file the call answered by tool result `i` names (the first of [`argument_paths`]).
fn result_path(conv: &Conversation<'_>, i: usize) -> Option<String> {
  let arguments: Value = serde_json::from_str(conv.call_arguments(i)?).ok()?;
  argument_paths(&arguments).into_iter().next()
}

/// Which tool results are quoted: for every span of at least `min_quoted_chars` characters of
/// a user message, the latest tool result before it that contains the span.
///
/// `probes` are the tool results' texts and marks, in order.
fn quoted_sources(
  conv: &Conversation<'_>,
  config: &TruncationConfig,
  probes: &[(&str, &Marks)],
) -> Vec<bool> {
  let mut referrers = Referrers::new(config.min_quoted_chars);
  for (i, m) in conv.messages().iter().enumerate() {
    if m.role == Role::User && !m.is_tool_result() {
      referrers.spans.add_marked(m.content_text(), i, memo::span_marks(m, config.min_quoted_chars));
    }
  }
  referrers.probe(probes);
  let outputs =
    tool_results(conv).enumerate().map(|(p, i)| (i, i, referrers.references_in(p, &[]))).collect();
  referrers.sources(conv.len(), outputs)
}

/// Which tool results are consumed: for every span of at least `min_quoted_chars` characters of
/// the argument values of a recent call, and every file path it names, the latest tool result
/// at an earlier step that contains the span, or whose own call named the path.
///
/// `probes` are the tool results' texts and marks, in order.
fn consumed_sources(
  conv: &Conversation<'_>,
  config: &TruncationConfig,
  probes: &[(&str, &Marks)],
) -> Vec<bool> {
  let mut referrers = Referrers::new(config.min_quoted_chars);
  for (i, m) in conv.messages().iter().enumerate() {
    if !m.has_tool_calls() || conv.age(i) > config.max_age {
      continue;
    }
    let step = conv.step(i);
    for call in &m.tool_calls {
      match serde_json::from_str::<Value>(&call.arguments) {
        Ok(args) => {
          for_each_string(&args, &mut |s| referrers.spans.add(s.to_string(), step));
          for path in argument_paths(&args) {
            referrers.add_path(path, step);
          }
        }
        Err(_) => referrers.spans.add(call.arguments.as_str(), step),
      }
    }
  }
  referrers.probe(probes);
  let outputs = tool_results(conv)
    .enumerate()
    .map(|(p, i)| {
      let paths_of = |(caller, c): (usize, usize)| call_paths(conv.message(caller)).get(c);
      let paths = conv.answered_call(i).and_then(paths_of).into_iter().flatten();
      (i, conv.step(i), referrers.references_in(p, paths))
    })
    .collect();
  referrers.sources(conv.len(), outputs)
}

/// The file paths each tool call of `m` names ([`argument_paths`] of its arguments; none when
/// they are not JSON), computed once per message.
fn call_paths(m: &Message) -> &[Vec<String>] {
  m.memo.call_paths.get_or_init(|| {
    m.tool_calls
      .iter()
      .map(|call| {
        serde_json::from_str::<Value>(&call.arguments)
          .map(|args| argument_paths(&args))
          .unwrap_or_default()
      })
      .collect()
  })
}

/// The indices of the tool results.
fn tool_results<'c>(conv: &'c Conversation<'_>) -> impl Iterator<Item = usize> + 'c {
  conv.messages().iter().enumerate().filter(|(_, m)| m.is_tool_result()).map(|(i, _)| i)
}

/// Something a later message refers to: a window of its text (a [`SpanIndex`] id) or a file
/// path it names (an index into [`Referrers::paths`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Reference {
  Span(usize),
  Path(usize),
}

/// What later messages refer to, each reference with the positions (steps, or message
/// indices) of the messages making it.
struct Referrers<'a> {
  spans: SpanIndex<'a>,
  /// The windows the probed tool results share with `spans` ([`Referrers::probe`]).
  found: Matches,
  /// Each path named, with the positions naming it (ascending, no repeats).
  paths: Vec<(String, Vec<usize>)>,
  /// File name -> indices into `paths`.
  by_file_name: BTreeMap<String, Vec<usize>>,
}

impl<'a> Referrers<'a> {
  fn new(min_chars: usize) -> Self {
    Referrers {
      spans: SpanIndex::new(min_chars),
      found: Matches::default(),
      paths: Vec::new(),
      by_file_name: BTreeMap::new(),
    }
  }

  /// Finds the windows the tool results (texts and marks, in order) share with `spans`.
  fn probe(&mut self, probes: &[(&str, &Marks)]) {
    self.found = self.spans.matches(probes);
  }

  fn add_path(&mut self, path: String, position: usize) {
    let ids = self.by_file_name.entry(file_name(&path).to_string()).or_default();
    let id =
      match ids.iter().copied().find(|&id| self.paths.get(id).is_some_and(|(p, _)| *p == path)) {
        Some(id) => id,
        None => {
          ids.push(self.paths.len());
          self.paths.push((path, Vec::new()));
          self.paths.len() - 1
        }
      };
    if let Some((_, positions)) = self.paths.get_mut(id) {
      if let Err(at) = positions.binary_search(&position) {
        positions.insert(at, position);
      }
    }
  }

  /// The positions of the messages making reference `r`, ascending.
  fn positions(&self, r: Reference) -> &[usize] {
    match r {
      Reference::Span(w) => self.found.tags(w),
      Reference::Path(p) => self.paths.get(p).map_or(&[], |(_, ps)| ps.as_slice()),
    }
  }

  /// The references the tool result probed `probe`-th, whose call named `paths`, can be the
  /// source of.
  fn references_in<'p>(
    &self,
    probe: usize,
    paths: impl IntoIterator<Item = &'p String>,
  ) -> Vec<Reference> {
    let mut refs: Vec<Reference> =
      self.found.shared(probe).iter().copied().map(Reference::Span).collect();
    for path in paths {
      let ids = self.by_file_name.get(file_name(path)).map_or(&[][..], Vec::as_slice);
      for &id in ids {
        if self.paths.get(id).is_some_and(|(other, _)| same_path(path, other)) {
          refs.push(Reference::Path(id));
        }
      }
    }
    refs.sort_unstable();
    refs.dedup();
    refs
  }

  /// Marks the sources among `outputs` (message index, position, references): a tool result is
  /// the source of a reference made at position `p` when it is the latest one before `p` to
  /// have it (tool results at the same position share it). Returns one flag per message.
  fn sources(&self, len: usize, mut outputs: Vec<(usize, usize, Vec<Reference>)>) -> Vec<bool> {
    let mut marked = vec![false; len];
    // Latest first; for each reference, the position of the latest tool result having it.
    outputs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut seen_at: HashMap<Reference, usize> = HashMap::new();
    for group in outputs.chunk_by(|a, b| a.1 == b.1) {
      for (i, position, refs) in group {
        let is_source = refs.iter().any(|&r| {
          // Made after this result, and not after a later result that has it too.
          let until = seen_at.get(&r).copied().unwrap_or(usize::MAX);
          let made = self.positions(r);
          made.get(made.partition_point(|&p| p <= *position)).is_some_and(|&p| p <= until)
        });
        if let Some(flag) = marked.get_mut(*i) {
          *flag = is_source;
        }
      }
      for (_, position, refs) in group {
        for &r in refs {
          seen_at.insert(r, *position);
        }
      }
    }
    marked
  }
}

/// Calls `f` on every string value inside `v` (object keys excluded).
fn for_each_string<'v>(v: &'v Value, f: &mut impl FnMut(&'v str)) {
  match v {
    Value::String(s) => f(s),
    Value::Array(items) => items.iter().for_each(|item| for_each_string(item, f)),
    Value::Object(map) => map.values().for_each(|item| for_each_string(item, f)),
    Value::Null | Value::Bool(_) | Value::Number(_) => {}
  }
}

/// The file paths a call's arguments name: the [`PATH_FIELDS`] values, and the file-like words
/// of the [`COMMAND_FIELD`] (see [`command_paths`]), normalised.
pub fn argument_paths(args: &Value) -> Vec<String> {
  let Value::Object(map) = args else { return Vec::new() };
  let mut paths: Vec<String> = PATH_FIELDS
    .iter()
    .filter_map(|f| match map.get(*f) {
      Some(Value::String(s)) => Some(normalize_path(s)),
      _ => None,
    })
    .filter(|p| !p.is_empty())
    .collect();
  if let Some(Value::String(command)) = map.get(COMMAND_FIELD) {
    paths.extend(command_paths(command));
  }
  paths
}

/// The words of a shell command that look like file paths: split on whitespace, quotes and
/// shell punctuation, a word is a file path when its last `/`-segment is `name.ext` (`ext` a
/// letter then up to 9 letters or digits), it is not an option (`-x`), a URL (`://`) nor a
/// glob. `ls -l /workspace/repo` names no file; `python get_seed.py` and
/// `cat src/a.rs:12` name `get_seed.py` and `src/a.rs`.
pub fn command_paths(command: &str) -> Vec<String> {
  command
    .split(|c: char| c.is_whitespace() || "'\"`;|&<>(){}=,@".contains(c))
    .map(|w| w.trim_end_matches([':', ',', '.']))
    .map(|w| w.split(':').next().unwrap_or(w))
    .filter(|w| !w.starts_with('-') && !w.contains("://") && !w.contains(['*', '?', '[', ']', '$']))
    .filter(|w| is_file_name(file_name(w)))
    .map(normalize_path)
    .collect()
}

/// Whether `name` is `stem.ext` with a non-empty stem and `ext` a letter then up to 9 ASCII
/// letters or digits.
fn is_file_name(name: &str) -> bool {
  let Some((stem, ext)) = name.rsplit_once('.') else { return false };
  !stem.is_empty()
    && (1..=10).contains(&ext.len())
    && ext.starts_with(|c: char| c.is_ascii_alphabetic())
    && ext.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The last `/`-segment of a path.
fn file_name(path: &str) -> &str {
  path.rsplit('/').next().unwrap_or(path)
}

/// Trims whitespace and a trailing `/`, and drops leading `./`.
fn normalize_path(path: &str) -> String {
  let mut p = path.trim().trim_end_matches('/');
  while let Some(rest) = p.strip_prefix("./") {
    p = rest;
  }
  p.to_string()
}

/// Whether two normalised paths name the same file: equal, or one is the other's tail after a
/// `/` (a relative path and the absolute one it resolves to).
fn same_path(a: &str, b: &str) -> bool {
  let tail_of = |long: &str, short: &str| {
    long.len() > short.len()
      && long.ends_with(short)
      && long.as_bytes().get(long.len() - short.len() - 1) == Some(&b'/')
  };
  a == b || tail_of(a, b) || tail_of(b, a)
}

/// An argument of the `/rolling-context` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
  /// `on` or `enable`: enable.
  On,
  /// `off` or `disable`: disable.
  Off,
  /// `status`: report without changing anything.
  Status,
  /// `toggle` or no argument: flip.
  Toggle,
}

impl Command {
  /// Parses the argument of `/rolling-context` (surrounding whitespace and case ignored; none
  /// or blank toggles).
  ///
  /// # Errors
  ///
  /// An `InvalidArgument` error naming `arg` for anything else.
  pub fn parse(arg: Option<&str>) -> Result<Command> {
    let arg = arg.map(str::trim).unwrap_or_default();
    Ok(match arg.to_ascii_lowercase().as_str() {
      "" | "toggle" => Command::Toggle,
      "on" | "enable" => Command::On,
      "off" | "disable" => Command::Off,
      "status" => Command::Status,
      _ => {
        return Err(Error::new(
          ErrorKind::InvalidArgument,
          "arg",
          format!(
            "must be on, off, enable, disable, toggle, status or nothing, got {}",
            quote(arg)
          ),
        ))
      }
    })
  }
}

/// The rolling-context toggle of a chat app: whether truncation runs, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollingContext {
  /// Whether [`prepare`](Self::prepare) truncates (off by default, as the seed says).
  pub enabled: bool,
  /// How it truncates.
  pub config: TruncationConfig,
}

impl RollingContext {
  /// The plan for the next request: [`truncate_old_tool_outputs`] when enabled, every message
  /// kept otherwise.
  pub fn prepare(&self, conv: &Conversation<'_>) -> Plan {
    if self.enabled {
      truncate_old_tool_outputs(conv, &self.config)
    } else {
      Plan::keep_all(conv.len())
    }
  }

  /// Runs `/rolling-context [on|off|status]` and returns the status line for the UI.
  ///
  /// # Errors
  ///
  /// An `InvalidArgument` error for an unknown argument (nothing changes).
  pub fn handle_command(&mut self, arg: Option<&str>) -> Result<String> {
    match Command::parse(arg)? {
      Command::On => self.enabled = true,
      Command::Off => self.enabled = false,
      Command::Toggle => self.enabled = !self.enabled,
      Command::Status => {}
    }
    Ok(self.status_line())
  }

  /// nanocoder's reply to `/rolling-context`: `Rolling context enabled.` or
  /// `Rolling context disabled.`
  pub fn command_reply(&self) -> &'static str {
    match self.enabled {
      true => "Rolling context enabled.",
      false => "Rolling context disabled.",
    }
  }

  /// One line saying whether rolling context is on, and with which limits.
  pub fn status_line(&self) -> String {
    if self.enabled {
      format!(
        "Rolling context: on (tool outputs older than {} steps are truncated, longer than {} tokens are cut)",
        self.config.max_age, self.config.max_tokens_per_output
      )
    } else {
      "Rolling context: off (tool outputs are sent in full)".to_string()
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Content, Message, ToolCall};
  use crate::model::tokens::{count_tokens, Encoding};
  use crate::plan::Action;

  const ENC: Encoding = Encoding::O200kBase;

  /// A tool output of about `n` × 8 tokens, unique to `seed` (so no two share a 40-char span).
  fn big(seed: &str, n: usize) -> String {
    (0..n).map(|i| format!("{seed}-{i:04} payload line\n")).collect()
  }

  fn user(text: &str) -> Message {
    Message::text(Role::User, text)
  }

  fn call(id: &str, name: &str, args: &str) -> Message {
    let mut m = Message::text(Role::Assistant, "");
    m.content = Content::Empty;
    m.tool_calls = vec![ToolCall { id: id.into(), name: name.into(), arguments: args.into() }];
    m
  }

  fn result(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Tool, text);
    m.answers = vec![id.to_string()];
    m
  }

  /// A conversation of `steps` steps, step k (1-based) calling `tool` with `args(k)` and getting
  /// `output(k)`.
  fn steps(
    steps: usize,
    args: impl Fn(usize) -> String,
    output: impl Fn(usize) -> String,
  ) -> Vec<Message> {
    let mut msgs = vec![user("do the task")];
    for k in 1..=steps {
      let id = format!("c{k}");
      msgs.push(call(&id, "read_file", &args(k)));
      msgs.push(result(&id, &output(k)));
    }
    msgs
  }

  fn plain(steps_n: usize) -> Vec<Message> {
    steps(steps_n, |k| format!("{{\"path\":\"/src/file{k}.rs\"}}"), |k| big(&format!("out{k}"), 30))
  }

  fn rules_of(msgs: &[Message], config: &TruncationConfig) -> Vec<Rule> {
    rules(&Conversation::new(msgs, ENC), config)
  }

  /// The rules of the tool results only (every second message from index 2).
  fn result_rules(msgs: &[Message], config: &TruncationConfig) -> Vec<Rule> {
    let all = rules_of(msgs, config);
    msgs.iter().zip(all).filter(|(m, _)| m.is_tool_result()).map(|(_, r)| r).collect()
  }

  fn content(plan: &Plan, i: usize) -> Option<&str> {
    match plan.action(i) {
      Action::Replace(r) => Some(&*r.content),
      _ => None,
    }
  }

  /// A long result is cut on its own text: each result of a message of two results (parallel
  /// calls) is cut alone, keeping its own head and tail, and a result beside a text block is cut
  /// with the text block kept as it is.
  #[test]
  fn each_result_is_cut_on_its_own_text() {
    let lines = |p: &str| crate::testing::lines(p, 400);
    let value = serde_json::json!([
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "A", "name": "read_file", "input": {"path": "a.ts"}},
        {"type": "tool_use", "id": "B", "name": "bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "E", "name": "bash", "input": {"command": "pwd"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "A", "content": lines("AAA")},
        {"type": "tool_result", "tool_use_id": "B", "content": lines("BBB")},
        {"type": "tool_result", "tool_use_id": "E", "content": "/w"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "C", "name": "bash", "input": {"command": "make"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "C", "content": lines("CCC")},
        {"type": "text", "text": "a note"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "D", "name": "bash", "input": {"command": "test"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "D", "content": lines("DDD")}]},
      {"role": "assistant", "content": "ok"}
    ]);
    let (_, msgs) = crate::model::format::parse_messages(&value, None).unwrap();
    let conv = Conversation::new(&msgs, ENC);
    let config = TruncationConfig { max_tokens_per_output: 64, ..TruncationConfig::default() };
    let plan = truncate_old_tool_outputs(&conv, &config);
    assert_eq!(plan.replaced(), vec![2, 4, 6]);
    assert!(
      content(&plan, 6).is_some_and(|c| c.starts_with("DDD line 0") && c.ends_with("DDD line 399"))
    );
    let texts = |i: usize| -> Vec<String> {
      let Action::Replace(r) = plan.action(i) else { panic!("{i} is replaced") };
      let after = crate::plan::replaced_message(&msgs[i], r);
      assert_eq!(after.answers, msgs[i].answers);
      assert_eq!(plan.tokens_of(&conv, i), crate::model::tokens::message_tokens(&after, ENC));
      match after.content {
        Content::Parts(parts) => parts
          .into_iter()
          .map(|p| match p {
            crate::model::message::Part::ToolResult { content, .. } => content,
            crate::model::message::Part::Text(t) => format!("text: {t}"),
            other => panic!("{other:?}"),
          })
          .collect(),
        other => panic!("{other:?}"),
      }
    };
    let parallel = texts(2);
    for (text, p) in parallel.iter().zip(["AAA", "BBB"]) {
      assert!(text.starts_with(&format!("{p} line 0")) && text.ends_with(&format!("{p} line 399")));
      assert!(
        text.contains(" tokens cut ") && !text.contains(if p == "AAA" { "BBB" } else { "AAA" })
      );
    }
    assert_eq!(parallel[2], "/w", "a short result beside them is kept");
    let beside = texts(4);
    assert!(beside[0].starts_with("CCC line 0") && beside[0].contains(" tokens cut "));
    assert_eq!(beside[1], "text: a note");
    // Old enough, each long result becomes its own placeholder, naming its own file; the short
    // one stays.
    let config = TruncationConfig {
      max_age: 0,
      placeholder: "[{path} {tokens}]".into(),
      ..TruncationConfig::default()
    };
    let plan = truncate_old_tool_outputs(&conv, &config);
    let Action::Replace(r) = plan.action(2) else { panic!("replaced") };
    let split = msgs[2].split_results();
    let tokens = |k: usize| message_content_tokens(&split[k], ENC);
    assert_eq!(r.result_text(0), Some(format!("[a.ts {}]", tokens(0)).as_str()));
    assert_eq!(r.result_text(1), Some(format!("[ {}]", tokens(1)).as_str()));
    assert_eq!(r.result_text(2), None);
  }

  /// An OpenAI tool message may carry its result as text parts: they are the result, cut as a
  /// string result is.
  #[test]
  fn an_openai_result_of_text_parts_is_cut() {
    let lines = crate::testing::lines("out", 400);
    let value = serde_json::json!([
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "A", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "A", "content": [{"type": "text", "text": lines}]},
      {"role": "assistant", "content": "ok"}
    ]);
    let (_, msgs) = crate::model::format::parse_messages(&value, None).unwrap();
    assert!(msgs[2].is_single_result());
    let conv = Conversation::new(&msgs, ENC);
    let config = TruncationConfig { max_tokens_per_output: 64, ..TruncationConfig::default() };
    let plan = truncate_old_tool_outputs(&conv, &config);
    assert_eq!(plan.replaced(), vec![2]);
    assert!(content(&plan, 2).is_some_and(|c| c.starts_with("out line 0") && c.contains("cut")));
  }

  #[test]
  fn truncates_tool_outputs_older_than_max_age() {
    let msgs = plain(7);
    let conv = Conversation::new(&msgs, ENC);
    let plan = truncate_old_tool_outputs(&conv, &TruncationConfig::default());
    // Step 1 is 6 steps old, step 2 is 5: only step 1 is older than max_age 5.
    assert_eq!(content(&plan, 2), Some("[content truncated - 6 steps ago]"));
    let Action::Replace(r) = plan.action(2) else { panic!("message 2 is replaced") };
    assert_eq!(
      r.meta,
      vec![
        ("_originalLength", MetaValue::Number(msgs[2].content_text().len() as f64)),
        ("_truncatedAt", MetaValue::Number(6.0)),
      ]
    );
    assert_eq!(plan.replaced(), vec![2]);
    assert!(plan.dropped().is_empty());
    assert!(plan.check_units(&conv).is_ok());
    assert!(plan.total_tokens(&conv) < conv.total_tokens());
  }

  #[test]
  fn preserves_recent_tool_outputs() {
    let msgs = plain(6);
    // Step 1 is 5 steps old: not older than max_age 5.
    assert_eq!(result_rules(&msgs, &TruncationConfig::default()), vec![Rule::Recent; 6]);
    let four = TruncationConfig { max_age: 4, ..Default::default() };
    assert_eq!(
      result_rules(&msgs, &four),
      [vec![Rule::Placeholder], vec![Rule::Recent; 5]].concat()
    );
    let zero = TruncationConfig { max_age: 0, ..Default::default() };
    assert_eq!(
      result_rules(&msgs, &zero),
      [vec![Rule::Placeholder; 5], vec![Rule::Recent]].concat()
    );
  }

  #[test]
  fn preserves_errors_regardless_of_age() {
    let mut msgs = plain(10);
    msgs[2].is_error = true;
    msgs[4] = result("c2", &format!("{}Traceback (most recent call last):\n  boom", big("tb", 30)));
    msgs[6] = result("c3", &format!("{}[The command completed with exit code 1.]", big("x", 30)));
    let got = result_rules(&msgs, &TruncationConfig::default());
    assert_eq!(&got[..3], &[Rule::Error; 3]);
    assert_eq!(got[3], Rule::Placeholder);
    // Errors are not cut either, however long.
    let tight = TruncationConfig { max_tokens_per_output: 32, max_age: 100, ..Default::default() };
    assert_eq!(&result_rules(&msgs, &tight)[..3], &[Rule::Error; 3]);
  }

  #[test]
  fn preserves_errors_in_the_middle_of_an_output() {
    // Issue 18: a shell output whose traceback follows `STDERR:`, with more output after it,
    // was replaced by its placeholder six steps later.
    let mut msgs = plain(10);
    let stderr = format!(
      "STDOUT:\n{}STDERR: Traceback (most recent call last):\n  File \"t.py\", line 2\n{}",
      big("out", 30),
      big("more", 30)
    );
    msgs[2] = result("c1", &stderr);
    msgs[4] = result(
      "c2",
      &format!("{}[The command completed with exit code 2.]\n{}", big("a", 30), big("b", 30)),
    );
    let got = result_rules(&msgs, &TruncationConfig::default());
    assert_eq!(&got[..2], &[Rule::Error; 2]);
    assert_eq!(got[2], Rule::Placeholder);
  }

  #[test]
  fn never_truncates_small_outputs() {
    assert_eq!(count_tokens(&" x".repeat(99), ENC), 99);
    assert_eq!(count_tokens(&" y".repeat(100), ENC), 100);
    let msgs = steps(7, |_| "{}".into(), |_| " x".repeat(99));
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Small);
    let msgs = steps(7, |_| "{}".into(), |_| " y".repeat(100));
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Placeholder);
    let higher = TruncationConfig { small_output_tokens: 101, ..Default::default() };
    assert_eq!(result_rules(&msgs, &higher)[0], Rule::Small);
    // Small wins over the cap too.
    let capped = TruncationConfig { max_tokens_per_output: 32, max_age: 100, ..Default::default() };
    assert_eq!(
      result_rules(&steps(1, |_| "{}".into(), |_| " z".repeat(90)), &capped),
      [Rule::Small]
    );
  }

  #[test]
  fn keeps_an_old_output_whose_span_a_recent_call_consumes() {
    let quoted = "fn parse_pattern(&mut self) -> Result<Pattern> {"; // 49 chars
    let mut msgs = plain(8);
    msgs[2] = result("c1", &format!("{}{quoted}\n{}", big("a", 15), big("b", 15)));
    // Step 8 (recent) edits with an old_str copied from step 1's output.
    let args =
      serde_json::json!({"path": "/other.rs", "old_str": format!("  {quoted}  "), "new_str": "x"});
    msgs[15] = call("c8", "str_replace", &args.to_string());
    let config = TruncationConfig::default();
    assert_eq!(result_rules(&msgs, &config)[0], Rule::Consumed);
    // 39 characters are not a substantial span.
    let short = &quoted[..39];
    msgs[15] = call("c8", "str_replace", &serde_json::json!({"old_str": short}).to_string());
    assert_eq!(result_rules(&msgs, &config)[0], Rule::Placeholder);
    let shorter = TruncationConfig { min_quoted_chars: 39, ..Default::default() };
    assert_eq!(result_rules(&msgs, &shorter)[0], Rule::Consumed);
  }

  #[test]
  fn the_consuming_call_must_be_recent_and_later() {
    let quoted = "a span of more than forty characters, copied verbatim";
    let mut msgs = plain(9);
    msgs[4] = result("c2", &format!("{}{quoted}", big("a", 30)));
    let args = serde_json::json!({"text": quoted}).to_string();
    // Step 3 consumes it, but step 3 is 6 steps old when there are 9 steps.
    msgs[5] = call("c3", "write", &args);
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[1], Rule::Placeholder);
    // Still recent with max_age 6: kept while the call is recent (and step 2 is 7 old).
    let wider = TruncationConfig { max_age: 6, ..Default::default() };
    assert_eq!(result_rules(&msgs, &wider)[1], Rule::Consumed);
    // The output's own call (same step) does not consume it.
    let own = steps(2, |_| args.clone(), |_| format!("{}{quoted}", big("a", 30)));
    assert_eq!(result_rules(&own, &TruncationConfig::default()), [Rule::Consumed, Rule::Recent]);
  }

  #[test]
  fn keeps_an_old_output_whose_file_a_recent_call_names() {
    let mut msgs = plain(8);
    // Step 1 viewed /repo/src/parser.c; step 8 (recent) edits src/parser.c by a relative path.
    msgs[1] = call("c1", "view", r#"{"command":"view","path":"/repo/src/parser.c"}"#);
    msgs[15] = call("c8", "edit", r#"{"command":"str_replace","file_path":"./src/parser.c"}"#);
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Consumed);
    // A shell command naming the file counts too.
    msgs[15] = call("c8", "bash", r#"{"command":"gcc -c /repo/src/parser.c -o parser.o"}"#);
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Consumed);
    // Another file of the same name elsewhere does not.
    msgs[15] = call("c8", "edit", r#"{"path":"/repo/lib/parser.c"}"#);
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Placeholder);
    // Nor does a directory listing of the same directory.
    msgs[1] = call("c1", "bash", r#"{"command":"ls -l /repo/src"}"#);
    msgs[15] = call("c8", "bash", r#"{"command":"cd /repo/src && make"}"#);
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Placeholder);
  }

  #[test]
  fn keeps_an_old_output_a_later_user_message_quotes() {
    let quoted = "thread 'main' overflowed its stack while parsing the tuple";
    let mut msgs = plain(8);
    msgs[2] = result("c1", &format!("{}{quoted}\n{}", big("a", 15), big("b", 15)));
    msgs.push(user(&format!("Why does it say \"{quoted}\"?")));
    assert_eq!(result_rules(&msgs, &TruncationConfig::default())[0], Rule::Quoted);
    // A user message before the output is not a quote of it.
    let mut before = plain(8);
    before[0] = user(&format!("I expect \"{quoted}\""));
    before[2] = msgs[2].clone();
    assert_eq!(result_rules(&before, &TruncationConfig::default())[0], Rule::Placeholder);
  }

  #[test]
  fn cuts_recent_outputs_longer_than_max_tokens_per_output() {
    let long = big("long", 600); // ~ 6,000 tokens
    let msgs = steps(2, |_| "{}".into(), |k| if k == 2 { long.clone() } else { big("s", 20) });
    let conv = Conversation::new(&msgs, ENC);
    let config = TruncationConfig::default();
    assert_eq!(result_rules(&msgs, &config), vec![Rule::Recent, Rule::Cut]);
    let plan = truncate_old_tool_outputs(&conv, &config);
    let cut = content(&plan, 4).unwrap();
    assert!(count_tokens(cut, ENC) <= 2000, "{} tokens", count_tokens(cut, ENC));
    assert!(
      cut.starts_with("long-0000 payload line\n") && cut.ends_with("long-0599 payload line\n")
    );
    assert!(cut.contains(" tokens cut ...]"));
    let Action::Replace(r) = plan.action(4) else { panic!("message 4 is replaced") };
    assert_eq!(r.meta[0], ("_originalLength", MetaValue::Number(long.len() as f64)));
    assert_eq!(r.meta[1].0, "_cutTokens");
    assert_eq!(r.tokens, plan.tokens_of(&conv, 4));
    // Older than max_age it is a placeholder, not a cut.
    let old = TruncationConfig { max_age: 0, ..Default::default() };
    assert_eq!(result_rules(&msgs, &old), vec![Rule::Placeholder, Rule::Cut]);
    let capped = truncate_old_tool_outputs(&conv, &old);
    assert_eq!(content(&capped, 2), Some("[content truncated - 1 steps ago]"));
    let tight = TruncationConfig { max_tokens_per_output: 100, ..Default::default() };
    let plan = truncate_old_tool_outputs(&conv, &tight);
    assert!(count_tokens(content(&plan, 4).unwrap(), ENC) <= 100);
  }

  #[test]
  fn placeholder_fills_every_age_and_tokens_field() {
    let c =
      TruncationConfig { placeholder: "{age}/{N}/{age} {tokens}t".into(), ..Default::default() };
    assert_eq!(c.placeholder_for(7, 1234), "7/7/7 1234t");
    let msgs = plain(7);
    let conv = Conversation::new(&msgs, ENC);
    let plan = truncate_old_tool_outputs(&conv, &c);
    let tokens = count_tokens(&msgs[2].content_text(), ENC);
    assert_eq!(content(&plan, 2), Some(format!("6/6/6 {tokens}t").as_str()));
  }

  #[test]
  fn stable_placeholders_read_the_same_on_every_later_call() {
    let stable = TruncationConfig { stable_placeholders: true, ..Default::default() };
    let texts = |msgs: &[Message], config: &TruncationConfig| {
      let plan = truncate_old_tool_outputs(&Conversation::new(msgs, ENC), config);
      let Action::Replace(r) = plan.action(2) else { panic!("message 2 is replaced") };
      (r.content.to_string(), r.meta[1].clone())
    };
    let at = |steps_n: usize| {
      let msgs = plain(steps_n);
      (texts(&msgs, &stable), texts(&msgs, &TruncationConfig::default()))
    };
    // Step 1 is first truncated at 7 steps (age 6): both read "6 steps ago" then.
    let (first, seed) = at(7);
    assert_eq!(first.0, "[content truncated - 6 steps ago]");
    assert_eq!(first, seed);
    // Later, the seed's text ages; the stable one does not.
    for n in [8, 12] {
      let (later, seed) = at(n);
      assert_eq!(later, first);
      assert_eq!(seed.0, format!("[content truncated - {} steps ago]", n - 1));
      assert_eq!(seed.1, ("_truncatedAt", MetaValue::Number((n - 1) as f64)));
    }
  }

  #[test]
  fn original_length_counts_utf16_code_units() {
    assert_eq!(Message::text(Role::Tool, "a🚀é").content_utf16_len(), 4);
    let mut msgs = plain(7);
    msgs[2] = result("c1", &"東京🚀 ".repeat(100));
    let plan = truncate_old_tool_outputs(&Conversation::new(&msgs, ENC), &Default::default());
    let Action::Replace(r) = plan.action(2) else { panic!("message 2 is replaced") };
    assert_eq!(r.meta[0], ("_originalLength", MetaValue::Number(500.0)));
  }

  #[test]
  fn non_tool_messages_and_parallel_results_keep_their_pairing() {
    let mut msgs = vec![user(&big("u", 40))];
    let mut parallel = call("a", "x", "{}");
    parallel.tool_calls.push(ToolCall { id: "b".into(), name: "y".into(), arguments: "{}".into() });
    msgs.push(parallel);
    msgs.push(result("a", &big("ra", 30)));
    msgs.push(result("b", &big("rb", 30)));
    msgs.extend(plain(6).into_iter().skip(1));
    let conv = Conversation::new(&msgs, ENC);
    let got = rules(&conv, &TruncationConfig::default());
    assert_eq!(
      &got[..4],
      &[Rule::NotToolResult, Rule::NotToolResult, Rule::Placeholder, Rule::Placeholder]
    );
    let plan = truncate_old_tool_outputs(&conv, &TruncationConfig::default());
    assert!(plan.dropped().is_empty() && plan.check_units(&conv).is_ok());
    assert_eq!(plan, truncate_old_tool_outputs(&conv, &TruncationConfig::default()));
  }

  #[test]
  fn only_the_latest_source_of_a_reference_is_kept() {
    // Steps 1 and 2 both viewed /a.c; step 9 (recent) edits it: it took its text from step 2.
    let mut msgs = plain(9);
    msgs[1] = call("c1", "view", r#"{"path":"/a.c"}"#);
    msgs[3] = call("c2", "view", r#"{"path":"/a.c"}"#);
    msgs[17] = call("c9", "edit", r#"{"path":"/a.c"}"#);
    assert_eq!(
      &result_rules(&msgs, &TruncationConfig::default())[..2],
      &[Rule::Placeholder, Rule::Consumed]
    );
    // The same with a span both outputs contain; a span only step 1 has keeps step 1 too.
    let shared = "the same forty-odd characters in both outputs";
    let own = "a span that only the first of the two outputs holds";
    let mut msgs = plain(9);
    msgs[2] = result("c1", &format!("{}{shared}\n{own}", big("a", 30)));
    msgs[4] = result("c2", &format!("{}{shared}", big("b", 30)));
    msgs[17] = call("c9", "edit", &serde_json::json!({"old_str": shared}).to_string());
    assert_eq!(
      &result_rules(&msgs, &TruncationConfig::default())[..2],
      &[Rule::Placeholder, Rule::Consumed]
    );
    msgs[17] =
      call("c9", "edit", &serde_json::json!({"old_str": shared, "new_str": own}).to_string());
    assert_eq!(
      &result_rules(&msgs, &TruncationConfig::default())[..2],
      &[Rule::Consumed, Rule::Consumed]
    );
    // A user quote is kept in the latest result before the user message only.
    let mut msgs = plain(9);
    msgs[2] = result("c1", &format!("{}{shared}", big("a", 30)));
    msgs[4] = result("c2", &format!("{}{shared}", big("b", 30)));
    msgs.push(user(shared));
    assert_eq!(
      &result_rules(&msgs, &TruncationConfig::default())[..2],
      &[Rule::Placeholder, Rule::Quoted]
    );
  }

  #[test]
  fn parallel_results_at_the_same_step_are_all_sources() {
    let mut msgs = vec![user("task")];
    let mut parallel = call("a", "view", r#"{"path":"/x.c"}"#);
    parallel.tool_calls.push(ToolCall {
      id: "b".into(),
      name: "view".into(),
      arguments: r#"{"path":"/x.c"}"#.into(),
    });
    msgs.extend([parallel, result("a", &big("ra", 30)), result("b", &big("rb", 30))]);
    msgs.extend(plain(6).into_iter().skip(1));
    let last = msgs.len() - 2;
    msgs[last] = call("c6", "edit", r#"{"path":"x.c"}"#);
    assert_eq!(
      &rules_of(&msgs, &TruncationConfig::default())[2..4],
      &[Rule::Consumed, Rule::Consumed]
    );
  }

  #[test]
  fn quoted_and_consumed_outputs_are_kept_but_still_capped() {
    let quoted = "a span of more than forty characters, copied verbatim";
    let mut msgs = plain(8);
    msgs[2] = result("c1", &format!("{quoted}\n{}", big("a", 600)));
    msgs.push(user(quoted));
    let conv = Conversation::new(&msgs, ENC);
    let config = TruncationConfig::default();
    assert_eq!(result_rules(&msgs, &config)[0], Rule::Cut);
    let plan = truncate_old_tool_outputs(&conv, &config);
    let cut = content(&plan, 2).unwrap();
    assert!(cut.starts_with(quoted) && count_tokens(cut, ENC) <= 2000);
    let roomy = TruncationConfig { max_tokens_per_output: 10_000, ..Default::default() };
    assert_eq!(result_rules(&msgs, &roomy)[0], Rule::Quoted);
  }

  #[test]
  fn a_cut_that_removes_the_quoted_span_is_truncated_on_a_second_run() {
    // The quoted span sits in the middle of a long old output: the output is kept for the
    // quote, but cut to its head and tail, which drops the span. Truncating that output again,
    // it is no longer quoted, so it becomes the placeholder: the one case where truncating the
    // output again changes it (docs/robustness.md).
    let quoted = "a span of more than forty characters, copied verbatim";
    let mut msgs = plain(8);
    msgs[2] = result("c1", &format!("{}{quoted}\n{}", big("a", 600), big("b", 600)));
    msgs.push(user(quoted));
    let config = TruncationConfig::default();
    assert_eq!(result_rules(&msgs, &config)[0], Rule::Cut);
    let conv = Conversation::new(&msgs, ENC);
    let once = truncate_old_tool_outputs(&conv, &config).apply(
      &msgs,
      |m, r| Message { content: Content::Text(r.content.to_string()), ..m.clone() },
      |_| unreachable!("truncation inserts nothing"),
    );
    assert!(!once[2].content_text().contains(quoted));
    assert_eq!(result_rules(&once, &config)[0], Rule::Placeholder);
    // Every other output is as the first run left it.
    let again = truncate_old_tool_outputs(&Conversation::new(&once, ENC), &config);
    let changed: Vec<usize> = (0..once.len())
      .filter(|&i| content(&again, i).is_some_and(|c| c != once[i].content_text()))
      .collect();
    assert_eq!(changed, vec![2]);
  }

  #[test]
  fn a_placeholder_of_an_earlier_pass_takes_no_reference() {
    // Step 4's call shares " steps ago" (10 characters) with step 1's output, which is kept for
    // it; step 2's output becomes "[content truncated - 2 steps ago]", which holds the span
    // too. Truncating the output again, that placeholder must not count as the latest output
    // the call consumed: step 1's output stays.
    let mut msgs = steps(
      4,
      |k| {
        serde_json::json!({"path": format!("/src/file{k}.rs"), "note": "two steps ago"}).to_string()
      },
      |k| big(&format!("out{k}"), 30),
    );
    msgs[2] = result("c1", &format!("noted three steps ago\n{}", big("a", 30)));
    let config = TruncationConfig { max_age: 1, min_quoted_chars: 10, ..Default::default() };
    assert_eq!(result_rules(&msgs, &config)[..2], [Rule::Consumed, Rule::Placeholder]);
    let once = truncate_old_tool_outputs(&Conversation::new(&msgs, ENC), &config).apply(
      &msgs,
      |m, r| Message { content: Content::Text(r.content.to_string()), ..m.clone() },
      |_| unreachable!("truncation inserts nothing"),
    );
    assert_eq!(once[4].content_text(), "[content truncated - 2 steps ago]");
    // The placeholder itself is small now.
    assert_eq!(result_rules(&once, &config)[..2], [Rule::Consumed, Rule::Small]);
  }

  #[test]
  fn placeholders_are_recognised_from_the_template() {
    let config = TruncationConfig::default();
    let pattern = |c: &TruncationConfig| PlaceholderPattern::new(&c.placeholder);
    assert!(pattern(&config).matches("[content truncated - 2 steps ago]"));
    assert!(pattern(&config).matches(&config.placeholder_for(123, 9)));
    for not in [
      "[content truncated -  steps ago]",
      "[content truncated - x steps ago]",
      "",
      "[content truncated - 2 steps ago] ",
    ] {
      assert!(!pattern(&config).matches(not), "{not:?}");
    }
    let adjacent =
      TruncationConfig { placeholder: "<{age}{tokens}0>".into(), ..Default::default() };
    assert!(
      pattern(&adjacent).matches("<120>")
        && pattern(&adjacent).matches(&adjacent.placeholder_for(4, 56))
    );
    assert!(!pattern(&adjacent).matches("<10>") && !pattern(&adjacent).matches("<12>"));
    let fixed = TruncationConfig { placeholder: "[gone]".into(), ..Default::default() };
    assert!(pattern(&fixed).matches("[gone]") && !pattern(&fixed).matches("[gone]!"));
    // A long output is not a placeholder, whatever it holds.
    assert!(
      !pattern(&config).matches(&format!("[content truncated - {} steps ago]", "9".repeat(40)))
    );
  }

  #[test]
  fn command_words_that_name_files() {
    for (command, expected) in [
      ("ls -l /workspace/ponylang__ponyc__0.1", vec![]),
      ("python get_seed.py", vec!["get_seed.py"]),
      ("cat ./src/a.rs:12 | grep x", vec!["src/a.rs"]),
      (
        "echo 'int main(){}' > /workspace/test.c && gcc test.c",
        vec!["/workspace/test.c", "test.c"],
      ),
      ("curl -F \"file=@printenv.pl\" http://host/cgi-bin/file.pl?x", vec!["printenv.pl"]),
      ("find . -name '*.py'", vec![]),
      ("make -j4 --file=build.mk", vec!["build.mk"]),
    ] {
      assert_eq!(command_paths(command), expected, "{command}");
    }
    assert!(same_path("/repo/src/a.rs", "src/a.rs") && same_path("a.rs", "a.rs"));
    assert!(!same_path("/repo/xa.rs", "a.rs"));
    let args = serde_json::json!({"path": " ./a/b.txt/ ", "file": "", "command": "view c.md"});
    assert_eq!(argument_paths(&args), vec!["a/b.txt", "c.md"]);
  }

  #[test]
  fn config_bounds() {
    assert!(TruncationConfig::default().validate().is_ok());
    let low = TruncationConfig { max_tokens_per_output: 31, ..Default::default() };
    assert_eq!(
      low.validate().unwrap_err().to_string(),
      "maxTokensPerOutput: must be an integer of at least 32, got 31"
    );
    let zero = TruncationConfig { min_quoted_chars: 0, ..Default::default() };
    assert_eq!(
      zero.validate().unwrap_err().to_string(),
      "minQuotedChars: must be an integer of at least 1, got 0"
    );
  }

  #[test]
  fn the_toggle_is_off_by_default_and_follows_the_command() {
    let mut ctx = RollingContext::default();
    assert!(!ctx.enabled);
    let msgs = plain(7);
    let conv = Conversation::new(&msgs, ENC);
    assert!(ctx.prepare(&conv).is_identity());
    let on = "Rolling context: on (tool outputs older than 5 steps are truncated, longer than 2000 tokens are cut)";
    let off = "Rolling context: off (tool outputs are sent in full)";
    assert_eq!(ctx.handle_command(Some("on")).unwrap(), on);
    assert_eq!(ctx.prepare(&conv).replaced(), vec![2]);
    assert_eq!(ctx.handle_command(Some(" STATUS ")).unwrap(), on);
    assert_eq!(ctx.handle_command(None).unwrap(), off);
    assert!(!ctx.enabled);
    assert_eq!(ctx.handle_command(Some("")).unwrap(), on);
    assert_eq!(ctx.handle_command(Some("off")).unwrap(), off);
    let err = ctx.handle_command(Some("maybe")).unwrap_err();
    assert_eq!(
      err.to_string(),
      "arg: must be on, off, enable, disable, toggle, status or nothing, got \"maybe\""
    );
    assert_eq!(ctx.handle_command(Some("Enable")).unwrap(), on);
    assert_eq!(ctx.handle_command(Some("toggle")).unwrap(), off);
    assert_eq!(ctx.handle_command(Some("disable")).unwrap(), off);
    assert!(!ctx.enabled);
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    assert!(!ctx.enabled);
  }
}
