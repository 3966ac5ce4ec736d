//! Deduplicating superseded tool results (seed 003, the ai-experiments deduplicators): the
//! strategy. What supersedes what is [`crate::analysis::supersession`].
//!
//! An agent reads the same file again, lists the same directory again: the older result is then
//! stale or redundant. [`deduplicate`] replaces each such result with a short placeholder naming
//! what superseded it (`[superseded by a newer read of src/a.ts at step 12]`), in place, so every
//! tool call keeps its result and nothing moves. Two deduplicators decide what supersedes what:
//!
//! - [`IoContentDeduplicator`], for files. A result is a *file access* with a path and a
//!   [`Coverage`](crate::analysis::supersession::Coverage). A newer **read** or **full write** of the same path supersedes an older read,
//!   write or edit whose coverage it contains; a **partial update** (edit, `str_replace`,
//!   `insert`) supersedes only when its result returns the whole file (see [`Coverage`](crate::analysis::supersession::Coverage)).
//! - [`SurveyDirectoryDeduplicator`], for directory listings. A newer listing of the same
//!   location supersedes an older one when it is at least as inclusive: it is at least as deep
//!   (recursive if the older one was), its exclusion filters are a subset of the older one's, and
//!   (shell `ls`) it shows at least the same details.
//!
//! Each superseded result points at the **newest** result that supersedes it, which is never
//! itself superseded (supersession is transitive), so a placeholder never points at another
//! placeholder. Failed operations (flagged `is_error`, or reporting failure, see
//! [`crate::analysis::file_ops::reports_failure`]) neither supersede nor are superseded: they record what
//! did not work. A message carrying several tool results (Anthropic parallel results in one user
//! message) is left alone, since a placeholder would replace all of them. A placeholder that
//! would not be smaller than the result is not made.
//!
//! Rewriting history costs the provider's prompt cache (seed 003's trade-off): with
//! [`DedupOptions::threshold_tokens`] nothing is rewritten until the request reaches that size.

use std::collections::BTreeMap;

use crate::analysis::supersession::{
  supersessions, Context, Found, IoContentDeduplicator, SurveyDirectoryDeduplicator, ToolNames,
  PLACEHOLDER_PREFIX,
};
use crate::error::{js_number, Error, Result};
use crate::model::conversation::Conversation;
use crate::plan::{replacement, Action, MetaValue, Plan, Replacement};
use crate::strategy::Tally;

/// The default `deduplicationThreshold`: deduplicate once the request reaches 75% of the
/// context window (seed 003's `deduplication_threshold`).
pub const DEFAULT_DEDUPLICATION_THRESHOLD: f64 = 0.75;
/// Options of [`deduplicate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupOptions {
  /// Deduplicate only when the request has at least this many tokens; `None`: always.
  pub threshold_tokens: Option<usize>,
  /// Run the [`IoContentDeduplicator`].
  pub io_content: bool,
  /// Run the [`SurveyDirectoryDeduplicator`].
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
  /// The newest tool result that supersedes it (kept).
  pub superseded_by: usize,
  /// The path or location both are about.
  pub path: String,
  /// What the superseding result is: `read`, `write`, `edit` or `listing`.
  pub noun: &'static str,
  /// The step of the superseding result.
  pub step: usize,
  /// The tokens the placeholder saves.
  pub saved_tokens: usize,
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
  let pairs = match conv.supersessions().filter(|k| k.tools == options.tools) {
    Some(known) => known.pairs(options.io_content, options.survey_directory),
    None => {
      let ctx = Context::new(conv, &options.tools);
      let mut pairs = Vec::new();
      if options.io_content {
        pairs.extend(supersessions(&IoContentDeduplicator, &ctx));
      }
      if options.survey_directory {
        pairs.extend(supersessions(&SurveyDirectoryDeduplicator, &ctx));
      }
      pairs.sort_by_key(|f| f.index);
      pairs
    }
  };
  let mut tally = Tally::keep_all(conv);
  let mut superseded = Vec::new();
  for found in pairs {
    // One deduplicator per message: a result is a file or a listing, never both.
    if !matches!(plan.action(found.index), Action::Keep) {
      continue;
    }
    let Some(r) = superseded_placeholder(conv, &found) else { continue };
    let Found { index: i, by, path, noun } = found;
    let saved_tokens = conv.tokens(i) - r.tokens;
    tally.replace(conv, &mut plan, i, r);
    let step = conv.step(by);
    superseded.push(Supersession { index: i, superseded_by: by, path, noun, step, saved_tokens });
  }
  let total_tokens = tally.total();
  debug_assert_eq!(total_tokens, plan.total_tokens(conv));
  Dedup { plan, applied: true, superseded, saved_tokens: total - total_tokens, total_tokens }
}

/// The placeholder of result `found.index`, superseded as `found` says, when it is smaller than
/// the result.
fn superseded_placeholder(conv: &Conversation<'_>, found: &Found) -> Option<Replacement> {
  let (i, by) = (found.index, found.by);
  let text =
    format!("{PLACEHOLDER_PREFIX}{} of {} at step {}]", found.noun, found.path, conv.step(by));
  let meta = vec![
    ("_superseded", MetaValue::Bool(true)),
    ("_supersededBy", MetaValue::Number(by as f64)),
    ("_originalTokens", MetaValue::Number(conv.tokens(i) as f64)),
  ];
  let r = replacement(conv, i, text, meta);
  (r.tokens < conv.tokens(i)).then_some(r)
}

/// Brings `plan` up to date for `conv`, a longer version of a conversation whose [`deduplicate`]
/// plan it is, made when the supersessions `conv` carries were at `revision`
/// ([`crate::analysis::supersession::Supersessions::revision`]): the new messages are kept, and only the results found
/// superseded since then are decided again, as [`deduplicate`] decides them. Once
/// [`deduplicate`] has applied (a conversation only grows past its threshold), the plan is then
/// [`deduplicate`]'s for `conv`, for the work of what changed. Returns the revision now, or
/// `None`, changing nothing, when `conv` carries no supersessions for `options`' tools.
pub fn deduplicate_since(
  conv: &Conversation<'_>,
  options: &DedupOptions,
  plan: &mut Plan,
  revision: usize,
) -> Option<usize> {
  let known = conv.supersessions().filter(|k| k.tools == options.tools)?;
  plan.extend_kept(conv.len());
  for &i in known.changed_since(revision) {
    match known
      .found_at(i, options.io_content, options.survey_directory)
      .find_map(|found| superseded_placeholder(conv, found))
    {
      Some(r) => plan.replace(i, r),
      None => plan.keep(i),
    }
  }
  Some(known.revision())
}

/// For each superseding result, the results it supersedes, ascending: the seed's
/// `supersedes` metadata, as (index, superseded indices), by index.
pub fn supersedes(superseded: &[Supersession]) -> Vec<(usize, Vec<usize>)> {
  let mut by: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
  for s in superseded {
    by.entry(s.superseded_by).or_default().push(s.index);
  }
  by.into_iter().collect()
}
