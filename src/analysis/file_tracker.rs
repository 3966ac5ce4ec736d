//! Which files a session touched, when, and whether it changed them.
//!
//! A [`FileTracker`] holds one [`FileReference`] per path: its last access (step and time),
//! whether any access modified it, and a preview of the last content seen. It is built from a
//! conversation with [`FileTracker::from_conversation`] (file operations as
//! [`crate::analysis::file_ops`] finds them) or filled by hand with [`FileTracker::track_access`].
//!
//! The tracker never reads a clock: the caller passes the time of every access, so results are
//! the same on every run.

use std::collections::HashMap;

use crate::analysis::file_ops::{numbered_file_operations, FileOpKind, FileOperations};
use crate::model::conversation::Conversation;

/// How many characters of content a reference keeps as its preview.
pub const PREVIEW_CHARS: usize = 200;

/// What the tracker knows about one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileReference {
  /// The file's path.
  pub path: String,
  /// The step of the last access.
  pub last_access_step: usize,
  /// The time of the last access, as the caller's clock gave it (milliseconds by convention).
  pub last_access_time: f64,
  /// Whether any access so far created, edited or deleted the file.
  pub was_modified: bool,
  /// The last operation.
  pub operation: FileOpKind,
  /// The first [`PREVIEW_CHARS`] characters of the last access's content, if it had any.
  pub content_preview: Option<String>,
  /// The number of lines of the last access's content (newlines + 1), if it had any.
  pub line_count: Option<usize>,
}

/// The files a session touched, in the order they were first touched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileTracker {
  references: Vec<FileReference>,
  /// Path -> index in `references` (lookups only; iteration goes through `references`).
  index: HashMap<String, usize>,
}

impl FileTracker {
  /// An empty tracker.
  pub fn new() -> Self {
    Self::default()
  }

  /// Records an access to `path` at `step` and `time`: the reference is replaced, except that a
  /// file once modified stays modified, and it keeps its place in first-access order.
  pub fn track_access(
    &mut self,
    path: &str,
    step: usize,
    operation: FileOpKind,
    content: Option<&str>,
    time: f64,
  ) {
    let preview = content.map(|c| Preview {
      text: c.chars().take(PREVIEW_CHARS).collect(),
      line_count: c.matches('\n').count() + 1,
    });
    self.record(path, step, operation, preview, time);
  }

  /// [`FileTracker::track_access`] with the content's preview and line count already known.
  fn record(
    &mut self,
    path: &str,
    step: usize,
    operation: FileOpKind,
    preview: Option<Preview>,
    time: f64,
  ) {
    let (line_count, content_preview) = match preview {
      Some(p) => (Some(p.line_count), Some(p.text)),
      None => (None, None),
    };
    if let Some(&i) = self.index.get(path) {
      let r = &mut self.references[i];
      r.last_access_step = step;
      r.last_access_time = time;
      r.was_modified |= operation.modifies();
      r.operation = operation;
      r.line_count = line_count;
      r.content_preview = content_preview;
      return;
    }
    self.index.insert(path.to_string(), self.references.len());
    self.references.push(FileReference {
      path: path.to_string(),
      last_access_step: step,
      last_access_time: time,
      was_modified: operation.modifies(),
      operation,
      line_count,
      content_preview,
    });
  }

  /// Whether `path` was modified in this session.
  pub fn was_modified(&self, path: &str) -> bool {
    self.get(path).is_some_and(|r| r.was_modified)
  }

  /// The reference of `path`, if it was accessed.
  pub fn get(&self, path: &str) -> Option<&FileReference> {
    self.index.get(path).map(|&i| &self.references[i])
  }

  /// Every reference, in first-access order.
  pub fn references(&self) -> &[FileReference] {
    &self.references
  }

  /// The paths of the modified files, in first-access order.
  pub fn modified_files(&self) -> Vec<&str> {
    self.references.iter().filter(|r| r.was_modified).map(|r| r.path.as_str()).collect()
  }

