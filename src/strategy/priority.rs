//! Phase 2 trimming: drop what matters least first ([`ContentPriority`]).
//!
//! Every message is classified once ([`crate::classify`]). Removal works on units (a call with
//! all its results, or a single message); a unit's priority is the **highest** of its members',
//! so a call whose result shows a modified file is as protected as that result. Units of
//! priority `MODIFIED_FILES` or more (system, agent instructions, the current task, modified
//! files) are never touched. The others are taken lowest priority first, oldest first within a
//! priority, until the request fits the target:
//!
//! - [`trim_by_priority`] drops each unit whole;
//! - [`trim_with_placeholders`] replaces each tool result of the unit with a placeholder (the
//!   call stays, so the pair stays valid) and drops units without tool results; placeholders
//!   count towards the budget, and a placeholder that would not be smaller than its result is
//!   not made. If the request still does not fit once every unit has been through that, the
//!   fewest units (in the same order) are dropped whole, and placeholders are made again after
//!   them only as far down the list as needed: no unit is ever dropped whole while a unit of
//!   lower priority is only shortened.
//!
//! There is no backfilling: once a unit is taken, a smaller unit of higher priority is not put
//! back in its place. When the budget cannot be met without the never-dropped units, everything
//! else is gone and the outcome says `over_budget`.

use std::borrow::Cow;

use crate::classify::{
  classify_conversation, classify_with_operations, Classification, ClassifyOptions, ContentPriority,
};
use crate::conversation::Conversation;
use crate::file_ops::file_operations;
use crate::file_tracker::FileTracker;
use crate::placeholder::{PlaceholderFields, PlaceholderTemplate};
use crate::plan::{replacement, MetaValue, Plan, Replacement};
use crate::strategy::{Outcome, Tally};

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
}

/// The outcome of a priority strategy with the classification it was based on.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityTrim {
  /// The decisions and their cost.
  pub outcome: Outcome,
  /// Every message's classification, by index.
  pub classification: Vec<Classification>,
}

/// Trims `conv` to `options.target_tokens` by dropping whole units, lowest priority first.
///
/// Files count as modified when `tracker` says so; without a tracker one is built from the
/// conversation.
pub fn trim_by_priority(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
) -> PriorityTrim {
  trim_by_priority_keeping(conv, tracker, options, &[])
}

/// [`trim_by_priority`] that also never drops the units flagged `true` in `keep` (indexed by
/// unit; missing entries are `false`), e.g. the units of the last messages.
pub fn trim_by_priority_keeping(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
  keep: &[bool],
) -> PriorityTrim {
  let classification = classify_conversation(conv, tracker, &options.classify);
  let target = options.target_tokens;
  let mut plan = Plan::keep_all(conv.len());
  let mut tally = Tally::keep_all(conv);
  for u in trim_order(conv, &classification) {
    if tally.total() <= target {
      break;
    }
    if !keep.get(u).copied().unwrap_or(false) {
      tally.drop_unit(conv, &mut plan, u);
    }
  }
  PriorityTrim { outcome: Outcome::new(conv, plan, target), classification }
}

/// Trims `conv` to `options.target_tokens`, replacing tool results with placeholders before
/// dropping anything that would break a pair (see the module docs).
pub fn trim_with_placeholders(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &PriorityOptions,
) -> PriorityTrim {
  let (classification, tracker) = prepare(conv, tracker, &options.classify);
  let target = options.target_tokens;
  let order = trim_order(conv, &classification);
  let template = options.placeholder.as_ref();
  let shorten = Shorten {
    conv,
    order: &order,
    classification: &classification,
    tracker: &tracker,
    template,
    target,
  };
  // 1. Down the list: placeholders for tool results, removal of units without any.
  let (mut plan, mut tally) = shorten.from(0);
  if tally.total() > target {
    // 2. Not enough: the fewest units, lowest first, to remove whole...
    let mut cut = 0;
    while cut < order.len() && tally.total() > target {
      tally.drop_unit(conv, &mut plan, order[cut]);
      cut += 1;
    }
    // 3. ...and, with those gone, placeholders again only as far down the list as needed, so
    // that no unit is removed whole while a lower one is only shortened.
    if tally.total() <= target {
      (plan, tally) = shorten.from(cut);
    }
  }
  debug_assert_eq!(tally.total(), plan.total_tokens(conv));
  PriorityTrim { outcome: Outcome::new(conv, plan, target), classification }
}

