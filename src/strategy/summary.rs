//! Summaries of dropped messages: extractive, deterministic, bounded, and foldable.
//!
//! [`Digest::extract`] reads the messages a strategy dropped and keeps, as one-line items in
//! fixed [`Section`]s, what an agent would otherwise do again: the user requests, the files it
//! created, edited, deleted and read ([`crate::analysis::file_ops`]), the commands it ran with their exit
//! status, the errors it saw ([`crate::analysis::detect`]), and the short sentences in which it stated a
//! decision or a finding. [`Digest::render`] writes them in a stable layout that starts with
//! [`crate::model::message::SUMMARY_MARKER`], bounded by a token budget; [`Digest::parse`] reads that
//! layout back, so that a later trim that drops a summary folds it into the new one.
//!
//! # The layout
//!
//! ```text
//! [context-trim summary] Earlier messages were removed to fit the context window. What they contained:
//! User requests:
//! - Fix the failing test in src/a.rs
//! Files edited:
//! - /repo/src/a.rs
//! Commands run (3 earlier left out):
//! - `cargo test` → exit 101
//! ```
//!
//! The header line, then each non-empty section in the order of [`Section::ALL`]: its heading
//! (with ` (N earlier left out)` when items were cut), then its items, one `- ` line each, in
//! the order of the messages they come from. An item identical to an earlier item of its section
//! is not repeated.
//!
//! # The rules
//!
//! For each dropped message, in order:
//! - a **summary** ([`Message::is_summary`]) in this layout is folded in: its items come first in
//!   their sections, its counts of left-out items add up; any other summary (an app's own, or a
//!   summarizer callback's text) becomes one `Earlier summary` item;
//! - a **user message** (not a tool result, not agent instructions) that opens a turn
//!   ([`Conversation::turn_openers`]) is a user request; one inside the agent's tool loop is a
//!   framework's feedback on the last action (OpenHands reports invalid tool arguments so) and is
//!   listed under `Errors` as `feedback: <first line>`;
//! - an **assistant message** gives at most [`MAX_NOTES_PER_MESSAGE`] notes: sentences of its
//!   text, outside fenced code blocks, of 16 to [`MAX_NOTE_CHARS`] characters and not ending
//!   with `:` (which announces a list or code), that start with one of [`NOTE_STARTS`] or
//!   contain one of [`NOTE_PHRASES`]. Sentences end at `.`, `!` or `?`
//!   followed by whitespace, and at line breaks. Sentences that only announce the next action
//!   (`Let's…`, `Let me…`, `Now…`) are not taken: the files and commands sections record the
//!   action itself. Its tool calls that no message answers are commands without a status;
//! - a **tool result** about a file ([`crate::analysis::file_ops::file_operation`]) that succeeded puts its
//!   path under the section of its kind; otherwise, when its call has a string argument
//!   `command`, `cmd` or `code` (and is not an editor's sub-command such as `view`), the command
//!   is listed on one line, with ` → exit N` when the output ends with an exit status
//!   ([`crate::analysis::detect::exit_status`]). A result that reports an error (flagged, a failed file
//!   operation, or [`crate::analysis::detect::is_error_output`]) is listed under `Errors` as
//!   `<command, or path, or tool>: <error line>`, the error line being the first line that
//!   reports it ([`crate::analysis::detect::first_error_line`]; after a bare `ERROR:` the next line too).
//!   When only a non-zero exit status reports it, the line before the status stands for it, and
//!   without such a line the command's `→ exit N` says it all.
//!
//! # The budget
//!
//! The rendered text has at most `max_tokens` tokens. When the digest does not fit, items are
//! left out one at a time, oldest first, from whichever [`Section::EXPENDABLE`] section (files
//! read, commands, notes, errors, earlier summaries) has the most items left; once those are
//! empty, from deleted, created and edited files, and the user requests last
//! ([`Section::DROP_ORDER`]). Each section says how many of its items were left out. If the
//! headings alone do not fit, whole sections go in the drop order. The same digest
//! always renders to the same text, and a digest that only grows keeps its earlier lines as long
//! as the budget holds them.

use std::collections::HashSet;

use serde_json::Value;

use crate::analysis::classify::is_agent_instruction;
use crate::analysis::detect::{exit_status, first_error_line, is_error_output};
use crate::analysis::file_ops::{
  editor_command, file_operation, file_operations_of, parse_object, FileOp, FileOpKind,
};
use crate::model::conversation::Conversation;
use crate::model::message::{Content, Message, Part, Role, SUMMARY_MARKER};
use crate::model::tokens::{count_tokens, Encoding};

