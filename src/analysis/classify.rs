//! How much each message matters: its [`ContentPriority`].
//!
//! [`classify_conversation`] classifies every message once into a `Vec<Classification>` that
//! strategies reuse. The rules, first match wins:
//!
//! 1. **Summaries** ([`Message::is_summary`]: flagged `_summary: true` / `isSummary: true`, or
//!    text starting with [`crate::model::message::SUMMARY_MARKER`]) are `SUMMARIZED`, whatever their
//!    role: they are already compressed.
//! 2. `system` and `developer` messages are `SYSTEM`.
//! 3. **Agent instructions**: a user message (not a tool result) named `AGENTS.md` (any case),
//!    or whose text, after leading whitespace, starts with one of [`AGENT_INSTRUCTION_MARKERS`]
//!    or one of the app's own markers (ASCII case-insensitive), is `AGENT_INSTRUCTIONS`.
//! 4. The **current task** ([`current_task`]) is `CURRENT_TASK`.
//! 5. A tool result about a file ([`crate::analysis::file_ops`]) is `MODIFIED_FILES` when the file was
//!    modified in the session, else `RECENT_FILE_READS` when at most `recent_threshold` steps
//!    old, else `STALE_TOOL_OUTPUTS`. In a conversation, a read that no later change of its
//!    file follows stays `RECENT_FILE_READS` however old, unless a later read covers it
//!    (supersession): it is a view of the file the agent edits against (seed 004 says
//!    "recent"; on real runs the agent copies from its view of a file long after reading it,
//!    also after reading a range of it or `grep`ping it, docs/quality.md). And `MODIFIED_FILES`
//!    is the latest content of each modified file: a result about one that a later change of
//!    the file follows is a `RECENT_FILE_READS` if it read the file (a failed change included)
//!    or shows the edited region's numbered lines (an edit's snippet, a view the agent copies
//!    its next edit from), else a tool exchange like any other (rule 6). A failed change that
//!    is the last change tried on its file is a `RECENT_FILE_READS` however old: its call holds
//!    the change the agent will send again.
//! 6. Any other tool result is `RECENT_TURNS` when at most `recent_threshold` steps old, else
//!    `STALE_TOOL_OUTPUTS`.
//! 7. Any other message is `RECENT_TURNS` when at most `preserve_recent_turns` steps old, else
//!    `OLD_HISTORY`.
//!
//! Then, in a conversation, an assistant message that calls tools takes the highest priority
//! of the results answering it: it is the request half of those tool outputs, so a stale
//! `ls` and its call are `STALE_TOOL_OUTPUTS` together and an edit and its call are
//! `MODIFIED_FILES` together (the seed classifies calls as plain turns, which would put every
//! old tool exchange at `OLD_HISTORY` and make its lower tiers unreachable). A call without
//! results keeps rule 7; [`classify_message`] on its own cannot see results and applies rule 7.
//!
//! Ages are in steps ([`Conversation::age`]): a conversation without tool calls has a single
//! step, so all its messages are recent and trimming falls back to oldest first.

use crate::analysis::file_ops::{numbered_file_operations, FileOp, FileOpKind, FileOperations};
use crate::analysis::file_tracker::FileTracker;
use crate::analysis::supersession::{superseded_by_result, ToolNames};
use crate::model::conversation::Conversation;
use crate::model::message::{Message, Role, Shape};
use std::borrow::Cow;
use std::sync::Arc;

/// How much a message matters; higher values are kept longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContentPriority {
  /// 20: previously summarized content, already compressed.
  Summarized = 20,
  /// 30: old tool outputs, easily re-run.
  StaleToolOutputs = 30,
  /// 40: old conversation turns.
  OldHistory = 40,
  /// 50: recent reads of files that were not modified.
  RecentFileReads = 50,
  /// 60: the most recent turns.
  RecentTurns = 60,
  /// 70: results about files modified in the session. Never dropped.
  ModifiedFiles = 70,
  /// 80: the current task. Never dropped.
  CurrentTask = 80,
  /// 90: agent instructions (AGENTS.md). Never dropped.
  AgentInstructions = 90,
  /// 100: the system prompt. Never dropped.
  System = 100,
}

impl ContentPriority {
  /// Every priority, lowest first.
  pub const ALL: [ContentPriority; 9] = [
    ContentPriority::Summarized,
    ContentPriority::StaleToolOutputs,
    ContentPriority::OldHistory,
    ContentPriority::RecentFileReads,
    ContentPriority::RecentTurns,
    ContentPriority::ModifiedFiles,
    ContentPriority::CurrentTask,
    ContentPriority::AgentInstructions,
    ContentPriority::System,
  ];

  /// The numeric value (20 to 100).
  pub fn value(self) -> u32 {
    self as u32
  }

  /// The position in [`ContentPriority::ALL`] (0 for the lowest).
  pub fn rank(self) -> usize {
    // The values are 20, 30… 100, in the order of ALL.
    (self as usize) / 10 - 2
  }