/// The placeholder pass of [`trim_with_placeholders`].
struct Shorten<'s, 'c> {
  conv: &'s Conversation<'c>,
  order: &'s [usize],
  classification: &'s [Classification],
  tracker: &'s FileTracker,
  template: Option<&'s PlaceholderTemplate>,
  target: usize,
}

impl Shorten<'_, '_> {
  /// Removes the first `cut` units of the order, then shortens the next ones until the request
  /// fits: tool results become placeholders (when smaller), units without results are removed.
  fn from(&self, cut: usize) -> (Plan, Tally) {
    let conv = self.conv;
    let mut plan = Plan::keep_all(conv.len());
    let mut tally = Tally::keep_all(conv);
    let (removed, rest) = self.order.split_at(cut.min(self.order.len()));
    for &u in removed {
      tally.drop_unit(conv, &mut plan, u);
    }
    for &u in rest {
      if tally.total() <= self.target {
        break;
      }
      let members = &conv.units()[u].members;
      let results: Vec<usize> =
        members.iter().copied().filter(|&i| conv.messages()[i].is_tool_result()).collect();
      if results.is_empty() {
        tally.drop_unit(conv, &mut plan, u);
        continue;
      }
      for i in results {
        let r = placeholder(conv, i, &self.classification[i], self.tracker, self.template);
        if r.tokens < conv.tokens(i) {
          tally.replace(conv, &mut plan, i, r);
        }
      }
    }
    (plan, tally)
  }
}

/// Classifies `conv`, building a tracker from it when none is given.
fn prepare<'t>(
  conv: &Conversation<'_>,
  tracker: Option<&'t FileTracker>,
  options: &ClassifyOptions,
) -> (Vec<Classification>, Cow<'t, FileTracker>) {
  let operations = file_operations(conv);
  let tracker = match tracker {
    Some(t) => Cow::Borrowed(t),
    None => Cow::Owned(FileTracker::from_operations(conv, &operations, 0.0)),
  };
  let classification =
    classify_with_operations(conv, &operations, &|p| tracker.was_modified(p), options);
  (classification, tracker)
}

/// Each unit's priority: the highest of its members'.
pub fn unit_priorities(
  conv: &Conversation<'_>,
  classification: &[Classification],
) -> Vec<ContentPriority> {
  conv
    .units()
    .iter()
    .map(|u| {
      u.members
        .iter()
        .filter_map(|&i| classification.get(i).map(|c| c.priority))
        .max()
        .unwrap_or(ContentPriority::System)
    })
    .collect()
}

/// The units that may be trimmed, in trimming order: lowest priority first, oldest first
/// within a priority. Protected units ([`ContentPriority::is_protected`]) are left out.
pub fn trim_order(conv: &Conversation<'_>, classification: &[Classification]) -> Vec<usize> {
  let priorities = unit_priorities(conv, classification);
  let mut order: Vec<usize> =
    (0..priorities.len()).filter(|&u| !priorities[u].is_protected()).collect();
  // Units are numbered by their first message, so the index breaks ties oldest first.
  order.sort_by_key(|&u| (priorities[u], u));
  order
}

/// The placeholder that replaces tool result `i`, with `_truncated: true` and
/// `_originalTokens`.
///
/// With a `template`, that template rendered with the result's age, tokens and file path.
/// Without, the seed's: a result about a file the tracker knows gets [`file_placeholder`]; any
/// other result `[Content truncated - file: P - N steps ago - T tokens]` (the file part only
/// when the result is about a file), where N is the result's age and T its tokens.
pub fn placeholder(
  conv: &Conversation<'_>,
  i: usize,
  classification: &Classification,
  tracker: &FileTracker,
  template: Option<&PlaceholderTemplate>,
) -> Replacement {
  let tokens = conv.tokens(i);
  let age = conv.age(i);
  let path = classification.metadata.file_path.as_deref();
  let text = match (template, path, path.and_then(|p| tracker.get(p))) {
    (Some(template), ..) => template.render(&PlaceholderFields { age, tokens, path }),
    (None, Some(path), Some(reference)) => file_placeholder(
      path,
      &conv.messages()[i].content_text(),
      conv.current_step().saturating_sub(reference.last_access_step),
      reference.was_modified,
    ),
    (None, Some(path), None) => {
      format!("[Content truncated - file: {path} - {age} steps ago - {tokens} tokens]")
    }
    (None, None, _) => format!("[Content truncated - {age} steps ago - {tokens} tokens]"),
  };
  let meta = vec![
    ("_truncated", MetaValue::Bool(true)),
    ("_originalTokens", MetaValue::Number(tokens as f64)),
  ];
  replacement(conv, i, text, meta)
}