/// The default bound of a summary, in tokens of its text.
pub const DEFAULT_MAX_SUMMARY_TOKENS: usize = 500;
/// The smallest bound a summary may be given: the header and a few lines.
pub const MIN_SUMMARY_TOKENS: usize = 64;
/// The first line of every summary.
pub const SUMMARY_HEADER: &str =
  "[context-trim summary] Earlier messages were removed to fit the context window. What they contained:";
/// Call arguments that hold a command, in order of preference.
pub const COMMAND_ARGUMENTS: &[&str] = &["command", "cmd", "code"];
/// How many notes one assistant message gives at most.
pub const MAX_NOTES_PER_MESSAGE: usize = 2;
/// The longest sentence kept as a note, in characters; longer ones are not cut but skipped.
pub const MAX_NOTE_CHARS: usize = 200;
/// Sentence starts that make a note (case-sensitive, after list markers): decisions and
/// findings.
pub const NOTE_STARTS: &[&str] = &[
  "I will ",
  "I'll ",
  "We will ",
  "We'll ",
  "I need to ",
  "We need to ",
  "I decided",
  "We decided",
  "To fix ",
  "The fix ",
  "The solution ",
  "Instead, ",
  "I am unable",
  "I'm unable",
  "The issue ",
  "The problem ",
  "The bug ",
  "The cause ",
  "The root cause ",
  "The error ",
  "It seems ",
  "It looks like ",
  "It appears ",
  "This means ",
  "This indicates ",
  "This suggests ",
  "I found ",
  "We found ",
  "I see that ",
  "I notice ",
  "Upon reviewing",
];
/// Phrases that make a note wherever they appear in a sentence: reported outcomes.
pub const NOTE_PHRASES: &[&str] =
  &[" has been ", " have been ", " is fixed", " was fixed", " now works", " now passes"];

/// The longest user request item, in characters.
const MAX_REQUEST_CHARS: usize = 300;
/// The longest command shown, in characters.
const MAX_COMMAND_CHARS: usize = 120;
/// The longest error line shown, in characters.
const MAX_ERROR_CHARS: usize = 160;
/// The longest command naming an error's source, in characters.
const MAX_ERROR_SOURCE_CHARS: usize = 60;
/// The longest path shown, in characters.
const MAX_PATH_CHARS: usize = 200;
/// The longest earlier summary kept as one item, in characters.
const MAX_EARLIER_SUMMARY_CHARS: usize = 600;
/// The shortest sentence kept as a note, in characters.
const MIN_NOTE_CHARS: usize = 16;

/// A section of a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
  /// Summaries that were not in this layout (an app's own, a summarizer callback's).
  EarlierSummary,
  /// User messages that opened a turn.
  UserRequests,
  /// Files created (or wholly written).
  FilesCreated,
  /// Files edited.
  FilesEdited,
  /// Files deleted.
  FilesDeleted,
  /// Files read.
  FilesRead,
  /// Commands run, with their exit status when shown.
  Commands,
  /// Errors seen, with their first line.
  Errors,
  /// The assistant's stated decisions and findings.
  Notes,
}

impl Section {
  /// Every section, in the order they are written.
  pub const ALL: [Section; 9] = [
    Section::EarlierSummary,
    Section::UserRequests,
    Section::FilesCreated,
    Section::FilesEdited,
    Section::FilesDeleted,
    Section::FilesRead,
    Section::Commands,
    Section::Errors,
    Section::Notes,
  ];

  /// The sections that lose items first when a summary is over its budget, one item at a time
  /// from whichever has the most items left (the first listed on a tie), oldest item first:
  /// files read (they can be read again), commands (they can be run again), notes, errors and
  /// earlier summaries.
  pub const EXPENDABLE: [Section; 5] = [
    Section::FilesRead,
    Section::Commands,
    Section::Notes,
    Section::Errors,
    Section::EarlierSummary,
  ];

  /// The order in which sections lose items once the [`Section::EXPENDABLE`] ones have none
  /// left, each emptied (oldest first) before the next: deleted, created and edited files, and
  /// the user requests last. It is also the order in which whole sections go when even their
  /// headings do not fit.
  pub const DROP_ORDER: [Section; 9] = [
    Section::FilesRead,
    Section::Commands,
    Section::Notes,
    Section::Errors,
    Section::EarlierSummary,
    Section::FilesDeleted,
    Section::FilesCreated,
    Section::FilesEdited,
    Section::UserRequests,
  ];