  /// The name as the seed spells it (`SYSTEM`, `MODIFIED_FILES`…).
  pub fn name(self) -> &'static str {
    match self {
      ContentPriority::Summarized => "SUMMARIZED",
      ContentPriority::StaleToolOutputs => "STALE_TOOL_OUTPUTS",
      ContentPriority::OldHistory => "OLD_HISTORY",
      ContentPriority::RecentFileReads => "RECENT_FILE_READS",
      ContentPriority::RecentTurns => "RECENT_TURNS",
      ContentPriority::ModifiedFiles => "MODIFIED_FILES",
      ContentPriority::CurrentTask => "CURRENT_TASK",
      ContentPriority::AgentInstructions => "AGENT_INSTRUCTIONS",
      ContentPriority::System => "SYSTEM",
    }
  }

  /// Whether content of this priority is never dropped: system, agent instructions, the
  /// current task and modified files (the seed's "What to trim first" table).
  pub fn is_protected(self) -> bool {
    self >= ContentPriority::ModifiedFiles
  }
}

pub use crate::model::message::{AGENT_INSTRUCTION_MARKERS, AGENT_INSTRUCTION_NAME};
/// The default for [`ClassifyOptions::preserve_recent_turns`] and `recent_threshold`.
pub const DEFAULT_PRESERVE_RECENT_TURNS: usize = 2;

/// How to classify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassifyOptions {
  /// Tool results at most this many steps old are recent.
  pub recent_threshold: usize,
  /// Other messages at most this many steps old are recent turns.
  pub preserve_recent_turns: usize,
  /// The app's own agent-instruction markers, checked besides [`AGENT_INSTRUCTION_MARKERS`].
  pub agent_markers: Vec<String>,
}

impl Default for ClassifyOptions {
  fn default() -> Self {
    ClassifyOptions {
      recent_threshold: DEFAULT_PRESERVE_RECENT_TURNS,
      preserve_recent_turns: DEFAULT_PRESERVE_RECENT_TURNS,
      agent_markers: Vec::new(),
    }
  }
}

/// What the classifier found out about a message (the seed's `metadata`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
  /// A system or developer message.
  pub is_system: bool,
  /// Agent instructions.
  pub is_agent_instruction: bool,
  /// The current task.
  pub is_current_task: bool,
  /// The file a tool result is about (shared with the file operations it was found in).
  pub file_path: Option<Arc<str>>,
  /// The file was modified in the session.
  pub was_modified: bool,
  /// The age in steps, for every droppable priority.
  pub age: Option<usize>,
  /// A summary.
  pub is_summarized: bool,
  /// The first later tool result that supersedes this one (a newer read of the same file, a
  /// newer listing of the same directory: [`crate::analysis::supersession::superseded_results`]).
  pub superseded_by: Option<usize>,
}

/// A message's priority with what it was derived from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
  /// The priority.
  pub priority: ContentPriority,
  /// The message's tokens (framing included).
  pub tokens: usize,
  /// The message's step.
  pub step: usize,
  /// Why.
  pub metadata: Metadata,
}

/// Everything [`classify_message`] needs besides the message (the seed's
/// `ClassificationContext`).
pub struct ClassificationContext<'a> {
  /// The message's step.
  pub message_step: usize,
  /// The conversation's current step.
  pub current_step: usize,
  /// Whether the message is the current task.
  pub is_current_task: bool,
  /// Whether a path was modified in the session.
  pub is_modified: &'a dyn Fn(&str) -> bool,
  /// Thresholds and markers.
  pub options: &'a ClassifyOptions,
}

/// Classifies `message`, whose tokens are `tokens` and whose file operation (if a tool result
/// about a file) is `file`.
pub fn classify_message(
  message: &Message,
  tokens: usize,
  file: Option<&FileOp>,
  ctx: &ClassificationContext<'_>,
) -> Classification {
  let age = ctx.current_step.saturating_sub(ctx.message_step);
  let modified = file.map(|f| (ctx.is_modified)(&f.path));
  let shape = Shape::of(message);
  let class = classify_known(message, shape, modified, age, ctx.is_current_task, ctx.options);
  let file_path = file.map(|f| Arc::from(f.path.as_str()));
  class.classification(tokens, ctx.message_step, age, file_path, None)
}

/// A message's priority and which fields of its [`Metadata`] apply, in two bytes: what a
/// conversation's classification computes for every message on every call ([`Classes`]); its
/// [`Classification`] is built from it when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Compact {
  priority: ContentPriority,
  flags: u8,
}

impl Compact {
  const SYSTEM: u8 = 1;
  const AGENT_INSTRUCTION: u8 = 1 << 1;
  const CURRENT_TASK: u8 = 1 << 2;
  const FILE: u8 = 1 << 3;
  const MODIFIED: u8 = 1 << 4;
  const AGE: u8 = 1 << 5;
  const SUMMARIZED: u8 = 1 << 6;

  fn new(priority: ContentPriority, flags: u8) -> Self {
    Compact { priority, flags }
  }

  fn has(self, flag: u8) -> bool {
    self.flags & flag != 0
  }

  /// The classification of a message whose tokens, step and age are these, whose file (when
  /// [`Compact::FILE`]) is `file_path` and which `superseded_by` supersedes.
  fn classification(
    self,
    tokens: usize,
    step: usize,
    age: usize,
    file_path: Option<Arc<str>>,
    superseded_by: Option<usize>,
  ) -> Classification {
    let metadata = Metadata {
      is_system: self.has(Compact::SYSTEM),
      is_agent_instruction: self.has(Compact::AGENT_INSTRUCTION),
      is_current_task: self.has(Compact::CURRENT_TASK),
      file_path: file_path.filter(|_| self.has(Compact::FILE)),
      was_modified: self.has(Compact::MODIFIED),
      age: self.has(Compact::AGE).then_some(age),
      is_summarized: self.has(Compact::SUMMARIZED),
      superseded_by,
    };
    Classification { priority: self.priority, tokens, step, metadata }
  }
}

