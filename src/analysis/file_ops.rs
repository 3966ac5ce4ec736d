//! Which file a tool result is about, and what was done to it.
//!
//! [`file_operation`] looks at a tool result together with the call it answers and returns a
//! [`FileOp`]: the file's path and whether it was read, created, edited or deleted. Every
//! strategy that cares about files (priority trimming, deduplication, summaries) reads files
//! through this one module.
//!
//! # The rules
//!
//! Only tool results are file operations. The **kind** is the first of:
//! 1. the `command` argument of an editor tool when it is exactly one of its sub-commands
//!    (OpenHands / Anthropic `str_replace_editor`): `view` is a read, `create` a create,
//!    `str_replace`, `insert` and `undo_edit` are edits;
//! 2. the tool's name (from its call, or the result's `name`), split into lower-case words at
//!    `_`, `-`, `.`, spaces and camelCase humps, checked in this order: a word starting with
//!    `create`, `write` or `overwrite` is a create; `edit`, `modify`, `insert` or `replace` an
//!    edit; `delete`, `remove` or the word `rm` a delete; `read`, `view`, or the words `get`,
//!    `open`, `cat` a read (so `read_file`, `writeFile`, `str_replace_editor`, SWE-agent's
//!    `open`/`create`/`edit`/`insert`, Claude Code's `Read`/`Write`/`Edit`/`MultiEdit`);
//! 3. the result's own header: `[File: P (N lines total after edit)]` is an edit, `[File: P (N
//!    lines total)]` a read (SWE-agent, OpenHands agent skills), `Here's the result of running
//!    `cat -n` on P:` a read, `The file P has been edited.` an edit, `File created successfully
//!    at: P` a create (OpenHands editor);
//! 4. for a shell tool (`bash`, `execute_bash`, `shell`, …
//!    [`crate::analysis::supersession::DEFAULT_SHELL_TOOLS`]), the first line of its command line (a
//!    string, or Codex's argument vector `["bash", "-lc", "…"]`) when it is one simple command
//!    on one file
//!    (`shell_file_op`): `cat > P << EOF` (or `cat << EOF > P`) is a create, `>> P` and
//!    `sed -i … P` edits, `cat`/`head`/`tail`/`nl` with one file and `sed -n … P` reads, also
//!    piped into `head`, `tail`, `sed -n …` (`nl -ba P | sed -n '10,40p'`) and after a
//!    `cd D &&` (kind and path both). Agents
//!    that work through a shell alone (mini-swe-agent, Codex) read and write files this way.
//!
//! Before these, a call carrying a patch in Codex's `*** Begin Patch` format (`apply_patch`,
//! as an argument, a free-form call's text or a shell argument vector) is about the first file
//! it names: `*** Add File: P` creates P, `*** Update File: P` edits it, `*** Delete File: P`
//! deletes it (kind and path both).
//!
//! The **path** is the first of:
//! 1. the call's arguments `path`, `file_path`, `filePath`, `absolute_path` (Gemini CLI),
//!    `target_file` (Cursor), `file` or `filename` (a non-empty string);
//! 2. the result headers above (the `[File: …]` header may be on any line);
//! 3. a JSON result's `path`, `file`, `filePath` or `file_path` field;
//! 4. a result line starting with `File:` or `Path:` (the seed's pattern, anchored to the start
//!    of a line so that SWE-agent's `(Open file: …)` footer never matches).
//!
//! A relative path is joined to the `(Current directory: D)` footer of the same result when
//! SWE-agent printed one, so `setup.py` and `/testbed/setup.py` name one file. Paths are
//! otherwise kept as written. Directory listings (`Here's the files and directories …`) are
//! not file operations. Without both a kind and a path there is no file operation; any other
//! shell command line (pipes, lists, several files) is none.
//!
//! A message that answers several calls with a result part each (parallel calls: an Anthropic
//! user message of `tool_result` blocks, an AI SDK tool message) is read result by result
//! ([`file_operations_of`]): each with its own call, text and error flag, as the same results
//! answered one message each would be.
//!
//! A result that reports failure ([`FileOp::failed`]) — flagged `is_error`, or starting with
//! `ERROR`, `Error:`, `Ran into [Errno`, `Your proposed edit has introduced`, `[No exact match
//! found` or ``Invalid `path` parameter`` (the OpenHands editor) — keeps its kind, so callers can
//! tell an attempted edit from a read.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::analysis::growing::GrowingAnalysis;
use crate::analysis::memo::facts;
use crate::analysis::supersession::{DEFAULT_SHELL_COMMAND_KEYS, DEFAULT_SHELL_TOOLS};
use crate::model::conversation::Conversation;

/// What a tool did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileOpKind {
  /// Read (viewed, opened) the file.
  Read,
  /// Created or wrote the whole file.
  Create,
  /// Changed part of the file.
  Edit,
  /// Deleted the file.
  Delete,
}

impl FileOpKind {
  /// Every kind, in the order of their names in error messages.
  pub const ALL: [FileOpKind; 4] =
    [FileOpKind::Read, FileOpKind::Create, FileOpKind::Edit, FileOpKind::Delete];

  /// The kind's name: `read`, `create`, `edit` or `delete`.
  pub fn as_str(self) -> &'static str {
    match self {
      FileOpKind::Read => "read",
      FileOpKind::Create => "create",
      FileOpKind::Edit => "edit",
      FileOpKind::Delete => "delete",
    }
  }

  /// The noun a placeholder names the operation by: `read`, `write` (a create) or `edit`.
  pub fn noun(self) -> &'static str {
    match self {
      FileOpKind::Read => "read",
      FileOpKind::Create => "write",
      FileOpKind::Edit | FileOpKind::Delete => "edit",
    }
  }

  /// Parses a kind's name.
  pub fn parse(name: &str) -> Option<FileOpKind> {
    FileOpKind::ALL.into_iter().find(|k| k.as_str() == name)
  }

  /// Whether the operation changes the file (anything but a read).
  pub fn modifies(self) -> bool {
    self != FileOpKind::Read
  }
}

/// A file operation: which file a tool result is about and what was done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOp {
  /// The file's path, as the tool saw it (relative paths joined to SWE-agent's current
  /// directory when the result names one).
  pub path: String,
  /// What was done.
  pub kind: FileOpKind,
  /// Whether the result reports that the operation failed.
  pub failed: bool,
  /// Whether the result of a change shows the changed region's numbered lines (Claude Code's
  /// and the OpenHands editor's "result of running `cat -n` on a snippet"): a view of that
  /// region, which the agent copies its next edit from ([`edited_snippet`]).
  pub shows_view: bool,
  /// The result it was found in, by its part's index in the message's content, when the
  /// message holds several results ([`file_operations_of`]); `None` when the message was read
  /// whole.
  pub part: Option<usize>,
}

impl FileOp {
  /// What the operation did to the file: its kind, except that a modification whose result
  /// reports failure only looked at the file (a read).
  pub fn effective_kind(&self) -> FileOpKind {
    if self.failed {
      FileOpKind::Read
    } else {
      self.kind
    }
  }
}

/// Argument keys that name the file a call works on, in order of preference.
pub const PATH_ARGUMENTS: &[&str] =
  &["path", "file_path", "filePath", "absolute_path", "target_file", "file", "filename"];
/// Fields of a JSON tool result that name its file (the seed's `path`, `file`, `filePath`).
const PATH_FIELDS: &[&str] = &["path", "file", "filePath", "file_path"];
/// Starts of results that report a failed operation.
const FAILURE_PREFIXES: &[&str] = &[
  "ERROR",
  "Error:",
  "Ran into [Errno",
  "Your proposed edit has introduced",
  "[Your proposed edit has introduced",
  "[No exact match found",
  "Invalid `path` parameter",
  // Claude Code: a refused call (`File has not been read yet`, `String to replace not found`).
  "<tool_use_error>",
  // Codex CLI's apply_patch, opencode's and Crush's edit and view.
  "apply_patch verification failed",
  "old_string not found",
  "File not found:",
];
/// Tool-name words and the kind they imply, checked in this order; `true` means the word must
/// be exactly the keyword, `false` that it may start with it.
const NAME_RULES: &[(FileOpKind, &[(&str, bool)])] = &[
  (FileOpKind::Create, &[("create", false), ("write", false), ("overwrite", false)]),
  (
    FileOpKind::Edit,
    &[
      ("edit", false),
      ("modify", false),
      ("insert", false),
      ("replace", false),
      ("multiedit", true),
    ],
  ),
  (FileOpKind::Delete, &[("delete", false), ("remove", false), ("rm", true)]),
  (
    FileOpKind::Read,
    &[("read", false), ("view", false), ("get", true), ("open", true), ("cat", true)],
  ),
];