  /// The section's heading, without the colon.
  pub fn heading(self) -> &'static str {
    match self {
      Section::EarlierSummary => "Earlier summary",
      Section::UserRequests => "User requests",
      Section::FilesCreated => "Files created",
      Section::FilesEdited => "Files edited",
      Section::FilesDeleted => "Files deleted",
      Section::FilesRead => "Files read",
      Section::Commands => "Commands run",
      Section::Errors => "Errors",
      Section::Notes => "Assistant notes",
    }
  }

  fn for_file(kind: FileOpKind) -> Section {
    match kind {
      FileOpKind::Read => Section::FilesRead,
      FileOpKind::Create => Section::FilesCreated,
      FileOpKind::Edit => Section::FilesEdited,
      FileOpKind::Delete => Section::FilesDeleted,
    }
  }
}

/// The items of one section.
#[derive(Debug, Clone, Default)]
struct Items {
  /// How many items were left out before the first of `list`.
  omitted: usize,
  /// The items, oldest first.
  list: Vec<String>,
  /// The items of `list`, for de-duplication (only looked up, never iterated).
  seen: HashSet<String>,
}

impl PartialEq for Items {
  fn eq(&self, other: &Items) -> bool {
    self.omitted == other.omitted && self.list == other.list
  }
}

impl Eq for Items {}

/// What a summary says, section by section, before it is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digest {
  sections: [Items; Section::ALL.len()],
}

impl Digest {
  /// An empty digest.
  pub fn new() -> Self {
    Digest::default()
  }

  /// Adds `item` (one line) at the end of `section`, unless the section already has it.
  pub fn push(&mut self, section: Section, item: impl Into<String>) {
    let item = item.into();
    let items = &mut self.sections[section as usize];
    if !item.is_empty() && !items.seen.contains(&item) {
      items.seen.insert(item.clone());
      items.list.push(item);
    }
  }

  /// The items of `section`, oldest first.
  pub fn items(&self, section: Section) -> &[String] {
    &self.sections[section as usize].list
  }

  /// How many items of `section` were left out.
  pub fn omitted(&self, section: Section) -> usize {
    self.sections[section as usize].omitted
  }

  /// Whether the digest has nothing to say.
  pub fn is_empty(&self) -> bool {
    self.sections.iter().all(|s| s.list.is_empty() && s.omitted == 0)
  }

  /// Appends `other`: its left-out counts add up, its items follow this digest's.
  pub fn fold(&mut self, other: Digest) {
    for (section, items) in Section::ALL.into_iter().zip(other.sections) {
      self.sections[section as usize].omitted += items.omitted;
      for item in items.list {
        self.push(section, item);
      }
    }
  }

  /// The digest of the messages `dropped` (indices of `conv`, ascending) under the rules of the
  /// [module docs](self).
  pub fn extract(conv: &Conversation<'_>, dropped: &[usize]) -> Digest {
    let mut digest = Digest::new();
    let opens = conv.turn_openers();
    // The calls some message answers: (calling message, call index).
    let answered: HashSet<(usize, usize)> = (0..conv.len())
      .flat_map(|i| conv.message(i).answers.iter().filter_map(move |id| conv.result_call(i, id)))
      .collect();
    for &i in dropped {
      let Some(m) = conv.messages().get(i) else { continue };
      if m.is_summary {
        let text = m.content_text();
        match Digest::parse(&text) {
          Some(earlier) => digest.fold(earlier),
          None => {
            let rest = text.trim_start();
            let rest = rest.strip_prefix(SUMMARY_MARKER).unwrap_or(rest);
            digest.push(Section::EarlierSummary, one_line(rest, MAX_EARLIER_SUMMARY_CHARS));
          }
        }
      } else if m.is_tool_result() {
        digest.tool_result(conv, i, m);
      } else if m.role == Role::User {
        if is_agent_instruction(m, &[]) {
          continue;
        }
        let text = m.content_text();
        if opens.get(i).copied().unwrap_or(false) {
          digest.push(Section::UserRequests, one_line(&text, MAX_REQUEST_CHARS));
        } else if let Some(line) = error_line(&text).or_else(|| first_line(&text)) {
          digest.push(Section::Errors, format!("feedback: {line}"));
        }
      } else if m.role == Role::Assistant {
        for note in notes(&m.content_text()) {
          digest.push(Section::Notes, note);
        }
        for (c, call) in m.tool_calls.iter().enumerate() {
          if answered.contains(&(i, c)) {
            continue;
          }
          if let Some(command) = command(&call.arguments) {
            digest.push(Section::Commands, format!("`{command}`"));
          }
        }
      }
    }
    digest
  }

