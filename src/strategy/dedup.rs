//! Deduplicating superseded tool results (seed 003, the ai-experiments deduplicators): the
//! strategy. What supersedes what is [`crate::analysis::supersession`].
//!
//! An agent reads the same file again, lists the same directory again: the older result is then
//! stale or redundant. [`deduplicate`] replaces each such result with a short placeholder naming
//! what superseded it (`[superseded by a newer read of src/a.ts at step 12]`), in place, so every
//! tool call keeps its result and nothing moves. Two deduplicators decide what supersedes what:
//!
//! - [`IoContentDeduplicator`](crate::analysis::supersession::IoContentDeduplicator), for files. A result is a *file access* with a path and a
//!   [`Coverage`](crate::analysis::supersession::Coverage). A newer **read** or **full write** of the same path supersedes an older read,
//!   write or edit whose coverage it contains; a **partial update** (edit, `str_replace`,
//!   `insert`) supersedes only when its result returns the whole file (see [`Coverage`](crate::analysis::supersession::Coverage)).
//! - [`SurveyDirectoryDeduplicator`](crate::analysis::supersession::SurveyDirectoryDeduplicator), for directory listings. A newer listing of the same
//!   location supersedes an older one when it is at least as inclusive: it is at least as deep
//!   (recursive if the older one was), its exclusion filters are a subset of the older one's, and
//!   (shell `ls`) it shows at least the same details.
//!
//! Each superseded result points at the **first** later result that supersedes it, the one that
//! made it stale, so its placeholder's text never changes as the conversation grows and a
//! provider's prompt cache keeps it (naming the newest instead rewrote every older placeholder
//! of a file each time the file was read again). The result it names may be superseded in turn
//! by a later one, whose placeholder names the next. Failed operations (flagged `is_error`, or reporting failure, see
//! [`crate::analysis::file_ops::reports_failure`]) neither supersede nor are superseded: they record what
//! did not work. A message carrying several tool results (parallel results in one Anthropic or
//! AI SDK message) is read as its results one message each
//! ([`crate::analysis::supersession::superseded_by_result`]) and replaced result by result. A
//! placeholder that would not be smaller than the result is not made.
//!
//! Rewriting history costs the provider's prompt cache (seed 003's trade-off): with
//! [`DedupOptions::threshold_tokens`] nothing is rewritten until the request reaches that size.

use std::collections::BTreeMap;

use std::sync::Arc;

use crate::analysis::growing::GrowingAnalysis;
use crate::analysis::supersession::{
  answering_several, deduplicators_find, found_by_result, Found, ResultFound, ToolNames,
  PLACEHOLDER_PREFIX,
};
use crate::error::{js_number, Error, Result};
use crate::model::conversation::Conversation;
use crate::model::tokens::{count_tokens, message_content_tokens};
use crate::plan::{replacement, replacement_of_results, MetaValue, Plan, Replacement};
use crate::strategy::Tally;

/// The default `deduplicationThreshold`: deduplicate once the request reaches 75% of the
/// context window (seed 003's `deduplication_threshold`).
pub const DEFAULT_DEDUPLICATION_THRESHOLD: f64 = 0.75;
/// Options of [`deduplicate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupOptions {
  /// Deduplicate only when the request has at least this many tokens; `None`: always.
  pub threshold_tokens: Option<usize>,
  /// Run the [`IoContentDeduplicator`](crate::analysis::supersession::IoContentDeduplicator).
  pub io_content: bool,
  /// Run the [`SurveyDirectoryDeduplicator`](crate::analysis::supersession::SurveyDirectoryDeduplicator).
  pub survey_directory: bool,
  /// The tools and argument keys recognised.
  pub tools: ToolNames,
}

impl Default for DedupOptions {
  fn default() -> Self {
    DedupOptions {
      threshold_tokens: None,
      io_content: true,
      survey_directory: true,
      tools: ToolNames::default(),
    }
  }
}