/// The file operation of message `i`, if it is a tool result about a file (see the module
/// documentation for the rules). Of a message holding several results
/// ([`file_operations_of`]), the one that says most about the session: the first successful
/// change, else the first successful read, else the first.
pub fn file_operation(conv: &Conversation<'_>, i: usize) -> Option<FileOp> {
  let message = conv.messages().get(i)?;
  if message.answers.len() > 1 {
    return representative(file_operations_of(conv, i));
  }
  single_operation(conv, i)
}

/// Every file operation of message `i`, in the order of its results. A message that answers
/// several calls with one result part each (parallel calls: an Anthropic user message of
/// `tool_result` blocks, an AI SDK tool message) is read result by result, each with its own
/// call, text and error flag ([`FileOp::part`]); any other tool result is read whole, as by
/// [`file_operation`].
pub fn file_operations_of(conv: &Conversation<'_>, i: usize) -> Vec<FileOp> {
  let Some(message) = conv.messages().get(i) else { return Vec::new() };
  let results = message.several_results();
  if results.is_empty() {
    return single_operation(conv, i).into_iter().collect();
  }
  // Each result's text is scanned once, in its own message of the split view (memoised there).
  results
    .iter()
    .zip(message.split_results())
    .filter_map(|(r, alone)| {
      let facts = facts(alone).result_facts.get_or_init(|| ResultFacts::of(r.text));
      let call =
        conv.result_call(i, r.call_id).and_then(|(caller, c)| facts_of_call(conv, caller, c));
      operation(call, None, facts, r.is_error, Some(r.part))
    })
    .collect()
}

/// The operation that stands for a message's several ([`file_operation`]).
fn representative(ops: Vec<FileOp>) -> Option<FileOp> {
  let pick = ops
    .iter()
    .position(|op| !op.failed && op.kind.modifies())
    .or_else(|| ops.iter().position(|op| !op.failed))
    .unwrap_or(0);
  ops.into_iter().nth(pick)
}

/// The file operation of message `i` read whole (one result, or none).
fn single_operation(conv: &Conversation<'_>, i: usize) -> Option<FileOp> {
  let message = conv.messages().get(i)?;
  if !message.is_tool_result() {
    return None;
  }
  // The text is scanned once per message and the findings memoised: a history that grows by a
  // message a turn is not rescanned every turn.
  let facts = facts(message).result_facts.get_or_init(|| ResultFacts::of(&message.content_text()));
  let call = conv.answered_call(i).and_then(|(caller, c)| facts_of_call(conv, caller, c));
  operation(call, message.name.as_deref(), facts, message.is_error, None)
}

/// The file operation of one result: its call's facts (or, without a known call, the tool
/// `name` the result carries), what its text says, and whether it is flagged as an error.
fn operation(
  call: Option<&CallFacts>,
  name: Option<&str>,
  facts: &ResultFacts,
  flagged: bool,
  part: Option<usize>,
) -> Option<FileOp> {
  if facts.listing {
    return None;
  }
  let named;
  let (args_kind, name_kind, args_path) = match call {
    Some(c) => (c.args_kind, c.name_kind, c.args_path.as_ref()),
    None => {
      named = name.and_then(kind_for_tool_name);
      (None, named, None)
    }
  };
  let kind = args_kind.or(name_kind).or_else(|| facts.header.as_ref().and_then(|h| h.kind))?;
  let path = args_path
    .cloned()
    .or_else(|| facts.header.as_ref().map(|h| h.path.clone()))
    .or_else(|| facts.json_path.clone())
    .or_else(|| facts.labelled_path.clone())?;
  let path = match &facts.current_directory {
    Some(dir) if is_relative(&path) => join(dir, &path),
    _ => path,
  };
  // A shell read that exited non-zero showed nothing of its file. (A write's status is that
  // of the script's last command: `cat > t.py << EOF … EOF` then `python t.py` wrote t.py
  // even when the test failed.)
  let shell_read = call.is_some_and(|c| c.shell) && kind == FileOpKind::Read;
  let failed = flagged || facts.reports_failure || (shell_read && facts.shell_failed);
  let shows_view = kind == FileOpKind::Edit && !failed && facts.snippet;
  Some(FileOp { path, kind, failed, shows_view, part })
}

/// What a tool call says about a file operation: its arguments' editor command and path, and
/// the kind its tool's name implies. Found once per call and kept in the calling message's memo,
/// so that the arguments' JSON is not parsed again on every call of a strategy.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallFacts {
  args_kind: Option<FileOpKind>,
  name_kind: Option<FileOpKind>,
  args_path: Option<String>,
  /// A shell command line's operation: its result's exit status says whether it failed.
  shell: bool,
}

impl CallFacts {
  fn of(call: &crate::model::message::ToolCall) -> CallFacts {
    let args = parse_object(&call.arguments);
    if let Some((kind, path)) = patch_file_op(&call.arguments, args.as_ref()) {
      let (args_kind, args_path) = (Some(kind), Some(path));
      return CallFacts { args_kind, name_kind: None, args_path, shell: false };
    }
    if DEFAULT_SHELL_TOOLS.contains(&call.name.as_str()) {
      let shell = args
        .as_ref()
        .and_then(|a| {
          DEFAULT_SHELL_COMMAND_KEYS.iter().find_map(|k| shell_command_line(a.get(*k)?))
        })
        .and_then(|line| shell_file_op(&line));
      let (kind, path) = shell.unzip();
      return CallFacts { args_kind: kind, name_kind: None, args_path: path, shell: true };
    }
    CallFacts {
      args_kind: args.as_ref().and_then(editor_command),
      name_kind: kind_for_tool_name(&call.name),
      args_path: args.as_ref().and_then(argument_path),
      shell: false,
    }
  }
}

/// A shell tool's command line: a string as it is, or an argument vector (Codex CLI's
/// `["bash", "-lc", "cat src/a.rs"]`) as the script a shell runs with `-c`, else its words
/// joined by spaces.
pub(crate) fn shell_command_line(value: &Value) -> Option<std::borrow::Cow<'_, str>> {
  if let Some(s) = value.as_str() {
    return Some(std::borrow::Cow::Borrowed(s));
  }
  let words: Vec<&str> = value.as_array()?.iter().map(Value::as_str).collect::<Option<_>>()?;
  match words.as_slice() {
    [shell, flag, script] if SHELLS.contains(shell) && SHELL_SCRIPT_FLAGS.contains(flag) => {
      Some(std::borrow::Cow::Borrowed(script))
    }
    [] => None,
    _ => Some(std::borrow::Cow::Owned(words.join(" "))),
  }
}

/// Shells whose `-c` script an argument vector may carry.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh"];
/// The flags after which a shell's next argument is the script it runs.
const SHELL_SCRIPT_FLAGS: &[&str] = &["-c", "-lc", "-ic", "-lic"];

/// The first file header of a patch in the call's arguments (the `*** Begin Patch` format of
/// Codex's `apply_patch`, as a JSON string argument, the text of a free-form call, or the
/// argument vector of a shell call): `*** Add File: P` creates P, `*** Update File: P` edits it,
/// `*** Delete File: P` deletes it.
fn patch_file_op(raw: &str, args: Option<&Map<String, Value>>) -> Option<(FileOpKind, String)> {
  const BEGIN: &str = "*** Begin Patch";
  if !raw.contains(BEGIN) {
    return None;
  }
  let from_text = |text: &str| {
    text.lines().find_map(|line| {
      let line = line.trim();
      let (kind, rest) = [
        (FileOpKind::Create, "*** Add File:"),
        (FileOpKind::Edit, "*** Update File:"),
        (FileOpKind::Delete, "*** Delete File:"),
      ]
      .into_iter()
      .find_map(|(kind, header)| Some((kind, line.strip_prefix(header)?)))?;
      clean_path(rest).map(|p| (kind, p))
    })
  };
  let Some(args) = args else { return from_text(raw) };
  // A string argument, or a string of an argument vector.
  let strings = args.values().flat_map(|v| match v {
    Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
    v => v.as_str().into_iter().collect::<Vec<_>>(),
  });
  strings.filter(|s| s.contains(BEGIN)).find_map(from_text)
}

/// Programs whose `PROGRAM [FLAGS] FILE` command line reads FILE (rule 4 of the module docs).
const SHELL_READERS: &[&str] = &["cat", "head", "tail", "nl"];

/// How much of its file a shell read shows (see [`shell_operation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadSpan {
  /// The whole file: `cat F`, `nl F`; also any write.
  Whole,
  /// Lines `start..=end` (`None`: to the end): `head -n N F`, `sed -n 'A,Bp' F`, or a whole
  /// read piped into one of them.
  Lines(u64, Option<u64>),
  /// Part of the file, of unknown extent: `tail F`, or a read piped into other filters.
  Part,
}