/// [`classify_message`]'s rules 1 to 7, for a message `age` steps old whose file operation's
/// path (if it has one) was `modified` or not.
fn classify_known(
  message: &Message,
  shape: Shape,
  modified: Option<bool>,
  age: usize,
  is_current_task: bool,
  options: &ClassifyOptions,
) -> Compact {
  if shape.is_summary() {
    return Compact::new(ContentPriority::Summarized, Compact::SUMMARIZED | Compact::AGE);
  }
  if shape.is_instruction() {
    return Compact::new(ContentPriority::System, Compact::SYSTEM);
  }
  if is_agent_instruction_shaped(message, shape, &options.agent_markers) {
    return Compact::new(ContentPriority::AgentInstructions, Compact::AGENT_INSTRUCTION);
  }
  if is_current_task {
    return Compact::new(ContentPriority::CurrentTask, Compact::CURRENT_TASK);
  }
  if let Some(modified) = modified {
    if modified {
      return Compact::new(ContentPriority::ModifiedFiles, Compact::FILE | Compact::MODIFIED);
    }
    let priority = if age <= options.recent_threshold {
      ContentPriority::RecentFileReads
    } else {
      ContentPriority::StaleToolOutputs
    };
    return Compact::new(priority, Compact::FILE | Compact::AGE);
  }
  let priority = if shape.is_tool_result() {
    other_result(age, options)
  } else if age <= options.preserve_recent_turns {
    ContentPriority::RecentTurns
  } else {
    ContentPriority::OldHistory
  };
  Compact::new(priority, Compact::AGE)
}

/// Rule 6: a tool result about no file (or no longer about a modified file's latest content)
/// `age` steps old.
fn other_result(age: usize, options: &ClassifyOptions) -> ContentPriority {
  if age <= options.recent_threshold {
    ContentPriority::RecentTurns
  } else {
    ContentPriority::StaleToolOutputs
  }
}

/// Whether `message` is agent instructions (rule 3 of the module docs).
pub fn is_agent_instruction(message: &Message, extra_markers: &[String]) -> bool {
  message.is_agent_instruction(extra_markers)
}

/// [`is_agent_instruction`] of a message whose [`Shape`] is `shape`: the shape knows the
/// answer for the crate's own markers, so only an app's own markers read the message.
fn is_agent_instruction_shaped(message: &Message, shape: Shape, extra_markers: &[String]) -> bool {
  shape.is_agent_instruction()
    || (!extra_markers.is_empty() && message.is_agent_instruction(extra_markers))
}

/// The current task: [`Conversation::current_task`], except that when that message is itself
/// agent instructions or a summary, the nearest plain user message before it in the same run of
/// user messages is the task (and there is none when the run has no such message).
pub fn current_task(conv: &Conversation<'_>, options: &ClassifyOptions) -> Option<usize> {
  let mut i = conv.current_task()?;
  let messages = conv.messages();
  loop {
    let m = messages.get(i)?;
    if m.role != Role::User || m.is_tool_result() {
      return None;
    }
    if !m.is_summary && !is_agent_instruction(m, &options.agent_markers) {
      return Some(i);
    }
    i = i.checked_sub(1)?;
  }
}

/// Classifies every message of `conv`. Files count as modified when `tracker` says so; without
/// a tracker, as [`FileTracker::from_conversation`] would mark them.
pub fn classify_conversation(
  conv: &Conversation<'_>,
  tracker: Option<&FileTracker>,
  options: &ClassifyOptions,
) -> Vec<Classification> {
  let (classes, operations) = conversation_classes(conv, tracker, options);
  classes.classifications(conv, &operations)
}

/// [`classify_conversation`], held compact ([`Classes`]), with the file operations it was made
/// from (to build the classifications from).
pub fn conversation_classes<'c>(
  conv: &Conversation<'c>,
  tracker: Option<&FileTracker>,
  options: &ClassifyOptions,
) -> (Classes, Cow<'c, FileOperations>) {
  let operations = numbered_file_operations(conv);
  let classes = match tracker {
    Some(t) => {
      classes_with_operations(conv, &operations, Modified::By(&|p| t.was_modified(p)), options)
    }
    // Only "modified" is needed, not a whole tracker with its previews: the paths the
    // operations modified, as a tracker built from them would mark them.
    None => classes_with_operations(conv, &operations, Modified::InSession, options),
  };
  (classes, operations)
}

/// Which files count as modified, for [`classify_with_operations`].
#[derive(Clone, Copy)]
pub enum Modified<'m> {
  /// The files the conversation's operations modified, as
  /// [`FileTracker::from_conversation`] marks them.
  InSession,
  /// The files this says were modified (a tracker's, the app's own list), asked once a path.
  By(&'m dyn Fn(&str) -> bool),
}

/// [`classify_conversation`] with the file operations already found and any notion of
/// "modified".
pub fn classify_with_operations(
  conv: &Conversation<'_>,
  operations: &FileOperations,
  modified: Modified<'_>,
  options: &ClassifyOptions,
) -> Vec<Classification> {
  classes_with_operations(conv, operations, modified, options).classifications(conv, operations)
}