impl DedupOptions {
  /// The token threshold from a context window and a fraction of it (default
  /// [`DEFAULT_DEDUPLICATION_THRESHOLD`]): `None` (always deduplicate) when the fraction is 0,
  /// else the fraction of the window, rounded up.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `deduplicationThreshold` when the fraction is not a number
  /// from 0 to 1, or `contextWindow` when it is missing while the fraction is above 0.
  pub fn threshold_from(
    context_window: Option<usize>,
    fraction: Option<f64>,
  ) -> Result<Option<usize>> {
    let fraction = fraction.unwrap_or(DEFAULT_DEDUPLICATION_THRESHOLD);
    if !(0.0..=1.0).contains(&fraction) {
      return Err(Error::option(
        "deduplicationThreshold",
        format!("must be a number from 0 to 1, got {}", js_number(fraction)),
      ));
    }
    if fraction == 0.0 {
      return Ok(None);
    }
    match context_window {
      Some(window) => Ok(Some((window as f64 * fraction).ceil() as usize)),
      None => Err(Error::option(
        "contextWindow",
        format!(
          "is required: deduplication only runs once the request reaches deduplicationThreshold \
           ({}) of it; pass deduplicationThreshold: 0 to deduplicate at any size",
          js_number(fraction)
        ),
      )),
    }
  }
}

/// One superseded result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Supersession {
  /// The superseded tool result (replaced by a placeholder).
  pub index: usize,
  /// The first later tool result that supersedes it (superseded in turn when a still later
  /// result supersedes it).
  pub superseded_by: usize,
  /// The path or location both are about.
  pub path: String,
  /// What the superseding result is: `read`, `write`, `edit` or `listing`.
  pub noun: &'static str,
  /// The step of the superseding result.
  pub step: usize,
  /// The tokens the placeholder saves.
  pub saved_tokens: usize,
  /// The id of the call the superseded result answers.
  pub call_id: Option<String>,
  /// The id of the call the superseding result answers.
  pub by_call_id: Option<String>,
}

/// What [`deduplicate`] decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Dedup {
  /// The decisions: superseded results replaced, everything else kept.
  pub plan: Plan,
  /// Whether the request reached the threshold (nothing is rewritten otherwise).
  pub applied: bool,
  /// The superseded results, by index.
  pub superseded: Vec<Supersession>,
  /// The request's tokens before minus after.
  pub saved_tokens: usize,
  /// The request's tokens after.
  pub total_tokens: usize,
}

/// Replaces every superseded tool result of `conv` with a placeholder naming what superseded it
/// (see the module docs), when the request reaches `options.threshold_tokens`.
pub fn deduplicate(conv: &Conversation<'_>, options: &DedupOptions) -> Dedup {
  let total = conv.total_tokens();
  let mut plan = Plan::keep_all(conv.len());
  if options.threshold_tokens.is_some_and(|t| total < t) {
    return Dedup {
      plan,
      applied: false,
      superseded: Vec::new(),
      saved_tokens: 0,
      total_tokens: total,
    };
  }
  let several = answering_several(conv);
  let (io, survey) = (options.io_content, options.survey_directory);
  let pairs: Vec<ResultFound> = match GrowingAnalysis::supersessions(conv) {
    _ if !several.is_empty() => found_by_result(conv, &several, &options.tools, io, survey),
    Some(known) if known.tools == options.tools => {
      known.pairs(io, survey).into_iter().map(ResultFound::whole).collect()
    }
    _ => deduplicators_find(conv, &options.tools, io, survey)
      .into_iter()
      .map(ResultFound::whole)
      .collect(),
  };
  let mut tally = Tally::keep_all(conv);
  let mut superseded = Vec::new();
  // The id of the call answered by result `k` of message `i` (the message's first when read
  // whole).
  let call_id = |i: usize, k: Option<usize>| -> Option<String> {
    let m = conv.message(i);
    match k {
      Some(k) => m.split_results().get(k)?.answers.first().cloned(),
      None => m.answers.first().cloned(),
    }
  };
  for found in pairs.chunk_by(|a, b| a.found.index == b.found.index) {
    let i = found[0].found.index;
    let Some((r, used)) = superseded_replacement(conv, i, found) else { continue };
    tally.replace(conv, &mut plan, i, r);
    superseded.extend(used.into_iter().map(|(f, saved_tokens)| Supersession {
      index: i,
      superseded_by: f.found.by,
      path: f.found.path.clone(),
      noun: f.found.noun,
      step: conv.step(f.found.by),
      saved_tokens,
      call_id: call_id(i, f.result),
      by_call_id: call_id(f.found.by, f.by_result),
    }));
  }
  let total_tokens = tally.total();
  debug_assert_eq!(total_tokens, plan.total_tokens(conv));
  Dedup { plan, applied: true, superseded, saved_tokens: total - total_tokens, total_tokens }
}