/// A shell command line's file operation (rule 4 of the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellOp {
  pub kind: FileOpKind,
  pub path: String,
  /// What a read shows of the file ([`ReadSpan::Whole`] for writes).
  pub span: ReadSpan,
}

/// Rule 4 of the module docs: the file operation of a shell command line, if it is one simple
/// command on one file. Its first line decides (a here-document's body follows it):
/// - `cat > F << EOF` or `cat << EOF > F` (any delimiter, quoted or not) writes F whole, and
///   `>> F` edits it;
/// - `sed -i … F` edits F;
/// - `cat`, `head`, `tail` or `nl` with flags and one file, or `sed -n … F`,
///   reads F, and so does such a read piped into `head`, `tail`, `sed -n …`, `nl` or `cat`
///   (`nl -ba F | sed -n '10,40p'`, the way shell-only agents page through a file);
/// - a leading `cd D &&` before a read makes a relative F relative to D (a write after a `cd` is
///   not recognised: see the comment below).
///
/// Lists, substitutions, globs and other pipes on the first line make it no file operation.
pub(crate) fn shell_file_op(command: &str) -> Option<(FileOpKind, String)> {
  shell_operation(command).map(|op| (op.kind, op.path))
}

/// [`shell_file_op`] with what a read shows of its file.
pub(crate) fn shell_operation(command: &str) -> Option<ShellOp> {
  let mut line = command.trim_start().lines().next()?.trim();
  // `cd D && …`: one change of directory, then one command.
  let mut dir = None;
  if let Some(rest) = line.strip_prefix("cd ") {
    let (target, rest) = rest.split_once("&&")?;
    let target = clean_path(target)?;
    if target.contains(char::is_whitespace) || target.contains(['$', '~', '`', '*', '?', ';', '|'])
    {
      return None;
    }
    dir = Some(target);
    line = rest.trim();
  }
  if line.contains(['`', ';', '*', '?']) || line.contains("&&") || line.contains("||") {
    return None;
  }
  if line.contains("$(") {
    return None;
  }
  let stages = pipeline_words(line)?;
  let (first, filters) = stages.split_first()?;
  let mut op = simple_file_op(&words_of(first))?;
  for filter in filters {
    if op.kind != FileOpKind::Read {
      return None;
    }
    op.span = piped(op.span, &words_of(filter))?;
  }
  // Writes after a `cd` are left unrecognised: measured, recognising them protects the
  // agent's scratch scripts (`cd /testbed && cat > repro.py << EOF`) as modified files ahead of
  // the views it copies from (docs/history/recall-rounds.md, fourth round).
  if dir.is_some() && op.kind != FileOpKind::Read {
    return None;
  }
  if let Some(dir) = dir.filter(|_| is_relative(&op.path)) {
    op.path = join(&dir, &op.path);
  }
  Some(op)
}

/// The stages of a pipeline (split at unquoted `|`), each as its words with the quotes removed,
/// as a shell reads them: `'…'` as written, `"…"` with `\x` as `x`, `\x` outside quotes as `x`.
/// `None` for an unterminated quote or an expansion (`$`, a backtick) inside double quotes, which
/// only a shell could resolve. Agents quote their flags (`nl -ba -w1 -s': ' F | sed -n '1,240p'`,
/// the way Codex pages through a file).
fn pipeline_words(line: &str) -> Option<Vec<Vec<String>>> {
  let mut stages = vec![Vec::new()];
  let mut word: Option<String> = None;
  let mut chars = line.chars();
  let flush = |word: &mut Option<String>, stages: &mut Vec<Vec<String>>| {
    if let (Some(w), Some(stage)) = (word.take(), stages.last_mut()) {
      stage.push(w);
    }
  };
  while let Some(c) = chars.next() {
    match c {
      '\'' => {
        let w = word.get_or_insert_with(String::new);
        loop {
          match chars.next()? {
            '\'' => break,
            x => w.push(x),
          }
        }
      }
      '"' => {
        let w = word.get_or_insert_with(String::new);
        loop {
          match chars.next()? {
            '"' => break,
            '$' | '`' => return None,
            '\\' => w.push(chars.next()?),
            x => w.push(x),
          }
        }
      }
      '\\' => word.get_or_insert_with(String::new).push(chars.next()?),
      '|' => {
        flush(&mut word, &mut stages);
        stages.push(Vec::new());
      }
      c if c.is_whitespace() => flush(&mut word, &mut stages),
      c => word.get_or_insert_with(String::new).push(c),
    }
  }
  flush(&mut word, &mut stages);
  Some(stages)
}

fn words_of(stage: &[String]) -> Vec<&str> {
  stage.iter().map(String::as_str).collect()
}

/// What a read showing `span` shows once piped into `filter` (its words), if `filter` only
/// selects lines.
fn piped(span: ReadSpan, words: &[&str]) -> Option<ReadSpan> {
  let (&program, args) = words.split_first()?;
  if args.iter().any(|w| !w.starts_with('-') && !is_count(w) && program != "sed") {
    return None; // a file operand: not a filter
  }
  match program {
    "cat" | "nl" => Some(span),
    "head" => Some(match (span, head_lines(args)?) {
      (ReadSpan::Whole, n) => ReadSpan::Lines(1, Some(n)),
      _ => ReadSpan::Part,
    }),
    "tail" => Some(ReadSpan::Part),
    "sed" => match (span, args) {
      (ReadSpan::Whole, ["-n", script]) => Some(sed_lines(script).unwrap_or(ReadSpan::Part)),
      (_, ["-n", _]) => Some(ReadSpan::Part),
      _ => None,
    },
    _ => None,
  }
}

fn is_count(word: &str) -> bool {
  !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit())
}

/// The lines `head ARGS` keeps: `-n N`, `-nN`, `-N`, or 10; `None` for bytes (`-c`).
fn head_lines(args: &[&str]) -> Option<u64> {
  let mut n = 10;
  let mut k = 0;
  while k < args.len() {
    let w = args[k];
    if w == "-n" {
      k += 1;
      n = args.get(k)?.parse().ok()?;
    } else if let Some(v) = w.strip_prefix("-n").or_else(|| w.strip_prefix('-')) {
      n = v.parse().ok()?;
    }
    k += 1;
  }
  Some(n)
}

/// The lines a `sed -n` script prints: `'A,Bp'`, `'Ap'` or `'A,$p'`.
fn sed_lines(script: &str) -> Option<ReadSpan> {
  let script = clean_path(script)?;
  let range = script.strip_suffix('p')?;
  let number = |s: &str| s.trim().parse::<u64>().ok();
  let (a, b) = match range.split_once(',') {
    Some((a, "$")) => (number(a)?, None),
    Some((a, b)) => (number(a)?, Some(number(b)?)),
    None => {
      let a = number(range)?;
      (a, Some(a))
    }
  };
  Some(ReadSpan::Lines(a.max(1), b))
}

/// One command of rule 4 (its words), without pipes or lists.
fn simple_file_op(words: &[&str]) -> Option<ShellOp> {
  let (&program, rest) = words.split_first()?;
  let path = |raw: &str| {
    let p = clean_path(raw)?;
    let p = p.strip_prefix("./").unwrap_or(&p).to_string();
    (!p.is_empty() && !p.starts_with('-') && !p.contains(['<', '>', '$'])).then_some(p)
  };
  // Redirections: `> F`, `>F`, `>> F`, `>>F`; a here-document `<<`.
  let mut target = None;
  let mut heredoc = false;
  let mut operands = Vec::new();
  let mut k = 0;
  while k < rest.len() {
    let w = rest[k];
    if let Some(after) = w.strip_prefix("<<") {
      heredoc = true;
      if after.is_empty() || after == "-" {
        k += 1;
      }
    } else if let Some(after) = w.strip_prefix('>') {
      let (append, after) = match after.strip_prefix('>') {
        Some(a) => (true, a),
        None => (false, after),
      };
      let file = if after.is_empty() {
        k += 1;
        rest.get(k).copied()?
      } else {
        after
      };
      target = Some((if append { FileOpKind::Edit } else { FileOpKind::Create }, path(file)?));
    } else if w.starts_with('<') || w.starts_with("2>") || w.starts_with('&') {
      return None;
    } else {
      operands.push(w);
    }
    k += 1;
  }
  let flags = |ws: &[&str]| ws.iter().filter(|w| w.starts_with('-')).count();
  let op = |kind, path, span| Some(ShellOp { kind, path, span });
  match (program, target) {
    ("cat", Some((kind, file))) => (heredoc && operands.is_empty()).then_some(ShellOp {
      kind,
      path: file,
      span: ReadSpan::Whole,
    }),
    (_, Some(_)) => None,
    ("sed", None) => {
      let file = path(operands.last()?)?;
      if operands.iter().any(|w| w.starts_with("-i")) {
        op(FileOpKind::Edit, file, ReadSpan::Whole)
      } else if operands.first() == Some(&"-n") && operands.len() == 3 {
        op(FileOpKind::Read, file, sed_lines(operands[1]).unwrap_or(ReadSpan::Part))
      } else {
        None
      }
    }
    (reader, None) if SHELL_READERS.contains(&reader) && !heredoc => {
      let files: Vec<&&str> = operands.iter().filter(|w| !w.starts_with('-')).collect();
      // `head -n 20 F`: a flag's value is an operand too; the file is the last word.
      let [.., file] = files.as_slice() else { return None };
      let values_ok =
        files.len() == 1 || (files.len() == 2 && flags(&operands) >= 1 && is_count(files[0]));
      if !values_ok {
        return None;
      }
      let span = match reader {
        "head" => head_lines(&operands[..operands.len() - 1])
          .map_or(ReadSpan::Part, |n| ReadSpan::Lines(1, Some(n))),
        "tail" => ReadSpan::Part,
        _ => ReadSpan::Whole,
      };
      op(FileOpKind::Read, path(file)?, span)
    }
    _ => None,
  }
}