/// Every message's classification, held compact: its priority and which metadata apply (two
/// bytes a message), the [`Classification`] built when asked. A strategy that only needs the
/// priorities (the ladder of [`crate::strategy::priority`]) does not build, and free, a
/// classification per message on every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classes {
  compact: Vec<Compact>,
  /// The results a newer one supersedes and the newer one, ascending by the first.
  superseded_by: Vec<(usize, usize)>,
  /// The messages of several results classed by a result about another file than the one
  /// their [`FileOperations::path_number`] names, and that file's number, ascending.
  paths_of_several: Vec<(usize, Option<usize>)>,
}

impl Classes {
  /// The number of messages classified.
  pub fn len(&self) -> usize {
    self.compact.len()
  }

  /// Whether no message was classified.
  pub fn is_empty(&self) -> bool {
    self.compact.is_empty()
  }

  /// The priority of message `i` (`None` past the end).
  pub fn priority(&self, i: usize) -> Option<ContentPriority> {
    self.compact.get(i).map(|c| c.priority)
  }

  /// Every message's [`Classification`], as [`classify_with_operations`] gives them: `conv`
  /// and `operations` must be those the classes were made from.
  pub fn classifications(
    &self,
    conv: &Conversation<'_>,
    operations: &FileOperations,
  ) -> Vec<Classification> {
    let mut superseded = self.superseded_by.iter().peekable();
    let mut several = self.paths_of_several.iter().peekable();
    self
      .compact
      .iter()
      .enumerate()
      .map(|(i, class)| {
        let number = match several.next_if(|(at, _)| *at == i) {
          Some(&(_, n)) => n,
          None => operations.path_number(i),
        };
        let path = number.map(|n| Arc::clone(operations.path(n)));
        let by = superseded.next_if(|(at, _)| *at == i).map(|&(_, by)| by);
        class.classification(conv.tokens(i), conv.step(i), conv.age(i), path, by)
      })
      .collect()
  }
}

/// [`classify_with_operations`], held compact ([`Classes`]).
pub fn classes_with_operations(
  conv: &Conversation<'_>,
  operations: &FileOperations,
  modified: Modified<'_>,
  options: &ClassifyOptions,
) -> Classes {
  let task = current_task(conv, options);
  let messages = conv.messages();
  // Each path once, by its number: whether it was modified, and its last change (not a read).
  let paths = operations.paths();
  let mut is_modified: Vec<Option<bool>> = vec![None; paths];
  // Where: the message, and the result's part in a message of several (results of parallel
  // calls follow one another in the order of their parts, as one message each would).
  let mut last_change: Vec<Option<(usize, usize)>> = vec![None; paths];
  // The last change tried, failed or not.
  let mut last_attempt: Vec<Option<(usize, usize)>> = vec![None; paths];
  for (i, op, n) in operations.each() {
    let kind = op.effective_kind();
    match modified {
      Modified::InSession => {
        if kind.modifies() {
          is_modified[n] = Some(true);
        }
      }
      Modified::By(says) => {
        if is_modified[n].is_none() {
          is_modified[n] = Some(says(&op.path));
        }
      }
    }
    if kind != FileOpKind::Read {
      last_change[n] = Some((i, op.part.unwrap_or(0)));
    }
    if op.kind.modifies() {
      last_attempt[n] = Some((i, op.part.unwrap_or(0)));
    }
  }
  // The class of message `i` as a result about `op` (numbered `n`), or about no file.
  let class_of = |i: usize, op: Option<(&FileOp, usize)>| {
    let m = &messages[i];
    let modified = op.map(|(_, n)| is_modified[n] == Some(true));
    let mut c = classify_known(m, conv.shape(i), modified, conv.age(i), task == Some(i), options);
    if let Some((op, n)) = op {
      let changed_later = last_change[n].is_some_and(|l| l > (i, op.part.unwrap_or(0)));
      as_of_later_changes(&mut c, op, changed_later, conv.age(i), options);
      let last_tried = last_attempt[n] == Some((i, op.part.unwrap_or(0)));
      as_pending_change(&mut c, op, last_tried);
    }
    c
  };
  // A result that a newer one supersedes shows what is no longer so: stale, whatever its file.
  let stale = |c: &mut Compact| {
    if c.priority > ContentPriority::StaleToolOutputs
      && c.priority <= ContentPriority::ModifiedFiles
    {
      c.priority = ContentPriority::StaleToolOutputs;
      c.flags |= Compact::AGE;
    }
  };
  let superseded = superseded_by_result(conv, operations, &ToolNames::default());
  // A message of several results (parallel calls) is classed as the most important of them,
  // each classed as it would be in a message of its own (superseded included); the path it
  // names is that one's, and so is the newer result it names if that one is superseded.
  let mut paths_of_several = Vec::new();
  let mut superseded_by = Vec::with_capacity(superseded.len());
  let mut pairs = superseded.iter().peekable();
  let mut several = operations.answering_several().iter().peekable();
  let mut classes: Vec<Compact> = Vec::with_capacity(messages.len());
  for (i, m) in messages.iter().enumerate() {
    if several.next_if(|(at, _)| *at == i).is_none() {
      let op = operations.operations()[i].as_ref().zip(operations.path_number(i));
      let mut c = class_of(i, op);
      if let Some(&(_, _, by)) = pairs.next_if(|(at, _, _)| *at == i) {
        stale(&mut c);
        superseded_by.push((i, by));
      }
      classes.push(c);
      continue;
    }
    let ops = operations.of_message(i);
    let mut best: Option<(Compact, Option<usize>, Option<usize>)> = None;
    for r in m.several_results() {
      let op = ops.iter().find(|(op, _)| op.part == Some(r.part)).copied();
      let mut c = class_of(i, op);
      let by = pairs.next_if(|(at, part, _)| *at == i && *part == Some(r.part)).map(|p| p.2);
      if by.is_some() {
        stale(&mut c);
      }
      if best.is_none_or(|(b, _, _)| c.priority > b.priority) {
        best = Some((c, op.map(|(_, n)| n), by));
      }
    }
    // Pairs of results the loop did not reach (none, in a message its parts describe).
    while pairs.next_if(|(at, _, _)| *at == i).is_some() {}
    let (c, n, by) = best.unwrap_or_else(|| (class_of(i, None), None, None));
    if n.is_some() && n != operations.path_number(i) {
      paths_of_several.push((i, n));
    }
    if let Some(by) = by.filter(|_| c.priority == ContentPriority::StaleToolOutputs) {
      superseded_by.push((i, by));
    }
    classes.push(c);
  }
  // One pair per superseded result, ascending: what Classes::classifications reads in order.
  debug_assert!(superseded_by.windows(2).all(|w| w[0].0 < w[1].0));
  for unit in conv.units() {
    let Some((&first, results)) = unit.members.split_first() else { continue };
    let caller = conv.shape(first);
    if !caller.has_tool_calls() || caller.is_summary() {
      continue;
    }
    if let Some(top) = results.iter().filter_map(|&i| classes.get(i).map(|c| c.priority)).max() {
      if let Some(c) = classes.get_mut(first) {
        c.priority = top;
      }
    }
  }
  Classes { compact: classes, superseded_by, paths_of_several }
}