  /// Whether the last access to `path` is more than `max_age` steps before `current_step`
  /// (a file never accessed is stale).
  pub fn is_stale(&self, path: &str, current_step: usize, max_age: usize) -> bool {
    match self.get(path) {
      None => true,
      Some(r) => current_step.saturating_sub(r.last_access_step) > max_age,
    }
  }

  /// The files accessed at most `max_age` steps before `current_step`, newest first (ties in
  /// first-access order).
  pub fn recent_files(&self, current_step: usize, max_age: usize) -> Vec<&FileReference> {
    let mut recent: Vec<&FileReference> = self
      .references
      .iter()
      .filter(|r| current_step.saturating_sub(r.last_access_step) <= max_age)
      .collect();
    recent.sort_by_key(|r| std::cmp::Reverse(r.last_access_step));
    recent
  }

  /// The number of files tracked.
  pub fn len(&self) -> usize {
    self.references.len()
  }

  /// Whether no file was tracked.
  pub fn is_empty(&self) -> bool {
    self.references.is_empty()
  }

  /// Builds a tracker from a conversation's file operations, every access stamped with `time`.
  ///
  /// Steps follow the seed: an assistant message with tool calls starts a new step and a tool
  /// result has the step of its call ([`Conversation::step`]). The content recorded is the
  /// result's text (of a message holding several results, that result's own). A modification
  /// whose result reports failure is recorded as a read: the file was looked at, not changed.
  pub fn from_conversation(conv: &Conversation<'_>, time: f64) -> Self {
    Self::from_operations(conv, &numbered_file_operations(conv), time)
  }

  /// [`FileTracker::from_conversation`] with the file operations already found.
  pub fn from_operations(conv: &Conversation<'_>, operations: &FileOperations, time: f64) -> Self {
    let mut tracker = FileTracker::new();
    // The operation of each reference's last access: only those previews are ever kept, so
    // they are made once at the end rather than for every access.
    let mut last: Vec<(usize, Option<usize>)> = Vec::new();
    for (i, op, _) in operations.each() {
      tracker.record(&op.path, conv.step(i), op.effective_kind(), None, time);
      let r = tracker.index.get(op.path.as_str()).copied().unwrap_or(usize::MAX);
      if r == last.len() {
        last.push((i, op.part));
      } else if let Some(slot) = last.get_mut(r) {
        *slot = (i, op.part);
      }
    }
    for (r, &(i, part)) in tracker.references.iter_mut().zip(&last) {
      let Some(message) = conv.messages().get(i) else { continue };
      match part.and_then(|p| message.result_text(p)) {
        Some(text) => {
          r.content_preview = Some(text.chars().take(PREVIEW_CHARS).collect());
          r.line_count = Some(text.matches('\n').count() + 1);
        }
        None => {
          r.content_preview = Some(message.preview(PREVIEW_CHARS));
          r.line_count = Some(message.line_count());
        }
      }
    }
    tracker
  }
}

/// The start of a content and its line count, as a [`FileReference`] keeps them.
struct Preview {
  text: String,
  line_count: usize,
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::testing::{call, named_result, result};

  #[test]
  fn tracks_modified_files_correctly() {
    let mut t = FileTracker::new();
    t.track_access("/app/file.ts", 1, FileOpKind::Read, None, 0.0);
    assert!(!t.was_modified("/app/file.ts"));
    t.track_access("/app/file.ts", 2, FileOpKind::Edit, None, 5.0);
    t.track_access("/app/file.ts", 3, FileOpKind::Read, Some("a\nb"), 9.0);
    assert!(t.was_modified("/app/file.ts"), "a modified file stays modified");
    assert!(!t.was_modified("/app/other.ts"));
    let r = t.get("/app/file.ts").unwrap();
    assert_eq!((r.last_access_step, r.last_access_time, r.operation), (3, 9.0, FileOpKind::Read));
    assert_eq!((r.content_preview.as_deref(), r.line_count), (Some("a\nb"), Some(2)));
  }