  /// The items a tool result gives: a message of several results (parallel calls) gives each
  /// result's own, from its call, text and error flag.
  fn tool_result(&mut self, conv: &Conversation<'_>, i: usize, m: &Message) {
    let several = m.several_results();
    if several.is_empty() {
      let flagged = m.is_error
        || matches!(&m.content, Content::Parts(parts) if parts.iter().any(|p| matches!(p, Part::ToolResult { is_error: true, .. })));
      let arguments = conv.call_arguments(i);
      let one = OneResult { text: &m.content_text(), flagged, file: file_operation(conv, i) };
      return self.one_result(one, arguments, || conv.tool_name(i));
    }
    let mut files = file_operations_of(conv, i).into_iter().peekable();
    for r in several {
      let file = files.next_if(|op| op.part == Some(r.part));
      let call =
        conv.result_call(i, r.call_id).map(|(caller, c)| &conv.message(caller).tool_calls[c]);
      let one = OneResult { text: r.text, flagged: r.is_error, file };
      self.one_result(one, call.map(|c| c.arguments.as_str()), || call.map(|c| c.name.as_str()));
    }
  }

  /// The items of one tool result whose call has `arguments` and whose tool `tool_name` names.
  fn one_result<'n>(
    &mut self,
    result: OneResult<'_>,
    arguments: Option<&str>,
    tool_name: impl FnOnce() -> Option<&'n str>,
  ) {
    let OneResult { text, flagged, file } = result;
    let error = flagged || is_error_output(text);
    let command = match &file {
      Some(_) => None,
      None => arguments.and_then(command),
    };
    if let Some(f) = file.as_ref().filter(|f| !f.failed && !error) {
      self.push(Section::for_file(f.kind), one_line(&f.path, MAX_PATH_CHARS));
    }
    if let Some(command) = &command {
      let item = match exit_status(text) {
        Some(status) => format!("`{command}` → exit {status}"),
        None => format!("`{command}`"),
      };
      self.push(Section::Commands, item);
    }
    if !(error || file.as_ref().is_some_and(|f| f.failed)) {
      return;
    }
    let line = match error_line(text) {
      Some(line) => line,
      // Only the exit status says so, and the command's item shows it.
      None if command.is_some() && !flagged => return,
      None => first_line(text).unwrap_or_else(|| "(no output)".to_string()),
    };
    let source = match (&command, &file) {
      (Some(command), _) => format!("`{}`", one_line(command, MAX_ERROR_SOURCE_CHARS)),
      (None, Some(f)) => one_line(&f.path, MAX_PATH_CHARS),
      (None, None) => tool_name().unwrap_or("tool").to_string(),
    };
    self.push(Section::Errors, format!("{source}: {line}"));
  }

  /// Reads a summary written by [`Digest::render`] back; `None` when `text` is not in that
  /// layout.
  pub fn parse(text: &str) -> Option<Digest> {
    let mut lines = text.lines();
    if lines.next()?.trim_end() != SUMMARY_HEADER {
      return None;
    }
    let mut digest = Digest::new();
    let mut current = None;
    for line in lines {
      if let Some(item) = line.strip_prefix("- ") {
        digest.push(current?, item.trim_end());
      } else if let Some((section, omitted)) = parse_heading(line) {
        current = Some(section);
        digest.sections[section as usize].omitted += omitted;
      } else if !line.trim().is_empty() {
        return None;
      }
    }
    Some(digest)
  }

  /// The summary text, with every item.
  pub fn render(&self) -> String {
    let mut out = String::from(SUMMARY_HEADER);
    for section in Section::ALL {
      let items = &self.sections[section as usize];
      if items.list.is_empty() && items.omitted == 0 {
        continue;
      }
      out.push('\n');
      out.push_str(&heading(section, items.omitted));
      for item in &items.list {
        out.push_str("\n- ");
        out.push_str(item);
      }
    }
    out
  }

  /// This digest cut to fit `max_tokens` tokens once rendered (see the [module docs](self)),
  /// with its text.
  pub fn bounded(&self, max_tokens: usize, encoding: Encoding) -> (Digest, String) {
    let text = self.render();
    let mut tokens = count_tokens(&text, encoding);
    if tokens <= max_tokens {
      return (self.clone(), text);
    }
    let mut digest = self.clone();
    // Leave out items by their estimated cost until the estimate fits, then check the real
    // count and leave out more as long as it does not.
    let line_cost = |line: &str| count_tokens(line, encoding) + 1;
    let suffix_cost = line_cost(" (99 earlier left out)");
    let mut cut = [0usize; Section::ALL.len()];
    loop {
      let mut excess = tokens.saturating_sub(max_tokens);
      while excess > 0 {
        let Some(s) = next_cut(&digest, &cut) else { break };
        let items = &digest.sections[s];
        let cost = line_cost(&items.list[cut[s]]) + 1;
        let extra = if cut[s] == 0 && items.omitted == 0 { suffix_cost } else { 0 };
        excess = excess.saturating_sub(cost.saturating_sub(extra));
        cut[s] += 1;
      }
      let mut trial = digest.clone();
      for (s, items) in trial.sections.iter_mut().enumerate() {
        items.omitted += cut[s];
        items.list.drain(..cut[s].min(items.list.len()));
      }
      let text = trial.render();
      tokens = count_tokens(&text, encoding);
      if tokens <= max_tokens {
        digest = trial;
        return (digest, text);
      }
      let all_cut =
        Section::ALL.iter().all(|&s| cut[s as usize] >= digest.sections[s as usize].list.len());
      if all_cut {
        digest = trial;
        break;
      }
    }
    // Even the headings do not fit: whole sections go, in the same order.
    for section in Section::DROP_ORDER {
      let text = digest.render();
      if count_tokens(&text, encoding) <= max_tokens {
        return (digest, text);
      }
      digest.sections[section as usize] = Items::default();
    }
    let text = digest.render();
    (digest, text)
  }
}