/// The facts of call `c` of message `caller`.
fn facts_of_call<'c>(conv: &Conversation<'c>, caller: usize, c: usize) -> Option<&'c CallFacts> {
  let caller = conv.message(caller);
  facts(caller)
    .call_facts
    .get_or_init(|| caller.tool_calls.iter().map(CallFacts::of).collect())
    .get(c)
}

/// What a tool result's own text says about a file operation, found in one reading of the text
/// and kept in the message's memo.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResultFacts {
  /// A directory listing (OpenHands `Here's the files and directories…`): not a file operation.
  listing: bool,
  header: Option<Header>,
  json_path: Option<String>,
  labelled_path: Option<String>,
  current_directory: Option<String>,
  reports_failure: bool,
  shell_failed: bool,
  /// [`edited_snippet`] finds a numbered snippet.
  snippet: bool,
}

impl ResultFacts {
  fn of(text: &str) -> ResultFacts {
    if text.trim_start().starts_with("Here's the files and directories") {
      return ResultFacts { listing: true, ..ResultFacts::default() };
    }
    ResultFacts {
      listing: false,
      header: result_header(text),
      json_path: json_result_path(text),
      labelled_path: labelled_path(text),
      current_directory: current_directory(text).map(String::from),
      reports_failure: reports_failure(text),
      shell_failed: shell_failed(text),
      snippet: edited_snippet(text).is_some(),
    }
  }
}

/// The lines an edit's result shows of the edited file: after a line ending with `snippet of
/// the edited file:` or `on a snippet of P:` (Claude Code's `Edit`, the OpenHands editor), the
/// first and last numbers of one contiguous run of numbered lines (`   12→text`, `   12\ttext`).
pub fn edited_snippet(text: &str) -> Option<(u64, u64)> {
  let at = text.find("on a snippet of ")?;
  let rest = &text[at..];
  let body = &rest[rest.find(":\n")? + 2..];
  numbered_run(body)
}

/// The first and last numbers of the numbered lines of `text` when they run on without a gap
/// (lines without a number, such as a trailing note, are skipped).
pub fn numbered_run(text: &str) -> Option<(u64, u64)> {
  let mut span: Option<(u64, u64)> = None;
  for n in text.lines().filter_map(numbered_line) {
    span = match span {
      None => Some((n, n)),
      Some((first, last)) if n == last + 1 => Some((first, n)),
      Some(_) => return None,
    };
  }
  span
}

/// The number of a numbered line: optional spaces, digits, then `:`, `|`, a tab or `→` (the
/// numbering of `cat -n`, SWE-agent, opencode and Claude Code).
pub fn numbered_line(line: &str) -> Option<u64> {
  let t = line.trim_start_matches(' ');
  let digits = t.bytes().take_while(u8::is_ascii_digit).count();
  if digits == 0 || digits > 9 {
    return None;
  }
  let rest = &t[digits..];
  if rest.starts_with([':', '|', '\t', '→']) {
    t[..digits].parse().ok()
  } else {
    None
  }
}

/// The file operation of every message, by index: those the conversation was given
/// ([`GrowingAnalysis::give`]), else found now.
pub fn file_operations<'c>(conv: &Conversation<'c>) -> Cow<'c, [Option<FileOp>]> {
  match numbered_file_operations(conv) {
    Cow::Borrowed(given) => Cow::Borrowed(given.operations()),
    Cow::Owned(found) => Cow::Owned(found.operations),
  }
}

/// [`file_operations`] with their paths numbered ([`FileOperations`]).
pub fn numbered_file_operations<'c>(conv: &Conversation<'c>) -> Cow<'c, FileOperations> {
  match GrowingAnalysis::file_operations(conv) {
    Some(given) => {
      debug_assert!(given
        .operations
        .iter()
        .enumerate()
        .all(|(i, op)| *op == file_operation(conv, i)));
      Cow::Borrowed(given)
    }
    None => {
      let mut found = FileOperations::default();
      found.extend(conv);
      Cow::Owned(found)
    }
  }
}

/// Each message's file operation ([`file_operation`]), by index, with each path numbered
/// (the same path, the same number, in order of first appearance): what reads every operation
/// of a conversation on every call (the classification) indexes by number instead of hashing
/// paths. A growing conversation's operations are found once per message ([`FileOperations::extend`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileOperations {
  operations: Vec<Option<FileOp>>,
  /// Per message, its operation's path number.
  numbers: Vec<Option<usize>>,
  /// The operations of the messages that hold more than one ([`file_operations_of`]), with
  /// their path numbers: by message ascending, each message's in the order of its results.
  several: Vec<(usize, FileOp, usize)>,
  /// The messages that answer several calls, with how many they answer, ascending: what the
  /// classification reads instead of every message.
  answering_several: Vec<(usize, usize)>,
  /// Path -> number (a path is input text: std's hasher, see Cargo.toml).
  by_path: std::collections::HashMap<Arc<str>, usize>,
  /// Number -> path.
  paths: Vec<Arc<str>>,
}

impl FileOperations {
  /// Adds the operations of the messages of `conv` after the ones already held (the messages
  /// before must be the same).
  pub fn extend(&mut self, conv: &Conversation<'_>) {
    for i in self.operations.len()..conv.len() {
      let answers = conv.message(i).answers.len();
      if answers < 2 {
        let op = single_operation(conv, i);
        let number = op.as_ref().map(|op| self.number(&op.path));
        self.numbers.push(number);
        self.operations.push(op);
        continue;
      }
      self.answering_several.push((i, answers));
      let ops = file_operations_of(conv, i);
      if ops.len() > 1 {
        for op in &ops {
          let number = self.number(&op.path);
          self.several.push((i, op.clone(), number));
        }
      }
      let op = representative(ops);
      let number = op.as_ref().map(|op| self.number(&op.path));
      self.numbers.push(number);
      self.operations.push(op);
    }
  }

  /// The number of `path`, numbering it if it is new.
  fn number(&mut self, path: &str) -> usize {
    match self.by_path.get(path) {
      Some(&number) => number,
      None => {
        let path: Arc<str> = Arc::from(path);
        self.by_path.insert(Arc::clone(&path), self.paths.len());
        self.paths.push(path);
        self.paths.len() - 1
      }
    }
  }

  /// Every operation of message `i` with its path number: several for a message of several
  /// results about files, else its operation, if any.
  pub fn of_message(&self, i: usize) -> Vec<(&FileOp, usize)> {
    let several = self.several_of(i);
    if !several.is_empty() {
      return several.iter().map(|(_, op, n)| (op, *n)).collect();
    }
    match (self.operations.get(i), self.path_number(i)) {
      (Some(Some(op)), Some(n)) => vec![(op, n)],
      _ => Vec::new(),
    }
  }

  /// The messages that answer several calls (parallel calls answered in one message), with
  /// how many calls each answers, ascending.
  pub fn answering_several(&self) -> &[(usize, usize)] {
    &self.answering_several
  }

  /// The operations of message `i` when it holds more than one.
  fn several_of(&self, i: usize) -> &[(usize, FileOp, usize)] {
    let start = self.several.partition_point(|(m, _, _)| *m < i);
    let end = start + self.several[start..].partition_point(|(m, _, _)| *m == i);
    &self.several[start..end]
  }