/// What replaces message `i` for its findings `found` (each about message `i`, in order, with
/// its result's place when the message was read result by result), with the findings used and
/// the tokens each saves: a message read whole takes the placeholder of its first finding that
/// is smaller than it (one deduplicator per message: a result is a file or a listing, never
/// both); a message of several results has each result with a finding replaced by the
/// placeholder of its first one that is smaller than that result, the others kept
/// (`_supersededBy` names the latest message among those superseding its results). `None` when nothing is replaced.
fn superseded_replacement<'f>(
  conv: &Conversation<'_>,
  i: usize,
  found: &'f [ResultFound],
) -> Option<(Replacement, Vec<(&'f ResultFound, usize)>)> {
  if found.iter().all(|f| f.result.is_none()) {
    return found.iter().find_map(|f| {
      let r = whole_placeholder(conv, i, &f.found)?;
      let saved = conv.tokens(i) - r.tokens;
      Some((r, vec![(f, saved)]))
    });
  }
  let encoding = conv.encoding();
  let results = conv.message(i).split_results();
  let mut new = vec![None; results.len()];
  let mut used = Vec::new();
  for (k, f) in found.iter().filter_map(|f| Some((f.result?, f))) {
    let Some(result) = results.get(k).filter(|_| new[k].is_none()) else { continue };
    let old = message_content_tokens(result, encoding);
    if !worth_replacing(conv, old, &f.found) {
      continue;
    }
    let placeholder = placeholder_text(conv, &f.found);
    let tokens = count_tokens(&placeholder, encoding);
    if tokens < old {
      new[k] = Some((Arc::from(placeholder), tokens));
      used.push((f, old - tokens));
    }
  }
  let by = used.iter().map(|(f, _)| f.found.by).max()?;
  Some((replacement_of_results(conv, i, new, placeholder_meta(conv, i, by)), used))
}

/// The placeholder of message `i` read whole, superseded as `found` says, when it is smaller
/// than the message.
fn whole_placeholder(conv: &Conversation<'_>, i: usize, found: &Found) -> Option<Replacement> {
  if !worth_replacing(conv, message_content_tokens(conv.message(i), conv.encoding()), found) {
    return None;
  }
  let r = replacement(conv, i, placeholder_text(conv, found), placeholder_meta(conv, i, found.by));
  (r.tokens < conv.tokens(i)).then_some(r)
}

/// Whether a result of `tokens` tokens is larger than any placeholder of its path, whichever
/// result supersedes it ([`largest_placeholder`]): a smaller result is never replaced, so that
/// whether a result is replaced does not depend on which result supersedes it. Otherwise,
/// deduplicating the output again could replace a result left whole, its first superseding
/// result now a placeholder and the next one at a step with fewer digits (the fuzzer found it).
fn worth_replacing(conv: &Conversation<'_>, tokens: usize, found: &Found) -> bool {
  let largest = largest_placeholder(&found.path);
  // A text has at most as many tokens as bytes: a larger result needs no count.
  largest.len() < tokens || count_tokens(&largest, conv.encoding()) < tokens
}

/// A placeholder of `path` as large as any can be: the longest noun, a step of ten digits.
fn largest_placeholder(path: &str) -> String {
  format!("{PLACEHOLDER_PREFIX}listing of {path} at step 9999999999]")
}

/// `[superseded by a newer read of P at step N]`.
fn placeholder_text(conv: &Conversation<'_>, found: &Found) -> String {
  format!("{PLACEHOLDER_PREFIX}{} of {} at step {}]", found.noun, found.path, conv.step(found.by))
}

/// A placeholder's metadata: `_superseded`, `_supersededBy` (message `by`), `_originalTokens`
/// (message `i`'s).
fn placeholder_meta(
  conv: &Conversation<'_>,
  i: usize,
  by: usize,
) -> Vec<(&'static str, MetaValue)> {
  vec![
    ("_superseded", MetaValue::Bool(true)),
    ("_supersededBy", MetaValue::Number(by as f64)),
    ("_originalTokens", MetaValue::Number(conv.tokens(i) as f64)),
  ]
}

/// Where the supersessions a conversation carries were when a [`deduplicate`] plan was made
/// ([`revision`]): those of its messages, or, once it has messages of several results, those of
/// its split view (read result by result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
  /// [`crate::analysis::supersession::Supersessions::revision`] of the conversation's own.
  Messages(usize),
  /// The same, of its split view's.
  Results(usize),
}