/// The class `c` of a result about `op` as the file's later changes leave it.
///
/// A view of a file is what an agent edits against, however old it is: a read that no later
/// change of its file follows stays a recent read. A later read leaves it a view unless it
/// covers it (a range, a `grep`, a `head` shows part of the file: the agent still copies the
/// rest from the older view); a read the later one covers is superseded, made stale by the
/// caller. And "modified files" is the latest content of each modified file: a result about one
/// that a later change of the file follows no longer shows it. A view stays a view the agent
/// may copy from (what the change left alone), a recent read but not a protected one; a change
/// is then one step of the work like any other tool result (rule 6).
fn as_of_later_changes(
  c: &mut Compact,
  op: &FileOp,
  changed_later: bool,
  age: usize,
  options: &ClassifyOptions,
) {
  if !changed_later {
    if op.kind == FileOpKind::Read && !op.failed && c.priority == ContentPriority::StaleToolOutputs
    {
      c.priority = ContentPriority::RecentFileReads;
    }
  } else if c.priority == ContentPriority::ModifiedFiles {
    c.priority = if op.effective_kind() == FileOpKind::Read || op.shows_view {
      ContentPriority::RecentFileReads
    } else {
      other_result(age, options)
    };
    c.flags |= Compact::AGE;
  }
}