  /// Every operation of every message, in order: (message, operation, path number). A message
  /// of several results gives one per result about a file.
  pub fn each(&self) -> Each<'_> {
    Each { operations: self, message: 0, several: 0, in_several: false }
  }

  /// Every message's operation.
  pub fn operations(&self) -> &[Option<FileOp>] {
    &self.operations
  }

  /// The number of message `i`'s operation's path (`None` without an operation).
  pub fn path_number(&self, i: usize) -> Option<usize> {
    self.numbers.get(i).copied().flatten()
  }

  /// How many paths are numbered: numbers are below this.
  pub fn paths(&self) -> usize {
    self.paths.len()
  }

  /// The path numbered `number` (below [`FileOperations::paths`]).
  pub fn path(&self, number: usize) -> &Arc<str> {
    &self.paths[number]
  }

  /// The number of messages.
  pub fn len(&self) -> usize {
    self.operations.len()
  }

  /// Whether there are no messages.
  pub fn is_empty(&self) -> bool {
    self.operations.is_empty()
  }
}

/// The iterator of [`FileOperations::each`].
pub struct Each<'o> {
  operations: &'o FileOperations,
  /// The message looked at.
  message: usize,
  /// The next entry of `several`.
  several: usize,
  /// Whether the message's operations came from `several`.
  in_several: bool,
}