/// The section to lose its next item (see [`Section::EXPENDABLE`]), given the items already
/// cut from each; `None` when every item is cut.
fn next_cut(digest: &Digest, cut: &[usize; Section::ALL.len()]) -> Option<usize> {
  let left = |s: Section| digest.sections[s as usize].list.len() - cut[s as usize];
  let mut best: Option<Section> = None;
  for s in Section::EXPENDABLE {
    if left(s) > 0 && best.is_none_or(|b| left(s) > left(b)) {
      best = Some(s);
    }
  }
  best.or_else(|| Section::DROP_ORDER.into_iter().find(|&s| left(s) > 0)).map(|s| s as usize)
}

/// A section heading line with its left-out count.
fn heading(section: Section, omitted: usize) -> String {
  match omitted {
    0 => format!("{}:", section.heading()),
    n => format!("{} ({n} earlier left out):", section.heading()),
  }
}

/// Reads a heading line: its section and left-out count.
fn parse_heading(line: &str) -> Option<(Section, usize)> {
  let line = line.trim_end().strip_suffix(':')?;
  Section::ALL.into_iter().find_map(|section| {
    let rest = line.strip_prefix(section.heading())?;
    if rest.is_empty() {
      return Some((section, 0));
    }
    let n = rest.strip_prefix(" (")?.strip_suffix(" earlier left out)")?;
    n.parse().ok().map(|n| (section, n))
  })
}

/// The summary of the messages `dropped` of `conv`, within `max_tokens` tokens.
pub fn summarize(conv: &Conversation<'_>, dropped: &[usize], max_tokens: usize) -> String {
  Digest::extract(conv, dropped).bounded(max_tokens, conv.encoding()).1
}

/// Text on one line: whitespace runs become one space, trimmed, cut to `max_chars` characters
/// (the last one then `…`).
pub fn one_line(text: &str, max_chars: usize) -> String {
  let mut out = String::with_capacity(text.len().min(max_chars * 4));
  for word in text.split_whitespace() {
    if !out.is_empty() {
      out.push(' ');
    }
    out.push_str(word);
    if out.len() > max_chars * 4 {
      break;
    }
  }
  if out.chars().count() <= max_chars {
    return out;
  }
  let mut cut: String = out.chars().take(max_chars.saturating_sub(1)).collect();
  cut.truncate(cut.trim_end().len());
  cut.push('…');
  cut
}

/// One tool result as the summary reads it: its text, whether it is flagged as an error, and
/// its file operation.
struct OneResult<'t> {
  text: &'t str,
  flagged: bool,
  file: Option<FileOp>,
}