/// Where the supersessions `conv` carries for `options`' tools are ([`Revision`]); `None` when
/// it carries none.
pub fn revision(conv: &Conversation<'_>, options: &DedupOptions) -> Option<Revision> {
  match GrowingAnalysis::split_view(conv) {
    Some(view) => Some(Revision::Results(view.supersessions_for(conv, &options.tools)?.revision())),
    None => {
      let known = GrowingAnalysis::supersessions(conv).filter(|k| k.tools == options.tools)?;
      Some(Revision::Messages(known.revision()))
    }
  }
}

/// The messages of `conv` found superseded (again) since `revision`, in the order found; a
/// message may be named more than once. None when `conv` carries no supersessions of that kind.
pub fn changed_since(
  conv: &Conversation<'_>,
  options: &DedupOptions,
  revision: Revision,
) -> Vec<usize> {
  match (revision, GrowingAnalysis::split_view(conv)) {
    (Revision::Results(r), Some(view)) => view
      .supersessions_for(conv, &options.tools)
      .map(|known| known.changed_since(r).iter().filter_map(|&s| view.message_of(s)).collect())
      .unwrap_or_default(),
    (Revision::Messages(r), None) => GrowingAnalysis::supersessions(conv)
      .filter(|k| k.tools == options.tools)
      .map(|known| known.changed_since(r).to_vec())
      .unwrap_or_default(),
    _ => Vec::new(),
  }
}

/// Brings `plan` up to date for `conv`, a longer version of a conversation whose [`deduplicate`]
/// plan it is, made when the supersessions `conv` carries were at `revision` ([`revision`]):
/// the new messages are kept, and only the messages found superseded since then are decided
/// again, as [`deduplicate`] decides them (a message of several results read result by result,
/// through the split view `conv` carries). Once [`deduplicate`] has applied (a conversation only
/// grows past its threshold), the plan is then [`deduplicate`]'s for `conv`, for the work of what
/// changed. Returns the revision now, or `None`, changing nothing, when `conv` carries no
/// supersessions for `options`' tools, or carries them of the other kind (its first message of
/// several results came since: decide again with [`deduplicate`]).
pub fn deduplicate_since(
  conv: &Conversation<'_>,
  options: &DedupOptions,
  plan: &mut Plan,
  made: Revision,
) -> Option<Revision> {
  let now = revision(conv, options)?;
  if std::mem::discriminant(&now) != std::mem::discriminant(&made) {
    return None;
  }
  plan.extend_kept(conv.len());
  let (io, survey) = (options.io_content, options.survey_directory);
  let mut changed = changed_since(conv, options, made);
  changed.sort_unstable();
  changed.dedup();
  for i in changed {
    let found = match GrowingAnalysis::split_view(conv) {
      Some(view) => view.found_about(i, io, survey),
      None => match GrowingAnalysis::supersessions(conv) {
        Some(known) => known.found_at(i, io, survey).cloned().map(ResultFound::whole).collect(),
        None => Vec::new(),
      },
    };
    match superseded_replacement(conv, i, &found) {
      Some((r, _)) => plan.replace(i, r),
      None => plan.keep(i),
    }
  }
  Some(now)
}