impl<'o> Iterator for Each<'o> {
  type Item = (usize, &'o FileOp, usize);

  fn next(&mut self) -> Option<Self::Item> {
    let ops = self.operations;
    loop {
      let i = self.message;
      if i >= ops.operations.len() {
        return None;
      }
      if let Some((m, op, n)) = ops.several.get(self.several).filter(|(m, _, _)| *m == i) {
        self.several += 1;
        self.in_several = true;
        return Some((*m, op, *n));
      }
      self.message += 1;
      if std::mem::take(&mut self.in_several) {
        continue;
      }
      if let (Some(op), Some(n)) = (&ops.operations[i], ops.numbers[i]) {
        return Some((i, op, n));
      }
    }
  }
}

/// The kind of file operation a tool's name implies, if any (rule 2 of the module docs).
pub fn kind_for_tool_name(name: &str) -> Option<FileOpKind> {
  let words = name_words(name);
  NAME_RULES.iter().find_map(|(kind, keywords)| {
    let hit = words
      .iter()
      .any(|w| keywords.iter().any(|&(k, exact)| if exact { w == k } else { w.starts_with(k) }));
    hit.then_some(*kind)
  })
}

/// Splits a tool name into lower-case words at non-alphanumeric characters and camelCase humps.
fn name_words(name: &str) -> Vec<String> {
  let mut words = Vec::new();
  let mut word = String::new();
  let mut prev_lower = false;
  for c in name.chars() {
    if !c.is_alphanumeric() {
      if !word.is_empty() {
        words.push(std::mem::take(&mut word));
      }
      prev_lower = false;
      continue;
    }
    if c.is_uppercase() && prev_lower && !word.is_empty() {
      words.push(std::mem::take(&mut word));
    }
    prev_lower = c.is_lowercase() || c.is_numeric();
    word.extend(c.to_lowercase());
  }
  if !word.is_empty() {
    words.push(word);
  }
  words
}

/// The JSON object in `arguments` (a call's arguments, or a tool result), if it is one.
pub(crate) fn parse_object(arguments: &str) -> Option<Map<String, Value>> {
  if !arguments.trim_start().starts_with('{') {
    return None;
  }
  match serde_json::from_str(arguments) {
    Ok(Value::Object(map)) => Some(map),
    _ => None,
  }
}

/// Rule 1 of the kind: an editor tool's `command` sub-command.
pub(crate) fn editor_command(args: &Map<String, Value>) -> Option<FileOpKind> {
  match args.get("command")?.as_str()? {
    "view" => Some(FileOpKind::Read),
    "create" => Some(FileOpKind::Create),
    "str_replace" | "insert" | "undo_edit" => Some(FileOpKind::Edit),
    _ => None,
  }
}

fn argument_path(args: &Map<String, Value>) -> Option<String> {
  string_field(args, PATH_ARGUMENTS)
}

fn string_field(map: &Map<String, Value>, keys: &[&str]) -> Option<String> {
  keys.iter().find_map(|k| match map.get(*k) {
    Some(Value::String(s)) => clean_path(s),
    _ => None,
  })
}

/// Trims a path and the quotes or backticks around it; `None` when nothing is left.
fn clean_path(raw: &str) -> Option<String> {
  let mut p = raw.trim();
  for q in ['`', '"', '\''] {
    if p.len() >= 2 && p.starts_with(q) && p.ends_with(q) {
      p = p[1..p.len() - 1].trim();
    }
  }
  (!p.is_empty()).then(|| p.to_string())
}

/// A path named by a tool result's header, with the kind the header implies, if any.
#[derive(Debug, Clone)]
struct Header {
  path: String,
  kind: Option<FileOpKind>,
}

/// The result headers of rule 3 (kinds) and 2 (paths).
fn result_header(text: &str) -> Option<Header> {
  let start = text.trim_start();
  let first = start.lines().next().unwrap_or("");
  let openhands: [(&str, &str, FileOpKind); 4] = [
    ("Here's the result of running `cat -n` on ", ":", FileOpKind::Read),
    ("The file ", " has been edited.", FileOpKind::Edit),
    ("File created successfully at: ", "", FileOpKind::Create),
    ("Last edit to ", " undone successfully.", FileOpKind::Edit),
  ];
  for (prefix, suffix, kind) in openhands {
    let Some(rest) = first.strip_prefix(prefix) else { continue };
    let path = if suffix.is_empty() { Some(rest) } else { rest.rfind(suffix).map(|e| &rest[..e]) };
    if let Some(path) = path.and_then(clean_path) {
      return Some(Header { path, kind: Some(kind) });
    }
  }
  text.lines().find_map(|line| {
    let rest = line.strip_prefix("[File: ")?.trim_end().strip_suffix(']')?;
    // `P (N lines total)` or `P (N lines total after edit)`; otherwise the whole bracket.
    if let Some(open) = rest.rfind(" (") {
      let info = &rest[open + 2..];
      let lines_total = info
        .strip_suffix(')')
        .and_then(|i| i.split_once(" lines total"))
        .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
      if let Some((_, after)) = lines_total {
        let kind = if after == " after edit" { FileOpKind::Edit } else { FileOpKind::Read };
        return clean_path(&rest[..open]).map(|path| Header { path, kind: Some(kind) });
      }
    }
    clean_path(rest).map(|path| Header { path, kind: None })
  })
}

fn json_result_path(text: &str) -> Option<String> {
  parse_object(text).and_then(|map| string_field(&map, PATH_FIELDS))
}

/// The seed's `File: P` / `Path: P` pattern, anchored to the start of a line.
fn labelled_path(text: &str) -> Option<String> {
  text.lines().find_map(|line| {
    let rest = line.strip_prefix("File:").or_else(|| line.strip_prefix("Path:"))?;
    clean_path(rest)
  })
}

/// SWE-agent's `(Current directory: D)` footer.
fn current_directory(text: &str) -> Option<&str> {
  text.lines().rev().find_map(|line| {
    let dir = line.trim().strip_prefix("(Current directory: ")?.strip_suffix(')')?.trim();
    dir.starts_with('/').then_some(dir)
  })
}

fn is_relative(path: &str) -> bool {
  let bytes = path.as_bytes();
  let windows_drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
  !(path.starts_with('/') || path.starts_with('~') || path.starts_with('\\') || windows_drive)
}

fn join(dir: &str, path: &str) -> String {
  let mut rel = path;
  while let Some(rest) = rel.strip_prefix("./") {
    rel = rest;
  }
  format!("{}/{}", dir.trim_end_matches('/'), rel)
}

/// Whether a shell command's result reports failure: an error flag or prefix
/// ([`reports_failure`]), a non-zero exit status (OpenHands' footer `[The command completed
/// with exit code N.]`, mini-swe-agent's `<returncode>N</returncode>`, Codex CLI's JSON
/// `{"output":…,"metadata":{"exit_code":N…}}` and its later `Exit code: N` or `Process exited
/// with code N` lines), or a line starting with `ls:`, `cat:`, `sed:`, `nl:`, `head:` or
/// `tail:` (their error messages).
pub(crate) fn shell_failed(text: &str) -> bool {
  let nonzero = |code: &str| {
    let code: String = code.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    !code.is_empty() && code != "0"
  };
  if text.trim_start().starts_with("{\"output\"") {
    // The metadata follows the output, whose quotes are escaped inside the JSON string.
    if let Some(at) = text.rfind("\"exit_code\":") {
      return nonzero(text[at + "\"exit_code\":".len()..].trim_start());
    }
  }
  // Codex CLI's header lines come before its output.
  let header = text.lines().take(4).any(|line| {
    let line = line.trim();
    line
      .strip_prefix("Exit code: ")
      .or_else(|| line.strip_prefix("Process exited with code "))
      .is_some_and(nonzero)
  });
  header
    || reports_failure(text)
    || text.lines().any(|line| {
      let line = line.trim();
      if ["ls: ", "cat: ", "sed: ", "nl: ", "head: ", "tail: "].iter().any(|p| line.starts_with(p))
      {
        return true;
      }
      if let Some(code) = line.strip_prefix("<returncode>") {
        return nonzero(code);
      }
      line.starts_with('[')
        && line.find("exit code ").is_some_and(|at| nonzero(&line[at + "exit code ".len()..]))
    })
}

/// Whether a tool result's text reports a failed operation: it starts (after whitespace) with
/// one of the failure prefixes of the module docs (`ERROR`, `Error:`, `Ran into [Errno`…).
pub fn reports_failure(text: &str) -> bool {
  let start = text.trim_start();
  FAILURE_PREFIXES.iter().any(|p| start.starts_with(p))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::tokens::Encoding;
  use crate::testing::{call, named_result, result};

  /// A call of `tool` with `args` answered by `text`: the file operation of the result.
  fn op(tool: &str, args: &str, text: &str) -> Option<FileOp> {
    let msgs = vec![call("c", tool, args), result("c", text)];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(file_operation(&conv, 0), None, "a call is not a file operation");
    file_operation(&conv, 1)
  }

  fn ok(path: &str, kind: FileOpKind) -> Option<FileOp> {
    Some(FileOp { path: path.into(), kind, failed: false, shows_view: false, part: None })
  }

  /// A tool result with only a `name` and content, as in the seed's tests.
  fn named(name: &str, content: &str) -> Option<FileOp> {
    let msgs = vec![named_result(name, content)];
    file_operation(&Conversation::new(&msgs, Encoding::O200kBase), 0)
  }

  #[test]
  fn numbered_operations_give_a_path_one_number_and_grow_with_the_conversation() {
    let msgs = vec![
      call("1", "read_file", r#"{"path":"/a"}"#),
      result("1", "A"),
      call("2", "edit_file", r#"{"path":"/b"}"#),
      result("2", "ok"),
      call("3", "write_file", r#"{"path":"/a"}"#),
      result("3", "ok"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let all = numbered_file_operations(&conv).into_owned();
    let numbers: Vec<Option<usize>> = (0..msgs.len()).map(|i| all.path_number(i)).collect();
    assert_eq!(numbers, vec![None, Some(0), None, Some(1), None, Some(0)]);
    assert_eq!(all.paths(), 2);
    assert_eq!(all.operations(), &file_operations(&conv)[..]);
    // Found a message at a time, as a growing conversation's: the same.
    let mut grown = FileOperations::default();
    for end in 1..=msgs.len() {
      grown.extend(&Conversation::new(&msgs[..end], Encoding::O200kBase));
    }
    assert_eq!(grown, all);
    // A conversation given them reads them.
    let mut kept = crate::analysis::growing::GrowingAnalysis::default();
    kept.extend(&conv);
    let given = kept.give(Conversation::new(&msgs, Encoding::O200kBase));
    assert!(matches!(numbered_file_operations(&given), Cow::Borrowed(_)));
  }

  #[test]
  fn tool_names_imply_kinds_in_the_seeds_order() {
    use FileOpKind::*;
    for (name, kind) in [
      ("read_file", Some(Read)),
      ("readFile", Some(Read)),
      ("Read", Some(Read)),
      ("view_file", Some(Read)),
      ("open", Some(Read)),
      ("cat", Some(Read)),
      ("get_file_contents", Some(Read)),
      ("write_file", Some(Create)),
      ("writeFile", Some(Create)),
      ("create", Some(Create)),
      ("overwrite_file", Some(Create)),
      ("edit", Some(Edit)),
      ("MultiEdit", Some(Edit)),
      ("str_replace_editor", Some(Edit)),
      ("insert", Some(Edit)),
      ("modify_file", Some(Edit)),
      ("delete_file", Some(Delete)),
      ("removeFile", Some(Delete)),
      ("rm", Some(Delete)),
      ("read_write", Some(Create)),
      ("bash", None),
      ("execute_bash", None),
      ("find_file", None),
      ("decompile", None),
      ("duplicate", None),
      ("target_getter", None),
      ("openai_chat", None),
      ("", None),
    ] {
      assert_eq!(kind_for_tool_name(name), kind, "{name}");
    }
  }

  #[test]
  fn other_agents_shapes_codex_gemini_cli_and_cursor() {
    use FileOpKind::*;
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** End Patch";
    for (tool, args, expected) in [
      // Codex CLI: the shell tool takes an argument vector.
      ("shell", r#"{"command":["bash","-lc","cat src/a.rs"]}"#.to_string(), ok("src/a.rs", Read)),
      (
        "shell",
        r#"{"command":["bash","-lc","sed -n '1,80p' src/a.rs"]}"#.into(),
        ok("src/a.rs", Read),
      ),
      ("shell", r#"{"command":["cat","src/a.rs"]}"#.into(), ok("src/a.rs", Read)),
      // Its newer exec_command takes a command line under `cmd`.
      (
        "exec_command",
        r#"{"cmd":"sed -n '1,80p' src/a.rs","workdir":"/r"}"#.into(),
        ok("src/a.rs", Read),
      ),
      ("shell", r#"{"command":["bash","-lc","ls src"]}"#.into(), None),
      ("shell", r#"{"command":[]}"#.into(), None),
      // Codex's apply_patch: as an argument, as the shell's argument vector, free-form.
      ("apply_patch", serde_json::json!({ "input": patch }).to_string(), ok("src/lib.rs", Edit)),
      (
        "shell",
        serde_json::json!({ "command": ["apply_patch", patch] }).to_string(),
        ok("src/lib.rs", Edit),
      ),
      ("apply_patch", patch.into(), ok("src/lib.rs", Edit)),
      ("apply_patch", patch.replace("Update File", "Add File"), ok("src/lib.rs", Create)),
      ("apply_patch", patch.replace("Update File", "Delete File"), ok("src/lib.rs", Delete)),
      ("apply_patch", r#"{"input":"*** Begin Patch\n*** End Patch"}"#.into(), None),
      // Gemini CLI's read_file and Cursor's read_file / edit_file.
      ("read_file", r#"{"absolute_path":"/r/a.ts"}"#.into(), ok("/r/a.ts", Read)),
      (
        "read_file",
        r#"{"target_file":"src/a.ts","start_line_one_indexed":1}"#.into(),
        ok("src/a.ts", Read),
      ),
      ("edit_file", r#"{"target_file":"src/a.ts","code_edit":"x"}"#.into(), ok("src/a.ts", Edit)),
    ] {
      assert_eq!(op(tool, &args, "done"), expected, "{tool} {args}");
    }
  }

  /// Claude Code, Codex CLI 0.80, opencode and Crush, in the shapes their logs show (see
  /// `../shared/corpus/SOURCES.md`).
  #[test]
  fn claude_code_codex_opencode_and_crush_tools() {
    use FileOpKind::*;
    for (tool, args, expected) in [
      // Codex 0.80's shell_command takes one string; a quoted pipeline pages through a file.
      (
        "shell_command",
        r#"{"command":"sed -n '230,360p' src/a.rs","workdir":"/r"}"#,
        ok("src/a.rs", Read),
      ),
      (
        "shell_command",
        r#"{"command":"nl -ba -w1 -s': ' src/a.rs | sed -n '1,240p'"}"#,
        ok("src/a.rs", Read),
      ),
      (
        "shell",
        r#"{"command":["bash","-lc","nl -ba -w1 -s': ' src/a.rs | sed -n '1,240p'"]}"#,
        ok("src/a.rs", Read),
      ),
      ("shell_command", r#"{"command":"rg -n foo src"}"#, None),
      // Claude Code.
      ("Read", r#"{"file_path":"/r/a.ts","offset":10,"limit":40}"#, ok("/r/a.ts", Read)),
      ("Edit", r#"{"file_path":"/r/a.ts","old_string":"a","new_string":"b"}"#, ok("/r/a.ts", Edit)),
      ("MultiEdit", r#"{"file_path":"/r/a.ts","edits":[]}"#, ok("/r/a.ts", Edit)),
      ("Write", r#"{"file_path":"/r/a.ts","content":"x"}"#, ok("/r/a.ts", Create)),
      ("Bash", r#"{"command":"cat /r/a.ts","description":"Show a.ts"}"#, ok("/r/a.ts", Read)),
      // opencode and Crush.
      ("view", r#"{"file_path":"/r/a.go","offset":0,"limit":80}"#, ok("/r/a.go", Read)),
      ("edit", r#"{"file_path":"/r/a.go","old_string":"a","new_string":"b"}"#, ok("/r/a.go", Edit)),
      ("multiedit", r#"{"file_path":"/r/a.go","edits":[]}"#, ok("/r/a.go", Edit)),
      ("write", r#"{"file_path":"/r/a.go","content":"x"}"#, ok("/r/a.go", Create)),
      ("bash", r#"{"command":"head -n 20 /r/a.go"}"#, ok("/r/a.go", Read)),
    ] {
      assert_eq!(op(tool, args, "done"), expected, "{tool} {args}");
    }
  }

  /// The failures these agents report: the operation did nothing, so it supersedes nothing.
  #[test]
  fn claude_code_codex_opencode_and_crush_failures() {
    let failed =
      |tool: &str, args: &str, text: &str| op(tool, args, text).is_some_and(|o| o.failed);
    let refused = "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>";
    assert!(failed("Write", r#"{"file_path":"/r/a.ts","content":"x"}"#, refused));
    assert!(failed(
      "Edit",
      r#"{"file_path":"/r/a.ts","old_string":"a","new_string":"b"}"#,
      refused
    ));
    assert!(failed(
      "edit",
      r#"{"file_path":"/r/a.go"}"#,
      "old_string not found in file. Make sure it matches exactly"
    ));
    assert!(failed("view", r#"{"file_path":"/r/b.go"}"#, "File not found: /r/b.go"));
    let patch = serde_json::json!({"input": "*** Begin Patch\n*** Update File: a.md\n@@\n-a\n+b\n*** End Patch"}).to_string();
    assert!(failed(
      "apply_patch",
      &patch,
      "apply_patch verification failed: Failed to find expected lines"
    ));
    // Codex's shell output: JSON with its exit code (0.3x to 0.5x), or header lines (0.80).
    let sed = r#"{"command":["bash","-lc","sed -n '1,20p' a.md"]}"#;
    let missing = r#"{"output":"sed: can't read a.md: No such file\n","metadata":{"exit_code":2}}"#;
    assert!(failed("shell", sed, missing));
    let quoting = r##"{"output":"# Title\n\"exit_code\":1\n","metadata":{"exit_code":0}}"##;
    assert!(!failed("shell", sed, quoting));
    let line = r#"{"command":"sed -n '1,20p' a.md"}"#;
    assert!(failed(
      "shell_command",
      line,
      "Exit code: 1\nWall time: 0.1 seconds\nOutput:\nsed: a.md: No such file"
    ));
    assert!(!failed(
      "shell_command",
      line,
      "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n# Title"
    ));
    assert!(failed(
      "exec_command",
      r#"{"cmd":"cat a.md"}"#,
      "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 1\nOutput:\ncat: a.md: No such file"
    ));
  }

  /// An edit whose result shows the edited region's numbered lines is a view of them.
  #[test]
  fn an_edit_showing_its_snippet_is_a_view() {
    let claude = "The file /r/a.ts has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    12→const a = 1;\n    13→const b = 2;\n    14→export { a, b };\n\n<system-reminder>\nNote.\n</system-reminder>";
    assert_eq!(edited_snippet(claude), Some((12, 14)));
    let openhands = "The file /w/a.py has been edited. Here's the result of running `cat -n` on a snippet of /w/a.py:\n     5\tx = 1\n     6\ty = 2\nReview the changes.";
    assert_eq!(edited_snippet(openhands), Some((5, 6)));
    assert_eq!(edited_snippet("Content replaced in file: /r/a.go"), None);
    let edit = r#"{"file_path":"/r/a.ts","old_string":"a","new_string":"b"}"#;
    assert!(op("Edit", edit, claude).is_some_and(|o| o.shows_view && o.kind == FileOpKind::Edit));
    assert!(op("Edit", edit, "The file /r/a.ts has been updated.").is_some_and(|o| !o.shows_view));
    assert_eq!(numbered_line("  7→x"), Some(7));
    assert_eq!(numbered_line("7 x"), None);
  }

  #[test]
  fn editor_sub_commands_win_over_the_tool_name() {
    let path = "/w/a.py";
    assert_eq!(
      op(
        "str_replace_editor",
        r#"{"command":"view","path":"/w/a.py"}"#,
        "Here's the result of running `cat -n` on /w/a.py:\n1\tx"
      ),
      ok(path, FileOpKind::Read)
    );
    assert_eq!(
      op(
        "str_replace_editor",
        r#"{"command":"create","path":"/w/a.py","file_text":"x"}"#,
        "File created successfully at: /w/a.py"
      ),
      ok(path, FileOpKind::Create)
    );
    for command in ["str_replace", "insert", "undo_edit"] {
      let args = format!(r#"{{"command":"{command}","path":"/w/a.py"}}"#);
      assert_eq!(op("str_replace_editor", &args, "ok"), ok(path, FileOpKind::Edit), "{command}");
    }
    // A shell command in `command` is not a sub-command: rule 4 reads it.
    assert_eq!(op("bash", r#"{"command":"cat /w/a.py"}"#, "x"), ok(path, FileOpKind::Read));
    assert_eq!(op("bash", r#"{"command":"view /w/a.py"}"#, "x"), None);
  }

  #[test]
  fn shell_command_lines_that_read_or_write_one_file() {
    use FileOpKind::*;
    let hit = |kind, path: &str| Some((kind, path.to_string()));
    let table = [
      ("cat ./pydicom/config.py", hit(Read, "pydicom/config.py")),
      ("cat -n src/a.rs", hit(Read, "src/a.rs")),
      ("head -100 tests/t.py", hit(Read, "tests/t.py")),
      ("head -n 20 tests/t.py", hit(Read, "tests/t.py")),
      ("tail -n 5 log.txt", hit(Read, "log.txt")),
      ("sed -n '27,35p' django/views.py", hit(Read, "django/views.py")),
      ("cat > pydicom/config.py << 'EOF'\nimport logging\nEOF", hit(Create, "pydicom/config.py")),
      ("cat <<EOF > /w/t.py\nprint(1)\nEOF", hit(Create, "/w/t.py")),
      ("cat >>notes.md <<'X'\nmore\nX", hit(Edit, "notes.md")),
      ("sed -i 's/a b/c/' src/a.py", hit(Edit, "src/a.py")),
      // A read piped into filters that select lines, and a leading `cd`.
      ("nl -ba src/a.py | sed -n '10,40p'", hit(Read, "src/a.py")),
      ("head -n 380 pvlib/tools.py | tail -n 50", hit(Read, "pvlib/tools.py")),
      ("cat a.py | head", hit(Read, "a.py")),
      ("cd /w && cat a.py", hit(Read, "/w/a.py")),
      ("cd /w && cat /etc/hosts", hit(Read, "/etc/hosts")),
      // Not one simple command on one file.
      ("cat a.py b.py", None),
      ("cat a.py | grep foo", None),
      ("cat a.py | head > b.py", None),
      ("cd /w && cat a.py && cat b.py", None),
      ("cd /w; cat a.py", None),
      ("cd /w && sed -i 's/a/b/' src/x.py", None),
      ("cd /w && cat > t.py << 'EOF'", None),
      ("cat > a.py << EOF | head", None),
      ("cat src/*.py", None),
      ("cat > out.txt", None),
      ("echo hi > a.txt", None),
      ("sed 's/a/b/' a.py", None),
      ("grep -n foo a.py", None),
      ("head -n", None),
      ("cat $FILE", None),
      ("cat \"$FILE\"", None),
      ("cat 'unterminated", None),
      ("nl -ba -s': ' a.py | grep x", None),
    ];
    for (command, want) in table {
      assert_eq!(shell_file_op(command), want, "{command}");
    }
  }

  #[test]
  fn a_shell_read_that_exits_non_zero_read_nothing() {
    let failed = |path: &str, kind| {
      Some(FileOp { path: path.into(), kind, failed: true, shows_view: false, part: None })
    };
    let cat = r#"{"command":"cat tests/a.py"}"#;
    let gone =
      "<returncode>1</returncode>\n<output>\ncat: tests/a.py: No such file or directory\n</output>";
    assert_eq!(op("bash", cat, gone), failed("tests/a.py", FileOpKind::Read));
    let footer = "cat: tests/a.py: No such file\n[The command completed with exit code 1.]";
    assert_eq!(op("execute_bash", cat, footer), failed("tests/a.py", FileOpKind::Read));
    let fine = "<returncode>0</returncode>\n<output>\nprint(1)\n</output>";
    assert_eq!(op("bash", cat, fine), ok("tests/a.py", FileOpKind::Read));
    // A script that writes a file, then runs a failing test, still wrote it.
    let write = r#"{"command":"cat > t.py << 'EOF'\nassert 0\nEOF\npython t.py"}"#;
    let status = "<returncode>1</returncode>\n<output>\nAssertionError\n</output>";
    assert_eq!(op("bash", write, status), ok("t.py", FileOpKind::Create));
  }

  #[test]
  fn what_a_shell_read_shows_of_its_file() {
    use ReadSpan::*;
    let table = [
      ("cat a.py", Whole),
      ("nl -ba a.py", Whole),
      ("cd /w && cat -n a.py", Whole),
      ("head a.py", Lines(1, Some(10))),
      ("head -n 20 a.py", Lines(1, Some(20))),
      ("head -40 a.py", Lines(1, Some(40))),
      ("head -c 100 a.py", Part),
      ("tail -n 5 a.py", Part),
      ("sed -n '27,35p' a.py", Lines(27, Some(35))),
      ("sed -n 12p a.py", Lines(12, Some(12))),
      ("sed -n '300,$p' a.py", Lines(300, None)),
      ("sed -n '/^def/p' a.py", Part),
      ("nl -ba a.py | sed -n '10,40p'", Lines(10, Some(40))),
      ("cat -n a.py | head -n 50", Lines(1, Some(50))),
      ("head -n 380 a.py | tail -n 50", Part),
      ("sed -n '1,80p' a.py | head", Part),
      // Quoted flags, as Codex pages through a file.
      ("nl -ba -w1 -s': ' a.py | sed -n '1,240p'", Lines(1, Some(240))),
      ("nl -ba -s'| ' a.py", Whole),
    ];
    for (command, want) in table {
      let got = shell_operation(command).map(|op| (op.kind, op.span));
      assert_eq!(got, Some((FileOpKind::Read, want)), "{command}");
    }
    let write = shell_operation("cat > a.py << 'EOF'\nx\nEOF").map(|op| op.span);
    assert_eq!(write, Some(Whole));
  }

  #[test]
  fn paths_come_from_arguments_then_results() {
    for key in PATH_ARGUMENTS {
      let args = format!(r#"{{"{key}": " src/a.ts "}}"#);
      assert_eq!(op("read_file", &args, "text"), ok("src/a.ts", FileOpKind::Read), "{key}");
    }
    // Arguments win over the result.
    assert_eq!(op("read_file", r#"{"path":"a"}"#, "File: b"), ok("a", FileOpKind::Read));
    // The seed's JSON fields and File:/Path: lines.
    assert_eq!(
      named("create_file", r#"{"path": "/app/new.ts"}"#),
      ok("/app/new.ts", FileOpKind::Create)
    );
    assert_eq!(
      named("read_file", r#"{"filePath": "/app/x.ts"}"#),
      ok("/app/x.ts", FileOpKind::Read)
    );
    assert_eq!(named("read_file", "File: /app/y.ts\ncontent"), ok("/app/y.ts", FileOpKind::Read));
    assert_eq!(named("read_file", "x\nPath: `/app/z.ts`\n"), ok("/app/z.ts", FileOpKind::Read));
    // Not anchored at a line start: SWE-agent's footer is no path.
    assert_eq!(named("read_file", "body\n(Open file: /testbed/a.py)"), None);
    // A kind without a path, or a path without a kind, is no file operation.
    assert_eq!(named("read_file", "just text"), None);
    assert_eq!(named("bash", r#"{"path": "/app/new.ts"}"#), None);
  }

  #[test]
  fn sweagent_headers_and_current_directory() {
    let footer = "\n(Open file: /testbed/setup.py)\n(Current directory: /testbed)\nbash-$";
    assert_eq!(
      op(
        "open",
        r#"{"path":"setup.py"}"#,
        &format!("[File: setup.py (94 lines total)]\r\n1:import re{footer}")
      ),
      ok("/testbed/setup.py", FileOpKind::Read)
    );
    assert_eq!(
      op(
        "create",
        r#"{"filename":"./reproduce.py"}"#,
        &format!("[File: reproduce.py (1 lines total)]\r\n1:{footer}")
      ),
      ok("/testbed/reproduce.py", FileOpKind::Create)
    );
    // The header may follow other lines; absolute paths are kept.
    assert_eq!(
      op(
        "edit",
        r#"{"search":"a","replace":"b"}"#,
        &format!(
          "Text replaced.\r\n[File: /testbed/src/f.py (1998 lines total)]\r\n1457: x{footer}"
        )
      ),
      ok("/testbed/src/f.py", FileOpKind::Edit)
    );
    // A text-mode command line is not parsed: the header names the file.
    assert_eq!(
      op(
        "create",
        r#"{"command":"create printenv.pl"}"#,
        "[File: /ctf/printenv.pl (1 lines total)]\n1:"
      ),
      ok("/ctf/printenv.pl", FileOpKind::Create)
    );
  }

  #[test]
  fn headers_give_the_kind_when_the_tool_name_does_not() {
    assert_eq!(
      op(
        "execute_ipython_cell",
        r#"{"code":"open_file('/w/App.css')"}"#,
        "[File: /w/App.css (42 lines total)]\n(this is the beginning of the file)"
      ),
      ok("/w/App.css", FileOpKind::Read)
    );
    assert_eq!(
      op(
        "execute_ipython_cell",
        r#"{"code":"edit_file_by_replace(...)"}"#,
        "[File: /w/App.css (79 lines total after edit)]\n1|x"
      ),
      ok("/w/App.css", FileOpKind::Edit)
    );
    assert_eq!(
      op("str_replace_editor", "{}", "The file /w/p.c has been edited. Here's the result"),
      ok("/w/p.c", FileOpKind::Edit)
    );
    assert_eq!(op("execute_ipython_cell", r#"{"code":"1+1"}"#, "2"), None);
    assert_eq!(
      op(
        "str_replace_editor",
        r#"{"command":"view","path":"/w"}"#,
        "Here's the files and directories up to 2 levels deep in /w"
      ),
      None
    );
  }

  #[test]
  fn failures_keep_their_kind_and_are_flagged() {
    let failed = |path: &str, kind| {
      Some(FileOp { path: path.into(), kind, failed: true, shows_view: false, part: None })
    };
    assert_eq!(
      op(
        "str_replace_editor",
        r#"{"command":"str_replace","path":"/w/a"}"#,
        "ERROR:\nNo replacement was performed"
      ),
      failed("/w/a", FileOpKind::Edit)
    );
    assert_eq!(
      op(
        "str_replace_editor",
        r#"{"command":"create","path":"/w/h.py"}"#,
        "Ran into [Errno 2] No such file or directory"
      ),
      failed("/w/h.py", FileOpKind::Create)
    );
    let mut m = named_result("write_file", r#"{"path":"/x"}"#);
    m.is_error = true;
    let msgs = vec![m];
    assert_eq!(
      file_operation(&Conversation::new(&msgs, Encoding::O200kBase), 0),
      failed("/x", FileOpKind::Create)
    );
  }

  #[test]
  fn kinds_round_trip_and_only_reads_do_not_modify() {
    for k in FileOpKind::ALL {
      assert_eq!(FileOpKind::parse(k.as_str()), Some(k));
    }
    assert_eq!(FileOpKind::parse("write"), None);
    assert!(!FileOpKind::Read.modifies());
    assert!(
      FileOpKind::Create.modifies() && FileOpKind::Edit.modifies() && FileOpKind::Delete.modifies()
    );
  }

  /// Parallel calls answered in one message: each result is read with its own call, text and
  /// error flag; the message's one operation is its first successful change, else its first
  /// successful read.
  #[test]
  fn several_results_are_read_one_by_one() {
    let msgs = crate::testing::parallel_results();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let of = |i| file_operations_of(&conv, i);
    let op = |path: &str, kind, failed, part| FileOp {
      path: path.into(),
      kind,
      failed,
      shows_view: false,
      part,
    };
    use FileOpKind::*;
    assert_eq!(of(2), [op("src/a.ts", Read, false, Some(0)), op("src/b.ts", Read, true, Some(1))]);
    assert_eq!(of(4), [op("src/x.ts", Read, false, Some(0)), op("src/c.ts", Edit, false, Some(1))]);
    assert_eq!(of(6), [op("src/d.ts", Read, false, Some(0))]);
    assert_eq!(file_operation(&conv, 2), Some(op("src/a.ts", Read, false, Some(0))));
    assert_eq!(file_operation(&conv, 4), Some(op("src/c.ts", Edit, false, Some(1))));
    let ops = numbered_file_operations(&conv);
    let each: Vec<(usize, &str)> = ops.each().map(|(i, op, _)| (i, op.path.as_str())).collect();
    assert_eq!(
      each,
      [(2, "src/a.ts"), (2, "src/b.ts"), (4, "src/x.ts"), (4, "src/c.ts"), (6, "src/d.ts")]
    );
    assert_eq!(ops.of_message(6).len(), 1);
    assert!(ops.of_message(5).is_empty());
    // A growing conversation finds the same operations message by message.
    let mut grown = FileOperations::default();
    for end in 1..=msgs.len() {
      grown.extend(&Conversation::new(&msgs[..end], Encoding::O200kBase));
    }
    assert_eq!(&grown, &*ops);
  }
}