/// The command of a call's arguments (see the module docs), on one line.
fn command(arguments: &str) -> Option<String> {
  let args = parse_object(arguments)?;
  if editor_command(&args).is_some() {
    return None;
  }
  COMMAND_ARGUMENTS.iter().find_map(|k| match args.get(*k) {
    Some(Value::String(s)) if !s.trim().is_empty() => Some(one_line(s, MAX_COMMAND_CHARS)),
    _ => None,
  })
}

/// The error line of an output, on one line: its first error line, a bare marker line
/// (`ERROR:`) joined with the next non-empty line. When only the exit status reports the error,
/// the last line before the status line stands for it (`make: *** [all] Error 2`), and `None`
/// when there is none (the command's item already shows the status).
fn error_line(text: &str) -> Option<String> {
  let line = first_error_line(text)?;
  let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
  let at = lines.iter().position(|l| *l == line)?;
  let mut shown = line.to_string();
  if at + 1 == lines.len() && exit_status(line).is_some() {
    shown = at.checked_sub(1).and_then(|p| lines.get(p)).map(|l| l.to_string())?;
  } else if line.ends_with(':') && line.split_whitespace().count() == 1 {
    if let Some(next) = lines.get(at + 1) {
      shown.push(' ');
      shown.push_str(next);
    }
  }
  Some(one_line(&shown, MAX_ERROR_CHARS))
}

/// The first non-empty line of a text, on one line.
fn first_line(text: &str) -> Option<String> {
  let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
  Some(one_line(line, MAX_ERROR_CHARS))
}

/// The notes of an assistant's text (see the module docs).
pub fn notes(text: &str) -> Vec<String> {
  let mut out = Vec::new();
  let mut in_fence = false;
  for line in text.lines() {
    if line.trim_start().starts_with("```") {
      in_fence = !in_fence;
      continue;
    }
    if in_fence {
      continue;
    }
    for sentence in sentences(line) {
      let sentence = strip_list_marker(sentence);
      let chars = sentence.chars().count();
      if !(MIN_NOTE_CHARS..=MAX_NOTE_CHARS).contains(&chars) || sentence.ends_with(':') {
        continue;
      }
      let picked = NOTE_STARTS.iter().any(|s| sentence.starts_with(s))
        || NOTE_PHRASES.iter().any(|p| sentence.contains(p));
      if picked {
        out.push(one_line(sentence, MAX_NOTE_CHARS));
        if out.len() == MAX_NOTES_PER_MESSAGE {
          return out;
        }
      }
    }
  }
  out
}

/// The sentences of one line: split after `.`, `!` or `?` followed by whitespace.
fn sentences(line: &str) -> Vec<&str> {
  let mut out = Vec::new();
  let mut start = 0;
  let bytes = line.as_bytes();
  for (at, &b) in bytes.iter().enumerate() {
    let ends =
      matches!(b, b'.' | b'!' | b'?') && bytes.get(at + 1).is_some_and(|n| n.is_ascii_whitespace());
    if ends {
      out.push(line[start..=at].trim());
      start = at + 1;
    }
  }
  out.push(line[start..].trim());
  out.retain(|s| !s.is_empty());
  out
}