/// The seed's `createFilePlaceholder`: the file's path, the removed content's line count and
/// first [`PLACEHOLDER_PREVIEW_CHARS`] characters, how many steps ago the file was last
/// accessed and whether it was modified.
pub fn file_placeholder(path: &str, content: &str, steps_ago: usize, modified: bool) -> String {
  let (lines, preview) = if content.is_empty() {
    ("unknown".to_string(), "N/A".to_string())
  } else {
    (
      (content.matches('\n').count() + 1).to_string(),
      content.chars().take(PLACEHOLDER_PREVIEW_CHARS).collect(),
    )
  };
  let modified = if modified { "yes" } else { "no" };
  format!(
    "[File: {path}\n  Lines: {lines}\n  Last accessed: {steps_ago} steps ago\n  Modified: {modified}\n  Preview: {preview}...\n\n  Use read_file to retrieve current content]"
  )
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::file_ops::FileOpKind;
  use crate::message::{Message, Role};
  use crate::plan::Action;
  use crate::testing::{call, named_result, result};
  use crate::tokens::Encoding;

  fn options(target: usize, turns: usize) -> PriorityOptions {
    PriorityOptions {
      target_tokens: target,
      classify: ClassifyOptions {
        recent_threshold: turns,
        preserve_recent_turns: turns,
        ..ClassifyOptions::default()
      },
      placeholder: None,
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

  #[test]
  fn never_removes_system_messages() {
    let msgs = vec![
      Message::text(Role::System, "You are a helpful assistant"),
      Message::text(Role::User, "Hello"),
      Message::text(Role::Tool, "a".repeat(10000)),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_by_priority(&conv, None, &options(100, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![2]);
    assert!(!t.outcome.over_budget);
    assert!(t.outcome.total_tokens <= 100);
  }

  #[test]
  fn drops_lowest_priority_first_and_oldest_first_within_a_priority() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let all = trim_by_priority(&conv, None, &options(0, 1));
    let p: Vec<u32> = all.classification.iter().map(|c| c.priority.value()).collect();
    // steps: 2,3 → 1; 4,5 → 2; 6,7 → 3; 8,9,10 → 4 (current).
    // Calls take the priority of their results.
    assert_eq!(p, vec![100, 80, 30, 30, 30, 30, 70, 70, 50, 50, 60]);
    assert_eq!(trim_order(&conv, &all.classification), vec![2, 3, 5, 6]);
    // Units: 0 [0], 1 [1], 2 [2,3], 3 [4,5], 4 [6,7], 5 [8,9], 6 [10].
    assert_eq!(all.outcome.plan.dropped(), vec![2, 3, 4, 5, 8, 9, 10]);
    assert!(all.outcome.over_budget);
    let kept = conv.tokens(0) + conv.tokens(1) + conv.tokens(6) + conv.tokens(7) + 3;
    assert_eq!(all.outcome.total_tokens, kept);
    // A budget that the oldest stale unit alone frees.
    let first = conv.total_tokens() - conv.tokens(2) - conv.tokens(3);
    let t = trim_by_priority(&conv, None, &options(first, 1));
    assert_eq!(t.outcome.plan.dropped(), vec![2, 3]);
    assert_eq!(t.outcome.saved_tokens, conv.tokens(2) + conv.tokens(3));
    assert!(!t.outcome.over_budget && t.outcome.total_tokens == first);
  }

  #[test]
  fn units_flagged_to_keep_are_skipped_in_trimming_order() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    // Units: 0 [0], 1 [1], 2 [2,3], 3 [4,5], 4 [6,7], 5 [8,9], 6 [10]; order 2, 3, 5, 6.
    let mut keep = vec![false; conv.units().len()];
    keep[2] = true;
    let t = trim_by_priority_keeping(&conv, None, &options(0, 1), &keep);
    assert_eq!(t.outcome.plan.dropped(), vec![4, 5, 8, 9, 10]);
    // A short table keeps nothing extra.
    let t = trim_by_priority_keeping(&conv, None, &options(0, 1), &[true]);
    assert_eq!(t.outcome.plan.dropped(), vec![2, 3, 4, 5, 8, 9, 10]);
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
    let t = trim_with_placeholders(&conv, None, &options(conv.total_tokens() - 1, 1));
    assert_eq!(t.outcome.plan.dropped(), Vec::<usize>::new());
    assert_eq!(t.outcome.plan.replaced(), vec![3]);
    assert_eq!(t.outcome.dropped, vec![3]);
    let Action::Replace(r) = t.outcome.plan.action(3) else { panic!("not replaced") };
    assert!(r.content.starts_with("[File: /w/a.ts\n  Lines: 81\n  Last accessed: 3 steps ago\n  Modified: no\n  Preview: const a = 1;\nconst a"));
    assert!(r.content.ends_with("...\n\n  Use read_file to retrieve current content]"));
    assert_eq!(
      r.meta,
      vec![
        ("_truncated", MetaValue::Bool(true)),
        ("_originalTokens", MetaValue::Number(conv.tokens(3) as f64))
      ]
    );
    let after_first = conv.total_tokens() - conv.tokens(3) + r.tokens;
    assert_eq!(t.outcome.total_tokens, after_first);
    assert!(!t.outcome.over_budget);
    // One token less: the bash output gets the generic placeholder too.
    let t = trim_with_placeholders(&conv, None, &options(after_first - 1, 1));
    assert_eq!(t.outcome.plan.replaced(), vec![3, 5]);
    let Action::Replace(r) = t.outcome.plan.action(5) else { panic!("not replaced") };
    assert_eq!(r.content, format!("[Content truncated - 2 steps ago - {} tokens]", conv.tokens(5)));
  }

  #[test]
  fn placeholders_then_removal_when_placeholders_do_not_fit() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_with_placeholders(&conv, None, &options(0, 1));
    // Everything unprotected is gone; the protected units stay whole.
    assert_eq!(t.outcome.plan.dropped(), vec![2, 3, 4, 5, 8, 9, 10]);
    assert!(t.outcome.plan.replaced().is_empty());
    assert!(t.outcome.over_budget);
    assert!(t.outcome.plan.check_units(&conv).is_ok());
    // A budget between: every result placeholdered, then the oldest units removed.
    let protected = conv.tokens(0) + conv.tokens(1) + conv.tokens(6) + conv.tokens(7) + 3;
    let t = trim_with_placeholders(&conv, None, &options(protected + 60, 1));
    assert!(!t.outcome.over_budget);
    assert!(t.outcome.total_tokens <= protected + 60);
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
      metadata: crate::classify::Metadata { file_path: Some("/x".into()), ..Default::default() },
    };
    let r = placeholder(&conv, 1, &c, &FileTracker::new(), None);
    assert_eq!(
      r.content,
      format!("[Content truncated - file: /x - 0 steps ago - {} tokens]", conv.tokens(1))
    );
  }

  #[test]
  fn a_template_replaces_both_seed_placeholders() {
    let msgs = session();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let template =
      PlaceholderTemplate::new("[content truncated - {age} steps ago, {tokens} tokens{path}]");
    let o = PriorityOptions { placeholder: Some(template), ..options(conv.total_tokens() - 1, 0) };
    let t = trim_with_placeholders(&conv, None, &o);
    // The read of /w/a.ts (a file the tracker knows) and the bash output both use the template.
    let texts: Vec<String> = (0..msgs.len())
      .filter_map(|i| match t.outcome.plan.action(i) {
        Action::Replace(r) => Some(r.content.clone()),
        _ => None,
      })
      .collect();
    assert_eq!(
      texts[0],
      format!("[content truncated - 3 steps ago, {} tokens/w/a.ts]", conv.tokens(3))
    );
    assert!(texts.iter().all(|t| t.starts_with("[content truncated - ")), "{texts:?}");
  }

  #[test]
  fn file_placeholder_of_empty_content() {
    assert_eq!(
      file_placeholder("/a", "", 2, true),
      "[File: /a\n  Lines: unknown\n  Last accessed: 2 steps ago\n  Modified: yes\n  Preview: N/A...\n\n  Use read_file to retrieve current content]"
    );
  }
}