/// For each superseding result, the results it supersedes, ascending: the seed's
/// `supersedes` metadata, as (index, superseded indices), by index. A message two of whose
/// results the same message supersedes is named once.
pub fn supersedes(superseded: &[Supersession]) -> Vec<(usize, Vec<usize>)> {
  let mut by: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
  for s in superseded {
    let list = by.entry(s.superseded_by).or_default();
    if list.last() != Some(&s.index) {
      list.push(s.index);
    }
  }
  by.into_iter().collect()
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::tokens::Encoding;
  use crate::plan::Action;
  use serde_json::{json, Value};

  /// Steps of `(id, path, lines)` reads, each step's calls made at once: in Anthropic's form
  /// (a step's results in one user message) and OpenAI's (a tool message per result).
  fn reads(steps: &[&[(&str, &str, usize)]]) -> (Vec<crate::Message>, Vec<crate::Message>) {
    let (mut anthropic, mut openai) = (vec![json!({"role": "user", "content": "go"})], vec![]);
    openai.push(anthropic[0].clone());
    for step in steps {
      let input = |p: &str| json!({"path": p});
      let uses: Vec<Value> = step.iter().map(|(id, p, _)| json!({"type": "tool_use", "id": id, "name": "read_file", "input": input(p)})).collect();
      let results: Vec<Value> = step.iter().map(|(id, p, n)| json!({"type": "tool_result", "tool_use_id": id, "content": crate::testing::lines(p, *n)})).collect();
      anthropic.push(json!({"role": "assistant", "content": uses}));
      anthropic.push(json!({"role": "user", "content": results}));
      let calls: Vec<Value> = step.iter().map(|(id, p, _)| json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": input(p).to_string()}})).collect();
      openai.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
      for (id, p, n) in step.iter() {
        openai.push(
          json!({"role": "tool", "tool_call_id": id, "content": crate::testing::lines(p, *n)}),
        );
      }
    }
    let parse =
      |m: Vec<Value>| crate::model::format::parse_messages(&Value::Array(m), None).unwrap().1;
    (parse(anthropic), parse(openai))
  }

  /// Each result's text after the plan, in order, whatever the form.
  fn result_texts(messages: &[crate::Message], plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    for (m, action) in messages.iter().zip(plan.actions()) {
      let m = match action {
        Action::Replace(r) => crate::plan::replaced_message(m, r),
        _ => m.clone(),
      };
      match &m.content {
        crate::model::message::Content::Parts(parts)
          if m.role != crate::model::message::Role::Tool =>
        {
          out.extend(parts.iter().filter_map(|p| match p {
            crate::model::message::Part::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
          }))
        }
        _ if m.is_tool_result() => out.push(m.content_text().into_owned()),
        _ => {}
      }
    }
    out
  }

  /// Parallel reads in one message are superseded result by result, as one message each: each
  /// result a later read covers gets its own placeholder, the others stay.
  #[test]
  fn a_message_of_several_results_is_deduplicated_result_by_result() {
    let (anthropic, openai) = reads(&[
      &[("r1", "a.ts", 60), ("r2", "b.ts", 60), ("r3", "c.ts", 60)],
      &[("r4", "a.ts", 60)],
      &[("r5", "b.ts", 60), ("r6", "d.ts", 60)],
    ]);
    let options = DedupOptions::default();
    let grouped = Conversation::new(&anthropic, Encoding::O200kBase);
    let one_each = Conversation::new(&openai, Encoding::O200kBase);
    let (a, o) = (deduplicate(&grouped, &options), deduplicate(&one_each, &options));
    let texts = result_texts(&anthropic, &a.plan);
    assert_eq!(texts, result_texts(&openai, &o.plan));
    assert_eq!(texts[0], "[superseded by a newer read of a.ts at step 2]");
    assert_eq!(texts[1], "[superseded by a newer read of b.ts at step 3]");
    assert!(texts[2].starts_with("c.ts line 0"));
    assert_eq!(a.plan.replaced(), vec![2]);
    let Action::Replace(r) = a.plan.action(2) else { panic!("replaced") };
    assert_eq!(
      r.meta[1],
      ("_supersededBy", MetaValue::Number(6.0)),
      "the latest of the messages superseding its results"
    );
    assert_eq!(
      r.tokens,
      crate::model::tokens::message_tokens(
        &crate::plan::replaced_message(&anthropic[2], r),
        Encoding::O200kBase
      )
    );
    assert_eq!(a.total_tokens, a.plan.total_tokens(&grouped));
    let reported: Vec<(usize, usize, &str)> =
      a.superseded.iter().map(|s| (s.index, s.superseded_by, s.path.as_str())).collect();
    assert_eq!(reported, vec![(2, 4, "a.ts"), (2, 6, "b.ts")]);
    let calls: Vec<(Option<&str>, Option<&str>)> =
      a.superseded.iter().map(|s| (s.call_id.as_deref(), s.by_call_id.as_deref())).collect();
    assert_eq!(calls, vec![(Some("r1"), Some("r4")), (Some("r2"), Some("r5"))]);
    // A conversation carrying its analysis decides the same.
    let mut analysis = crate::analysis::growing::GrowingAnalysis::default();
    analysis.extend(&grouped);
    let carried = analysis.give(Conversation::new(&anthropic, Encoding::O200kBase));
    assert_eq!(deduplicate(&carried, &options).plan, a.plan);
    // Grown a message at a time, the plan carried from message to message is deduplicate's.
    let mut analysis = crate::analysis::growing::GrowingAnalysis::default();
    let mut carried: Option<(Revision, Plan)> = None;
    let mut updated = 0;
    for n in 1..=anthropic.len() {
      let prefix = &anthropic[..n];
      analysis.extend(&Conversation::new(prefix, Encoding::O200kBase));
      let conv = analysis.give(Conversation::new(prefix, Encoding::O200kBase));
      let fresh = deduplicate(&conv, &options).plan;
      let now =
        carried.as_mut().and_then(|(made, plan)| deduplicate_since(&conv, &options, plan, *made));
      match (now, &mut carried) {
        (Some(now), Some((made, plan))) => {
          assert_eq!(*plan, fresh, "{n} messages");
          *made = now;
          updated += 1;
        }
        _ => carried = Some((revision(&conv, &options).unwrap(), fresh)),
      }
    }
    assert!(matches!(carried, Some((Revision::Results(_), _))));
    assert!(updated >= 4, "{updated}");
    // Two results superseded by the same message: it supersedes that message once.
    let (anthropic, _) = reads(&[
      &[("r1", "a.ts", 60), ("r2", "b.ts", 60)],
      &[("r3", "a.ts", 60), ("r4", "b.ts", 60)],
    ]);
    let d = deduplicate(&Conversation::new(&anthropic, Encoding::O200kBase), &options);
    assert_eq!(d.superseded.len(), 2);
    assert_eq!(supersedes(&d.superseded), vec![(4, vec![2])]);
  }

  /// An agent reads the same files again and again: once a result is replaced, its placeholder
  /// keeps its text in every longer conversation (a message read whole, its metadata too), so a request made of the
  /// deduplicated history shares its prefix with the one before (a provider's prompt cache
  /// keeps it), and each new read replaces only what it supersedes. Both forms.
  #[test]
  fn a_placeholder_keeps_its_text_as_the_conversation_grows() {
    let steps: Vec<Vec<(String, &str, usize)>> = (0..12)
      .map(|s| {
        vec![(format!("a{s}"), ["a.ts", "b.ts", "c.ts"][s % 3], 40), (format!("d{s}"), "d.ts", 40)]
      })
      .collect();
    let steps: Vec<Vec<(&str, &str, usize)>> = steps
      .iter()
      .map(|step| step.iter().map(|(id, p, n)| (id.as_str(), *p, *n)).collect())
      .collect();
    let steps: Vec<&[(&str, &str, usize)]> = steps.iter().map(Vec::as_slice).collect();
    let (anthropic, openai) = reads(&steps);
    let options = DedupOptions::default();
    for messages in [anthropic, openai] {
      let mut before: Option<Plan> = None;
      for n in 1..=messages.len() {
        let plan =
          deduplicate(&Conversation::new(&messages[..n], Encoding::O200kBase), &options).plan;
        if let Some(before) = &before {
          for i in before.replaced() {
            let (Action::Replace(old), Action::Replace(new)) = (before.action(i), plan.action(i))
            else {
              panic!("message {i} of {n} is no longer replaced")
            };
            match &old.results {
              None => assert_eq!(old, new, "message {i} of {n}"),
              Some(texts) => {
                for (k, text) in texts.iter().enumerate().filter(|(_, t)| t.is_some()) {
                  assert_eq!(new.result_text(k), text.as_deref(), "result {k} of {i} of {n}");
                }
              }
            }
          }
        }
        before = Some(plan);
      }
      // Every read but the newest of each file is replaced, each naming the next read of it.
      let texts = result_texts(&messages, &before.expect("a plan"));
      assert_eq!(texts.iter().filter(|t| t.starts_with(PLACEHOLDER_PREFIX)).count(), 20);
      assert_eq!(texts[0], "[superseded by a newer read of a.ts at step 4]");
      assert_eq!(texts[1], "[superseded by a newer read of d.ts at step 2]");
    }
  }
}