/// A sentence without a leading list marker (`- `, `* `, `1. `).
fn strip_list_marker(sentence: &str) -> &str {
  let s = sentence.trim_start();
  if let Some(rest) = s.strip_prefix("- ").or_else(|| s.strip_prefix("* ")) {
    return rest.trim_start();
  }
  let digits = s.bytes().take_while(u8::is_ascii_digit).count();
  if digits > 0 {
    if let Some(rest) = s[digits..].strip_prefix(". ").or_else(|| s[digits..].strip_prefix(") ")) {
      return rest.trim_start();
    }
  }
  s
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::testing::{call, result, user};

  fn assistant(text: &str) -> Message {
    Message::text(Role::Assistant, text)
  }

  fn digest_of(msgs: &[Message]) -> Digest {
    let conv = Conversation::new(msgs, Encoding::O200kBase);
    let all: Vec<usize> = (0..msgs.len()).collect();
    Digest::extract(&conv, &all)
  }

  #[test]
  fn every_section_from_its_messages() {
    let msgs = vec![
      Message::text(Role::System, "You are an agent."),
      user("Fix the   failing\ntest"),
      assistant("The issue is that x is never reset. Let me look. I will add a reset."),
      call("1", "execute_bash", r#"{"command":"cargo test\nmore"}"#),
      result("1", "error[E0308]: mismatched types\n[The command completed with exit code 101.]"),
      call("2", "str_replace_editor", r#"{"command":"view","path":"/w/a.rs"}"#),
      result("2", "Here's the result of running `cat -n` on /w/a.rs:\n1\tfn a() {}"),
      call("3", "str_replace_editor", r#"{"command":"str_replace","path":"/w/a.rs"}"#),
      result("3", "The file /w/a.rs has been edited."),
      call("4", "str_replace_editor", r#"{"command":"create","path":"/w/b.rs"}"#),
      result("4", "File created successfully at: /w/b.rs"),
      call("5", "delete_file", r#"{"path":"/w/c.rs"}"#),
      result("5", "deleted"),
      call("6", "str_replace_editor", r#"{"command":"str_replace","path":"/w/a.rs"}"#),
      result(
        "6",
        "ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim in /w/a.rs.",
      ),
      user("Parameter 'command' is expected to be one of ['view', 'create']."),
      call("7", "execute_ipython_cell", r#"{"code":"print(1)"}"#),
      result("7", "1"),
      call("8", "bash", r#"{"cmd":"ls"}"#),
    ];
    let d = digest_of(&msgs);
    let text = d.render();
    assert_eq!(
      text,
      [
        SUMMARY_HEADER,
        "User requests:",
        "- Fix the failing test",
        "Files created:",
        "- /w/b.rs",
        "Files edited:",
        "- /w/a.rs",
        "Files deleted:",
        "- /w/c.rs",
        "Files read:",
        "- /w/a.rs",
        "Commands run:",
        "- `cargo test more` → exit 101",
        "- `print(1)`",
        "- `ls`",
        "Errors:",
        "- `cargo test more`: error[E0308]: mismatched types",
        "- /w/a.rs: ERROR: No replacement was performed, old_str `x` did not appear verbatim in /w/a.rs.",
        "- feedback: Parameter 'command' is expected to be one of ['view', 'create'].",
        "Assistant notes:",
        "- The issue is that x is never reset.",
        "- I will add a reset.",
      ]
      .join("\n")
    );
    assert!(text.starts_with(SUMMARY_MARKER));
    assert_eq!(Digest::parse(&text), Some(d));
  }

  #[test]
  fn notes_follow_the_selection_rule() {
    let text = "Let's run it. Now we edit.\n```\nI will not be taken from code.\n```\n1. The fix is to round the value. It seems short!\n- The tests have been updated. I'll stop here. I found more.";
    // `It seems short!` is under 16 characters; a third note of the message is not taken.
    assert_eq!(notes(text), vec!["The fix is to round the value.", "The tests have been updated."]);
    assert_eq!(
      notes("The tests have been updated. I'll stop here now."),
      vec!["The tests have been updated.", "I'll stop here now."]
    );
    let long = format!("The issue is {}.", "very ".repeat(60));
    assert_eq!(notes(&long), Vec::<String>::new());
    assert_eq!(notes("The issue."), Vec::<String>::new(), "too short");
  }

  #[test]
  fn items_are_not_repeated_and_calls_without_results_count() {
    let msgs = vec![
      call("1", "bash", r#"{"command":"ls"}"#),
      result("1", "a\n[The command completed with exit code 0.]"),
      call("2", "bash", r#"{"command":"ls"}"#),
      result("2", "a\n[The command completed with exit code 0.]"),
      call("3", "bash", r#"{"command":"make"}"#),
    ];
    let d = digest_of(&msgs);
    assert_eq!(d.items(Section::Commands), ["`ls` → exit 0", "`make`"]);
  }

  #[test]
  fn summaries_fold_and_foreign_ones_become_one_item() {
    let mut first = Digest::new();
    first.push(Section::FilesRead, "/a");
    first.push(Section::Commands, "`ls`");
    first.sections[Section::Commands as usize].omitted = 2;
    let earlier = first.render();
    assert!(earlier.contains("Commands run (2 earlier left out):"));
    let mut foreign = user("[context-trim summary]\nWe   fixed the parser.");
    foreign.is_summary = true;
    let mut ours = user(&earlier);
    ours.is_summary = true;
    let msgs = vec![
      ours,
      foreign,
      call("1", "read_file", r#"{"path":"/a"}"#),
      result("1", "x"),
      call("2", "read_file", r#"{"path":"/b"}"#),
      result("2", "y"),
    ];
    let d = digest_of(&msgs);
    assert_eq!(d.items(Section::FilesRead), ["/a", "/b"]);
    assert_eq!(d.items(Section::Commands), ["`ls`"]);
    assert_eq!(d.omitted(Section::Commands), 2);
    assert_eq!(d.items(Section::EarlierSummary), ["We fixed the parser."]);
    assert_eq!(Digest::parse("not a summary"), None);
    assert_eq!(Digest::parse(&format!("{SUMMARY_HEADER}\nFiles read:\nstray")), None);
    assert_eq!(Digest::parse(&format!("{SUMMARY_HEADER}\n- no section")), None);
  }

  #[test]
  fn the_budget_cuts_the_least_important_oldest_items_first() {
    let mut d = Digest::new();
    d.push(Section::UserRequests, "Make the build green");
    for i in 0..40 {
      d.push(Section::FilesRead, format!("/repo/src/module_{i}.rs"));
      d.push(Section::Commands, format!("`cargo test -p crate_{i}` → exit 1"));
    }
    d.push(Section::FilesEdited, "/repo/src/lib.rs");
    let full = count_tokens(&d.render(), Encoding::O200kBase);
    for max in [MIN_SUMMARY_TOKENS, 100, 200, 400, full] {
      let (cut, text) = d.bounded(max, Encoding::O200kBase);
      assert!(count_tokens(&text, Encoding::O200kBase) <= max, "{max}");
      assert_eq!(text, cut.render());
      assert_eq!(Digest::parse(&text), Some(cut.clone()), "{max}");
      // The two expendable sections, equally long, lose items in turn, oldest first.
      let kept = |s: Section| cut.items(s).len();
      if max < full {
        assert!(kept(Section::FilesRead).abs_diff(kept(Section::Commands)) <= 1, "{max}");
        assert_eq!(cut.omitted(Section::FilesRead) + kept(Section::FilesRead), 40);
        let last = cut.items(Section::Commands).last().cloned();
        assert!(last.is_none() || last.as_deref() == Some("`cargo test -p crate_39` → exit 1"));
      }
      assert_eq!(cut.items(Section::UserRequests), ["Make the build green"], "{max}");
      assert_eq!(cut.items(Section::FilesEdited), ["/repo/src/lib.rs"], "{max}");
      // Rendering the cut digest again is stable.
      assert_eq!(cut.bounded(max, Encoding::O200kBase).1, text);
    }
    assert_eq!(d.bounded(full, Encoding::O200kBase).0, d);
  }

  #[test]
  fn a_tiny_budget_drops_whole_sections_but_keeps_the_header() {
    let mut d = Digest::new();
    for s in Section::ALL {
      d.push(s, "an item of some length that costs tokens");
    }
    let (cut, text) = d.bounded(30, Encoding::O200kBase);
    assert!(count_tokens(&text, Encoding::O200kBase) <= 30 || text == SUMMARY_HEADER);
    assert!(text.starts_with(SUMMARY_HEADER));
    assert_eq!(Digest::parse(&text), Some(cut));
  }

  #[test]
  fn one_line_cuts_on_characters() {
    assert_eq!(one_line("  a \n b\t c ", 10), "a b c");
    assert_eq!(one_line("abcdef ghij", 8), "abcdef…");
    assert_eq!(one_line("abcdefg hij", 9), "abcdefg…");
    assert_eq!(one_line("abcdefghij", 5), "abcd…");
    assert_eq!(one_line("ab cd", 5), "ab cd");
    assert!(one_line(&"é".repeat(50), 10).chars().count() <= 10);
  }

  /// Parallel calls answered in one message give each result's items, as the same calls
  /// answered one message each do: a failed read beside a good one is an error of its own
  /// file and leaves the other's item, and a command beside a read is listed.
  #[test]
  fn a_message_of_several_results_gives_each_results_items() {
    let anthropic = digest_of(&crate::testing::parallel_results());
    let openai = digest_of(&crate::testing::parallel_results_openai());
    assert_eq!(anthropic, openai);
    assert_eq!(anthropic.items(Section::FilesRead), ["src/a.ts", "src/x.ts", "src/d.ts"]);
    assert_eq!(anthropic.items(Section::FilesEdited), ["src/c.ts"]);
    assert_eq!(anthropic.items(Section::Commands), ["`npm test` → exit 0"]);
    assert_eq!(
      anthropic.items(Section::Errors),
      ["src/b.ts: Error: ENOENT: no such file src/b.ts"]
    );
  }
}