/// The class `c` of a failed change of a file (a refused `Write`, an `apply_patch` that did not
/// apply) that is the last change tried on that file (`last_tried`): a recent read, however old,
/// since its call holds the change the agent still means to make and will send again (Claude
/// Code reads the file and writes the same content after "File has not been read yet"; Codex
/// re-sends a patch with the context corrected). A later change of the file, failed or not,
/// ends it (docs/history/recall-rounds.md, seventh round).
fn as_pending_change(c: &mut Compact, op: &FileOp, last_tried: bool) {
  if op.failed && op.kind.modifies() && last_tried && c.priority < ContentPriority::RecentFileReads
  {
    c.priority = ContentPriority::RecentFileReads;
    c.flags |= Compact::AGE;
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::analysis::supersession::superseded_pairs;
  use crate::model::tokens::Encoding;
  use crate::testing::{call, result, user};
  use ContentPriority::*;

  /// A superseded result names the first later result that supersedes it, as the supersessions
  /// say, on every transcript; the compact classes give the classifications' priorities.
  #[test]
  fn a_superseded_result_names_the_result_that_supersedes_it() {
    let mut named = 0;
    for (name, messages) in crate::testing::transcripts() {
      let conv = Conversation::new(&messages, Encoding::O200kBase);
      let classes = classify_conversation(&conv, None, &ClassifyOptions::default());
      let mut want = vec![None; messages.len()];
      for (index, by) in superseded_pairs(&conv, &ToolNames::default()) {
        want[index] = Some(by);
      }
      let got: Vec<Option<usize>> = classes.iter().map(|c| c.metadata.superseded_by).collect();
      assert_eq!(got, want, "{name}");
      named += want.iter().flatten().count();
      let (compact, _) = conversation_classes(&conv, None, &ClassifyOptions::default());
      assert_eq!(compact.len(), classes.len());
      assert!(classes.iter().enumerate().all(|(i, c)| compact.priority(i) == Some(c.priority)));
    }
    assert!(named > 10, "only {named} superseded results");
  }

  fn priorities(msgs: &[Message], options: &ClassifyOptions) -> Vec<ContentPriority> {
    let conv = Conversation::new(msgs, Encoding::O200kBase);
    classify_conversation(&conv, None, options).into_iter().map(|c| c.priority).collect()
  }

  #[test]
  fn priorities_have_the_seeds_values_and_order() {
    let values: Vec<u32> = ContentPriority::ALL.iter().map(|p| p.value()).collect();
    assert_eq!(values, vec![20, 30, 40, 50, 60, 70, 80, 90, 100]);
    assert!(ContentPriority::ALL.iter().enumerate().all(|(rank, p)| p.rank() == rank));
    assert!(ContentPriority::ALL.windows(2).all(|w| w[0] < w[1]));
    let protected: Vec<&str> =
      ContentPriority::ALL.iter().filter(|p| p.is_protected()).map(|p| p.name()).collect();
    assert_eq!(protected, vec!["MODIFIED_FILES", "CURRENT_TASK", "AGENT_INSTRUCTIONS", "SYSTEM"]);
  }

  #[test]
  fn every_rule_in_order() {
    let mut summary = user("earlier we did x");
    summary.is_summary = true;
    let mut named = user("Use tabs.");
    named.name = Some("agents.md".into());
    let msgs = vec![
      Message::text(Role::System, "s"),    // 0 SYSTEM
      Message::text(Role::Developer, "d"), // 1 SYSTEM
      named,                               // 2 AGENT (name)
      user("  # AGENTS.md instructions for /repo\n<INSTRUCTIONS>"), // 3 AGENT (marker)
      user("<repo_rules>be nice</repo_rules>"), // 4 AGENT (custom)
      summary,                             // 5 SUMMARIZED
      user("Fix the bug"),                 // 6 CURRENT_TASK
      Message::text(Role::Assistant, "Looking."), // 7 step 0: old turn
      call("1", "read_file", r#"{"path":"/a"}"#), // 8 step 1
      result("1", "aaa"),                  // 9 old, but /a's newest view: a recent read
      call("2", "execute_bash", r#"{"command":"ls"}"#), // 10 step 2
      result("2", "x y"),                  // 11 stale output
      call("3", "edit_file", r#"{"path":"/b"}"#), // 12 step 3
      result("3", "ok"),                   // 13 superseded by 15
      call("4", "read_file", r#"{"path":"/b"}"#), // 14 step 4
      result("4", "bbb"),                  // 15 modified (read of /b)
      Message::text(Role::Assistant, "Hm."), // 16 step 4: recent turn
      call("5", "read_file", r#"{"path":"/c"}"#), // 17 step 5, age 2
      result("5", "ccc"),                  // 18 recent read
      call("6", "execute_bash", r#"{"command":"ls"}"#), // 19 step 6
      result("6", "x"),                    // 20 recent output
      Message::text(Role::Assistant, "done"), // 21 recent turn
      call("7", "execute_bash", "{}"),     // 22 step 7, no result: a turn
    ];
    let options = ClassifyOptions {
      recent_threshold: 2,
      preserve_recent_turns: 3,
      agent_markers: vec!["<REPO_RULES>".into()],
    };
    assert_eq!(
      priorities(&msgs, &options),
      vec![
        System,
        System,
        AgentInstructions,
        AgentInstructions,
        AgentInstructions,
        Summarized,
        CurrentTask,
        OldHistory,
        RecentFileReads,
        RecentFileReads,
        StaleToolOutputs,
        StaleToolOutputs,
        // The edit of /b is superseded by the newer read of /b: stale, not protected.
        StaleToolOutputs,
        StaleToolOutputs,
        ModifiedFiles,
        ModifiedFiles,
        RecentTurns,
        RecentFileReads,
        RecentFileReads,
        RecentTurns,
        RecentTurns,
        RecentTurns,
        RecentTurns,
      ]
    );
  }

  /// Claude Code: a refused write changed nothing, so the view before it stays; an edit whose
  /// result shows the edited lines stays a view of them after a later edit elsewhere in the
  /// file (the agent copies its next `old_string` from it), until a read covering it follows.
  #[test]
  fn a_refused_write_changes_nothing_and_an_edit_snippet_stays_a_view() {
    let read = |id: &str| call(id, "Read", r#"{"file_path":"/r/a.ts"}"#);
    let edit =
      |id: &str| call(id, "Edit", r#"{"file_path":"/r/a.ts","old_string":"a","new_string":"b"}"#);
    let snippet = |first: usize| {
      let lines: Vec<String> = (first..first + 3).map(|n| format!("{n:>6}→line {n}")).collect();
      format!(
        "The file /r/a.ts has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{}",
        lines.join("\n")
      )
    };
    let refused = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
    let msgs = vec![
      user("task"),
      read("1"),                                                      // 1
      result("1", "     1→a\n     2→b"),                              // 2 the view of a.ts
      call("2", "Write", r#"{"file_path":"/r/a.ts","content":"x"}"#), // 3
      result("2", refused),                                           // 4 refused: not a change
      edit("3"),                                                      // 5
      result("3", &snippet(10)), // 6 lines 10-12, changed again at 8
      edit("4"),                 // 7
      result("4", &snippet(40)), // 8 the latest change
      call("5", "Bash", r#"{"command":"npm test"}"#), // 9
      result("5", "ok"),         // 10
      call("6", "Bash", r#"{"command":"npm run lint"}"#), // 11
      result("6", "ok"),         // 12
      call("7", "Bash", r#"{"command":"git diff"}"#), // 13
      result("7", "diff"),       // 14
    ];
    let options = ClassifyOptions { recent_threshold: 2, ..ClassifyOptions::default() };
    let got = priorities(&msgs, &options);
    // The read is not superseded by the refused write: a view, changed later.
    assert_eq!(got[2], RecentFileReads);
    // The older edit's snippet is a view of lines 10-12; without it, a stale tool exchange.
    assert_eq!(got[6], RecentFileReads);
    assert_eq!(got[8], ModifiedFiles);
    let mut plain = msgs.clone();
    plain[6] = result("3", "The file /r/a.ts has been updated.");
    assert_eq!(priorities(&plain, &options)[6], StaleToolOutputs);
    // A whole read afterwards covers both snippets: they are stale.
    let mut reread = msgs.clone();
    reread.extend([read("8"), result("8", "     1→a")]);
    let got = priorities(&reread, &options);
    assert_eq!((got[6], got[8]), (StaleToolOutputs, StaleToolOutputs));
  }

  /// A refused change that is the last change tried on its file holds what the agent will send
  /// again: a recent read however old, until another change of the file is tried.
  #[test]
  fn a_refused_change_stays_recent_until_another_change_of_its_file_is_tried() {
    let refused = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
    let write = |id: &str, path: &str| {
      call(id, "Write", &format!(r#"{{"file_path":"{path}","content":"draft {id}"}}"#))
    };
    let bash = |id: &str| call(id, "Bash", r#"{"command":"npm test"}"#);
    let mut msgs = vec![user("task"), write("1", "/r/a.ts"), result("1", refused)];
    for k in 2..8 {
      msgs.extend([bash(&k.to_string()), result(&k.to_string(), "ok")]);
    }
    let options = ClassifyOptions { recent_threshold: 2, ..ClassifyOptions::default() };
    // Seven steps old, it is still the change the agent means to make.
    assert_eq!(priorities(&msgs, &options)[2], RecentFileReads);
    // A newer refused write of the file takes over; an older one is a stale exchange.
    let mut again = msgs.clone();
    again.extend([write("8", "/r/a.ts"), result("8", refused)]);
    for k in 9..13 {
      again.extend([bash(&k.to_string()), result(&k.to_string(), "ok")]);
    }
    let got = priorities(&again, &options);
    assert_eq!((got[2], got[16]), (StaleToolOutputs, RecentFileReads));
    // A change of another file leaves it be.
    let mut other = msgs.clone();
    other.extend([write("8", "/r/b.ts"), result("8", "File created successfully at: /r/b.ts")]);
    assert_eq!(priorities(&other, &options)[2], RecentFileReads);
  }

  #[test]
  fn a_view_stays_recent_until_its_file_changes_or_a_covering_read_follows() {
    let bash = |id: &str, command: &str| call(id, "bash", &format!(r#"{{"command":"{command}"}}"#));
    let msgs = vec![
      user("task"),
      bash("1", "cat src/a.py"),            // 1 step 0
      result("1", "whole of a"),            // 2 a view of a.py, partial reads after it
      bash("2", "sed -n '5,9p' src/a.py"),  // 3
      result("2", "part of a"),             // 4
      bash("3", "grep -n def src/a.py"),    // 5
      result("3", "5:def f"),               // 6
      bash("4", "cat src/b.py"),            // 7
      result("4", "old b"),                 // 8 covered by the read at 10
      bash("5", "cat src/b.py"),            // 9
      result("5", "b"),                     // 10
      bash("6", "cat src/c.py"),            // 11
      result("6", "c"),                     // 12 stale: c.py is rewritten at 13/14
      bash("7", "cat > src/c.py << 'EOF'"), // 13
      result("7", ""),                      // 14
      bash("8", "ls"),                      // 15
      result("8", "x"),                     // 16
      bash("9", "ls"),                      // 17
      result("9", "x"),                     // 18
      bash("10", "ls"),                     // 19
      result("10", "x"),                    // 20
    ];
    let p = priorities(&msgs, &ClassifyOptions::default());
    assert_eq!(p[2], RecentFileReads, "the whole view outlives the range read and the grep");
    assert_eq!(p[4], RecentFileReads);
    assert_eq!(p[8], StaleToolOutputs, "a whole read covers the older one");
    assert_eq!(p[10], RecentFileReads);
    assert_eq!(p[12], StaleToolOutputs, "its file was written since");
    assert_eq!(p[14], ModifiedFiles);
  }

  #[test]
  fn modified_files_are_the_latest_content_of_each_modified_file() {
    let edit = |id: &str, path: &str| call(id, "str_replace", &format!(r#"{{"path":"{path}"}}"#));
    let read = |id: &str, path: &str| call(id, "read_file", &format!(r#"{{"path":"{path}"}}"#));
    let ls = |id: &str| call(id, "bash", r#"{"command":"ls"}"#);
    let msgs = vec![
      user("task"),
      read("1", "/a.rs"),          // 1 step 0
      result("1", "a v1"),         // 2 a view of a.rs, changed at 4 since
      edit("2", "/a.rs"),          // 3
      result("2", "edited"),       // 4 a change of a.rs, changed again at 6 since
      edit("3", "/a.rs"),          // 5
      result("3", "edited again"), // 6 the latest change of a.rs
      edit("5", "/b.rs"),          // 7
      result("5", "edited b"),     // 8 the only change of b.rs
      read("4", "/b.rs"),          // 9
      result("4", "b v2"),         // 10 a view of b.rs's latest content
      ls("6"),
      result("6", "x"),
      ls("7"),
      result("7", "x"),
      ls("8"),
      result("8", "x"),
    ];
    let p = priorities(&msgs, &ClassifyOptions::default());
    assert_eq!(p[2], RecentFileReads, "a view older than a change: a view, not protected");
    assert_eq!(p[4], StaleToolOutputs, "an old change a later one followed: a tool exchange");
    assert_eq!(p[3], StaleToolOutputs, "its call with it");
    assert_eq!(p[6], ModifiedFiles);
    assert_eq!(p[10], ModifiedFiles);
    // A recent change that a later one followed is a recent turn.
    let p = priorities(&msgs[..9], &ClassifyOptions::default());
    assert_eq!(p[4], RecentTurns);
  }

  #[test]
  fn metadata_follows_the_seed() {
    let msgs = vec![
      Message::text(Role::System, "s"),
      user("task"),
      call("1", "edit_file", r#"{"path":"/b"}"#),
      result("1", "ok"),
      call("2", "read_file", r#"{"path":"/c"}"#),
      result("2", "c"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let c = classify_conversation(&conv, None, &ClassifyOptions::default());
    assert_eq!(c[0].metadata, Metadata { is_system: true, ..Metadata::default() });
    assert_eq!(c[1].metadata, Metadata { is_current_task: true, ..Metadata::default() });
    assert_eq!(
      c[3].metadata,
      Metadata { file_path: Some("/b".into()), was_modified: true, ..Metadata::default() }
    );
    assert_eq!(
      c[5].metadata,
      Metadata { file_path: Some("/c".into()), age: Some(0), ..Metadata::default() }
    );
    assert_eq!((c[5].step, c[5].tokens), (2, conv.tokens(5)));
    assert_eq!(c[2].metadata.age, Some(1));
  }

  #[test]
  fn a_given_tracker_decides_what_is_modified() {
    let msgs = vec![call("1", "read_file", r#"{"path":"/a"}"#), result("1", "aaa")];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut tracker = FileTracker::new();
    tracker.track_access("/a", 1, crate::analysis::file_ops::FileOpKind::Edit, None, 0.0);
    let c = classify_conversation(&conv, Some(&tracker), &ClassifyOptions::default());
    assert_eq!(c[1].priority, ModifiedFiles);
    let c = classify_conversation(&conv, None, &ClassifyOptions::default());
    assert_eq!(c[1].priority, RecentFileReads);
  }

  #[test]
  fn the_task_is_not_an_injection_or_a_summary_after_it() {
    let options = ClassifyOptions::default();
    let msgs = vec![user("the task"), user("# AGENTS.md\nrules")];
    assert_eq!(priorities(&msgs, &options), vec![CurrentTask, AgentInstructions]);
    let mut summary = user("sum");
    summary.is_summary = true;
    let msgs = vec![Message::text(Role::System, "s"), summary.clone()];
    assert_eq!(priorities(&msgs, &options), vec![System, Summarized]);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(current_task(&conv, &options), None);
    // An assistant or tool message is never agent instructions, whatever it says.
    assert!(!is_agent_instruction(&Message::text(Role::Assistant, "# AGENTS.md"), &[]));
    assert!(!is_agent_instruction(&result("1", "# AGENTS.md"), &[]));
    assert!(!is_agent_instruction(&user("see # AGENTS.md"), &[]));
    assert!(!is_agent_instruction(&user("x"), &[String::new()]));
  }

  /// Parallel calls answered in one message (Anthropic) are classed as the same calls answered
  /// one message each (OpenAI) are as a unit: the message takes its most important result's
  /// priority and names that result's file, whatever the order of the results, and a failed
  /// result beside a read does not make the read a failure.
  #[test]
  fn a_message_of_several_results_is_classed_as_its_most_important_result() {
    let options = ClassifyOptions::default();
    let anthropic = crate::testing::parallel_results();
    let openai = crate::testing::parallel_results_openai();
    let classes = |msgs: &[Message]| {
      classify_conversation(&Conversation::new(msgs, Encoding::O200kBase), None, &options)
    };
    let (a, o) = (classes(&anthropic), classes(&openai));
    // Anthropic message -> the OpenAI messages that hold the same content.
    let same = [
      (0, &[0][..]),
      (1, &[1]),
      (2, &[2, 3]),
      (3, &[4]),
      (4, &[5, 6]),
      (5, &[7]),
      (6, &[8, 9]),
      (7, &[10]),
    ];
    for (i, split) in same {
      let top = split.iter().map(|&k| o[k].priority).max();
      assert_eq!(Some(a[i].priority), top, "message {i}");
    }
    assert_eq!(a[4].priority, ModifiedFiles);
    assert_eq!(a[4].metadata.file_path.as_deref(), Some("src/c.ts"));
    assert_eq!(a[2].priority, o[2].priority);
    assert_eq!(a[2].metadata.file_path.as_deref(), Some("src/a.ts"));
    assert_eq!(a[6].metadata.file_path, None, "the test output outranks the read");
    // The same with each step's results in the other order.
    let mut swapped = anthropic.clone();
    for i in [2, 4, 6] {
      if let crate::model::message::Content::Parts(parts) = &mut swapped[i].content {
        parts.reverse();
      }
      swapped[i].answers.reverse();
    }
    let s = classes(&swapped);
    let priorities = |c: &[Classification]| c.iter().map(|c| c.priority).collect::<Vec<_>>();
    assert_eq!(priorities(&s), priorities(&a));
    assert_eq!(s[4].metadata.file_path.as_deref(), Some("src/c.ts"));
  }
}