  #[test]
  fn recent_files_are_newest_first_and_staleness_counts_steps() {
    let mut t = FileTracker::new();
    t.track_access("a", 1, FileOpKind::Read, None, 0.0);
    t.track_access("b", 4, FileOpKind::Create, None, 0.0);
    t.track_access("c", 4, FileOpKind::Read, None, 0.0);
    t.track_access("d", 3, FileOpKind::Delete, None, 0.0);
    t.track_access("a", 5, FileOpKind::Read, Some(&"x".repeat(300)), 0.0);
    let recent: Vec<&str> = t.recent_files(5, 1).iter().map(|r| r.path.as_str()).collect();
    assert_eq!(recent, vec!["a", "b", "c"]);
    assert_eq!(t.modified_files(), vec!["b", "d"]);
    assert!(t.is_stale("d", 5, 1) && !t.is_stale("d", 5, 2) && t.is_stale("zzz", 0, 9));
    assert!(!t.is_stale("a", 2, 0), "a step after the current one is not stale");
    assert_eq!(t.get("a").unwrap().content_preview.as_ref().map(|p| p.len()), Some(PREVIEW_CHARS));
    assert_eq!(t.references().len(), 4);
  }

  #[test]
  fn builds_from_message_history() {
    let msgs = vec![
      named_result("create_file", r#"{"path": "/app/new.ts"}"#),
      named_result("read_file", r#"{"path": "/app/existing.ts"}"#),
    ];
    let t = FileTracker::from_conversation(&Conversation::new(&msgs, Encoding::O200kBase), 7.0);
    assert!(t.was_modified("/app/new.ts"));
    assert!(!t.was_modified("/app/existing.ts"));
    assert_eq!(t.get("/app/new.ts").unwrap().last_access_time, 7.0);
  }

  #[test]
  fn steps_follow_calls_and_failed_edits_are_reads() {
    let call = |id: &str, args: &str| call(id, "str_replace_editor", args);
    let msgs = vec![
      Message::text(Role::User, "task"),
      call("1", r#"{"command":"view","path":"/w/a"}"#),
      result("1", "Here's the result of running `cat -n` on /w/a:\n1\tx"),
      call("2", r#"{"command":"str_replace","path":"/w/a"}"#),
      result("2", "ERROR:\nNo replacement was performed"),
      call("3", r#"{"command":"create","path":"/w/b"}"#),
      result("3", "File created successfully at: /w/b"),
    ];
    let t = FileTracker::from_conversation(&Conversation::new(&msgs, Encoding::O200kBase), 0.0);
    let a = t.get("/w/a").unwrap();
    assert_eq!((a.last_access_step, a.operation, a.was_modified), (2, FileOpKind::Read, false));
    assert_eq!(t.get("/w/b").unwrap().last_access_step, 3);
    assert_eq!(t.modified_files(), vec!["/w/b"]);
  }

  /// Parallel calls answered in one message: every result about a file is tracked, each with
  /// its own content as the preview; a failed read beside a successful one leaves the other
  /// tracked.
  #[test]
  fn every_result_of_a_message_is_tracked_with_its_own_preview() {
    let msgs = crate::testing::parallel_results();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = FileTracker::from_conversation(&conv, 0.0);
    let paths: Vec<&str> = t.references().iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["src/a.ts", "src/b.ts", "src/x.ts", "src/c.ts", "src/d.ts"]);
    assert_eq!(t.modified_files(), ["src/c.ts"]);
    let a = t.get("src/a.ts").unwrap();
    assert_eq!(
      (a.line_count, a.content_preview.as_deref().map(|p| p.starts_with("A line 0"))),
      (Some(40), Some(true))
    );
    assert!(!a.content_preview.as_deref().unwrap_or("").contains("ENOENT"));
    let c = t.get("src/c.ts").unwrap();
    assert_eq!(c.content_preview.as_deref(), Some("Edited src/c.ts"));
    assert_eq!((c.line_count, c.last_access_step), (Some(1), 2));
    let d = t.get("src/d.ts").unwrap();
    assert_eq!((d.line_count, d.operation), (Some(20), FileOpKind::Read));
  }
}
