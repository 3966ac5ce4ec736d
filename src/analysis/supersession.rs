//! Supersession: which tool result a newer one makes stale (seed 003's deduplicators, the one
//! rule the priority strategies' classification and [`crate::strategy::dedup::deduplicate`]
//! share).
//!
//! An agent reads the same file again, lists the same directory again: the older result is then
//! stale or redundant. Two deduplicators decide what supersedes what:
//!
//! - [`IoContentDeduplicator`], for files. A result is a *file access* with a path and a
//!   [`Coverage`]. A newer **read** or **full write** of the same path supersedes an older read,
//!   write or edit whose coverage it contains; a **partial update** (edit, `str_replace`,
//!   `insert`) supersedes only what its result shows: the whole file, a numbered window, or the
//!   numbered snippet of the edited region (see [`Coverage`]).
//! - [`SurveyDirectoryDeduplicator`], for directory listings. A newer listing of the same
//!   location supersedes an older one when it is at least as inclusive: it is at least as deep
//!   (recursive if the older one was), its exclusion filters are a subset of the older one's, and
//!   (shell `ls`) it shows at least the same details.
//!
//! Each superseded result points at the **first** later result that supersedes it, the one that
//! made it stale: what a result is superseded by never changes as the conversation grows, so a
//! placeholder naming it keeps its text turn after turn (a still later result may supersede that
//! one in turn). Failed operations (flagged `is_error`, or reporting failure, see
//! [`crate::analysis::file_ops::reports_failure`]) neither supersede nor are superseded: they
//! record what did not work. A message carrying several tool results (parallel results in one
//! Anthropic or AI SDK message) is read result by result ([`SplitView`]).
//!
//! [`superseded_results`] finds them in one conversation (each result's findings memoised in
//! its message, `Accesses`); [`Supersessions`] keeps them up to date as messages are appended
//! (the simulator).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::analysis::file_ops::{
  edited_snippet, file_operation, numbered_run, parse_object, reports_failure, shell_command_line,
  shell_failed, shell_operation, FileOpKind, FileOperations, ReadSpan,
};
use crate::analysis::growing::GrowingAnalysis;
use crate::analysis::memo::facts;
use crate::model::conversation::Conversation;
use crate::model::message::Message;
use crate::model::tokens::message_tokens;

/// Tools that run shell commands, whose `ls` and `cat` commands are recognised.
pub const DEFAULT_SHELL_TOOLS: &[&str] = &[
  "bash",
  "Bash",
  "execute_bash",
  "terminal",
  "shell",
  "shell_command",
  "local_shell",
  "exec_command",
  "run_shell_command",
  "run_terminal_cmd",
  "execute_command",
];
/// Argument keys holding a shell tool's command line.
pub const DEFAULT_SHELL_COMMAND_KEYS: &[&str] = &["command", "cmd"];
/// Tools that list a directory.
pub const DEFAULT_LIST_TOOLS: &[&str] = &[
  "list_dir",
  "list_directory",
  "list_files",
  "listDir",
  "listDirectory",
  "listFiles",
  "ls",
  "LS",
];
/// Argument keys naming the directory a listing tool lists (absent: `.`).
pub const DEFAULT_LIST_PATH_KEYS: &[&str] = &[
  "path",
  "directory",
  "dir",
  "dir_path",
  "directory_path",
  "target_directory",
  "relative_workspace_path",
];
/// Boolean argument keys that make a listing recursive.
pub const DEFAULT_RECURSIVE_KEYS: &[&str] = &["recursive"];
/// Numeric argument keys limiting a listing's depth.
pub const DEFAULT_DEPTH_KEYS: &[&str] = &["depth", "max_depth", "maxDepth"];
/// Argument keys holding a listing's exclusion filters (a string or an array of strings).
pub const DEFAULT_EXCLUDE_KEYS: &[&str] =
  &["ignore", "exclude", "excludes", "ignore_patterns", "ignore_globs", "exclude_patterns"];
/// The exclusion filter of a listing that hides dot files (`ls` without `-a`/`-A`, the editor's
/// `excluding hidden items`).
pub const HIDDEN_FILTER: &str = "hidden files";
/// `ls` flags understood; any other flag makes the command unrecognised.
pub const LS_FLAGS: &str = "aARlhsignoFp1CxmtSrXUvcuGk";
/// `cat` flags understood.
pub const CAT_FLAGS: &str = "n";
/// Characters that make a shell command more than one simple command (pipes, lists,
/// redirections, substitutions, globs, quotes, comments, escapes).
const SHELL_SPECIAL: &[char] = &[
  '|', '&', ';', '<', '>', '$', '`', '(', ')', '{', '}', '[', ']', '*', '?', '~', '!', '"', '\'',
  '\\', '#', '\n', '\r',
];

/// The tool names and argument keys the deduplicators recognise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNames {
  /// Tools that read a whole file (or the range their arguments give), besides the built-in
  /// detection of [`crate::analysis::file_ops`].
  pub read: Vec<String>,
  /// Tools that write a whole file, besides the built-in detection.
  pub write: Vec<String>,
  /// Tools that change part of a file, besides the built-in detection.
  pub edit: Vec<String>,
  /// Argument keys naming the file of the tools in `read`, `write` and `edit` (the built-in
  /// detection has its own, see [`crate::analysis::file_ops::PATH_ARGUMENTS`]).
  pub path_keys: Vec<String>,
  /// Tools that run shell commands.
  pub shell: Vec<String>,
  /// Argument keys holding a shell tool's command line.
  pub shell_command_keys: Vec<String>,
  /// Tools that list a directory.
  pub list: Vec<String>,
  /// Argument keys naming a listing's directory.
  pub list_path_keys: Vec<String>,
  /// Argument keys that make a listing recursive.
  pub recursive_keys: Vec<String>,
  /// Argument keys limiting a listing's depth.
  pub depth_keys: Vec<String>,
  /// Argument keys holding a listing's exclusion filters.
  pub exclude_keys: Vec<String>,
}

fn strings(list: &[&str]) -> Vec<String> {
  list.iter().map(|s| s.to_string()).collect()
}

impl Default for ToolNames {
  fn default() -> Self {
    ToolNames {
      read: Vec::new(),
      write: Vec::new(),
      edit: Vec::new(),
      path_keys: strings(crate::analysis::file_ops::PATH_ARGUMENTS),
      shell: strings(DEFAULT_SHELL_TOOLS),
      shell_command_keys: strings(DEFAULT_SHELL_COMMAND_KEYS),
      list: strings(DEFAULT_LIST_TOOLS),
      list_path_keys: strings(DEFAULT_LIST_PATH_KEYS),
      recursive_keys: strings(DEFAULT_RECURSIVE_KEYS),
      depth_keys: strings(DEFAULT_DEPTH_KEYS),
      exclude_keys: strings(DEFAULT_EXCLUDE_KEYS),
    }
  }
}

/// How much of a file a result shows (or writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Coverage {
  /// The whole file. A read is whole unless its arguments give a range or its result is a
  /// numbered window (below); a write is whole; an edit is whole when its result returns the
  /// file's content: a `[File: P (N lines total…)]` header (SWE-agent, OpenHands agent skills)
  /// followed by numbered lines running from 1 to N, or a JSON result with a string `content`.
  Whole,
  /// Lines `start..=end` (`end` `None`: to the end of the file), from the arguments
  /// (`view_range: [a, b]` with `-1` for the end, `offset`/`limit`, `start_line`/`end_line`,
  /// `line_start`/`line_end`) or from a header and numbered lines that do not cover the file.
  Lines(u64, Option<u64>),
  /// Unknown: an edit whose result shows nothing of the file, or nothing numbered (`Content
  /// replaced in file: P`). The numbered snippet of the edited region (the OpenHands editor's
  /// and Claude Code's `cat -n` snippet) covers its lines.
  Unknown,
}

impl Coverage {
  /// Whether a result covering `self` shows everything a result covering `older` showed.
  pub fn contains(self, older: Coverage) -> bool {
    match (self, older) {
      (Coverage::Whole, _) => true,
      (Coverage::Lines(a, b), Coverage::Lines(c, d)) => {
        c >= a
          && match (b, d) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(b), Some(d)) => d <= b,
          }
      }
      _ => false,
    }
  }
}

/// A file access: what [`IoContentDeduplicator`] sees in a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAccess {
  /// Read, create (whole write) or edit.
  pub kind: FileOpKind,
  /// What the result shows.
  pub coverage: Coverage,
}

/// A directory listing: what [`SurveyDirectoryDeduplicator`] sees in a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
  /// How deep it lists: 1 for the directory's own entries, `None` for a recursive listing.
  pub depth: Option<u64>,
  /// Its exclusion filters (patterns, or [`HIDDEN_FILTER`]).
  pub excludes: BTreeSet<String>,
  /// The details it shows besides names (`ls` format flags such as `l`).
  pub details: BTreeSet<char>,
}

/// A tool result a deduplicator recognised: where it is about, how to name it, and its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access<S> {
  /// The path as the placeholder names it.
  pub path: String,
  /// The key that decides "same location": the normalised path, prefixed with the shell's
  /// working-directory epoch for a relative path given to a shell command.
  pub key: String,
  /// What the result is, for the placeholder: `read`, `write`, `edit` or `listing`.
  pub noun: &'static str,
  /// What the deduplicator compares.
  pub scope: S,
}

/// A rule deciding which tool results supersede which.
pub trait Deduplicator {
  /// What two results of the same location are compared on.
  type Scope: PartialEq;

  /// The access of tool result `i`, if this deduplicator recognises it (and it did not fail).
  fn access(&self, ctx: &Context<'_, '_>, i: usize) -> Option<Access<Self::Scope>>;

  /// Whether a newer result with scope `newer` supersedes an older one with scope `older` of
  /// the same location.
  fn supersedes(&self, newer: &Self::Scope, older: &Self::Scope) -> bool;
}

/// What the deduplicators share about a conversation: the tool names, and for each tool call
/// the shell's working-directory epoch (how many `cd`, `pushd`, `popd` ran before it).
pub struct Context<'c, 'a> {
  /// The conversation.
  pub conv: &'c Conversation<'a>,
  /// The tool names and argument keys.
  pub tools: &'c ToolNames,
  /// The epochs, found on first use: only a relative path that a shell result does not place
  /// in a working directory needs them.
  epochs: std::cell::OnceCell<Epochs>,
  /// The epochs kept up to date by a [`Supersessions`] (covering at least the messages asked
  /// about), used instead of finding them.
  known_epochs: Option<&'c Epochs>,
  /// The epoch the last [`Context::shell_key`] keyed a path by, if it needed one: what a
  /// memoised access was found with besides its own message and its call (see `Accesses`).
  epoch_used: std::cell::Cell<Option<usize>>,
}

/// Every tool call's working-directory epoch, calls in conversation order.
#[derive(Debug, Default)]
struct Epochs {
  /// Per message, the position of its first call in `of`.
  first: Vec<usize>,
  /// Per call, its epoch.
  of: Vec<usize>,
  /// The epoch after the last call.
  epoch: usize,
  /// Whether the tool names are the default ones ([`default_tools`]): then which calls of a
  /// message change directory is kept in its memo.
  default_tools: bool,
}

impl Epochs {
  fn new(conv: &Conversation<'_>, tools: &ToolNames) -> Epochs {
    let mut epochs = Epochs {
      first: Vec::with_capacity(conv.len()),
      of: Vec::with_capacity(conv.len()),
      default_tools: *tools == *default_tools(),
      ..Epochs::default()
    };
    for m in conv.messages() {
      epochs.push(m, tools);
    }
    epochs
  }

  /// Adds the calls of the next message, `m`.
  fn push(&mut self, m: &Message, tools: &ToolNames) {
    self.first.push(self.of.len());
    if m.tool_calls.is_empty() {
      return;
    }
    let found;
    let changes: &[bool] = if self.default_tools {
      facts(m).directory_changes.get_or_init(|| directory_changes(m, tools))
    } else {
      found = directory_changes(m, tools);
      &found
    };
    for &changes_directory in changes {
      self.of.push(self.epoch);
      if changes_directory {
        self.epoch += 1;
      }
    }
  }

  /// The epoch of call `c` of message `i`.
  fn get(&self, (i, c): (usize, usize)) -> Option<usize> {
    self.of.get(self.first.get(i)? + c).copied()
  }
}

/// Per tool call of `m`, whether it changes the shell's working directory: a shell tool's
/// command line with a `cd`, `pushd` or `popd` word.
fn directory_changes(m: &Message, tools: &ToolNames) -> Box<[bool]> {
  let changes = |c: usize, call: &crate::model::message::ToolCall| {
    contains(&tools.shell, &call.name)
      && arguments_of(m, c).and_then(|args| shell_arg(args, &tools.shell_command_keys)).is_some_and(
        |line| {
          line
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .any(|w| matches!(w, "cd" | "pushd" | "popd"))
        },
      )
  };
  m.tool_calls.iter().enumerate().map(|(c, call)| changes(c, call)).collect()
}

/// The default tool names, built once.
fn default_tools() -> &'static ToolNames {
  static DEFAULT_TOOLS: std::sync::LazyLock<ToolNames> =
    std::sync::LazyLock::new(ToolNames::default);
  &DEFAULT_TOOLS
}

impl<'c, 'a> Context<'c, 'a> {
  /// The deduplicators' view of `conv`.
  pub fn new(conv: &'c Conversation<'a>, tools: &'c ToolNames) -> Self {
    Context {
      conv,
      tools,
      epochs: std::cell::OnceCell::new(),
      known_epochs: None,
      epoch_used: std::cell::Cell::new(None),
    }
  }

  /// The arguments of the call that message `i` answers, as a JSON object (parsed once per
  /// call: see [`arguments_of`]).
  fn arguments(&self, i: usize) -> Option<&'a Map<String, Value>> {
    let (caller, c) = self.conv.answered_call(i)?;
    arguments_of(self.conv.message(caller), c)
  }

  /// The shell command line of the call message `i` answers, if its tool is a shell tool.
  fn shell_command(&self, i: usize) -> Option<String> {
    let name = self.conv.tool_name(i)?;
    if !contains(&self.tools.shell, name) {
      return None;
    }
    shell_arg(self.arguments(i)?, &self.tools.shell_command_keys)
  }

  /// The location key of `path` as tool result `i` names it; a relative path given to a shell
  /// command is joined to the working directory the result reports (`facts`), else keyed by the
  /// epoch.
  fn shell_key(&self, i: usize, path: &str, facts: &ResultText) -> (String, String) {
    let path = normalise(path);
    if is_absolute(&path) {
      return (path.clone(), path);
    }
    if let Some(dir) = facts.working_directory.as_deref() {
      let joined = normalise(&format!("{}/{}", dir.trim_end_matches('/'), path));
      return (joined.clone(), joined);
    }
    let epoch = self.epoch(i);
    self.epoch_used.set(Some(epoch));
    (path.clone(), format!("cwd#{epoch}:{path}"))
  }

  /// The working-directory epoch of the call tool result `i` answers (0 without one): from the
  /// epochs a [`Supersessions`] keeps up to date when there are some, else found once.
  fn epoch(&self, i: usize) -> usize {
    let epochs = match self.known_epochs {
      Some(known) => known,
      None => self.epochs.get_or_init(|| Epochs::new(self.conv, self.tools)),
    };
    self.conv.answered_call(i).and_then(|call| epochs.get(call)).unwrap_or(0)
  }

  /// Whether tool result `i` is one the deduplicators may touch: a tool result answering at most
  /// one call, not flagged as an error, and not already a placeholder of an earlier run (which
  /// no longer shows what it read, so it would be keyed afresh, from its arguments alone: a
  /// second run could then point it at another result, and deduplicating would not be
  /// idempotent).
  fn is_single_result(&self, i: usize) -> bool {
    let m = self.conv.message(i);
    m.is_tool_result() && m.answers.len() <= 1 && !m.is_error && !result_text(m).placeholder
  }
}

/// The arguments of call `c` of `message`, as a JSON object. Every call's arguments are parsed
/// once and kept in the message's memo: a history trimmed again on every turn (an agent loop,
/// the simulator) does not parse them again each time.
fn arguments_of(message: &Message, c: usize) -> Option<&Map<String, Value>> {
  facts(message)
    .call_arguments
    .get_or_init(|| message.tool_calls.iter().map(|call| parse_object(&call.arguments)).collect())
    .get(c)?
    .as_ref()
}

/// What the deduplicators read from a tool result's own text, found in one reading of it and
/// kept in the message's memo (see [`result_text`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct ResultText {
  /// A placeholder of an earlier run ([`is_placeholder`]).
  placeholder: bool,
  /// [`reports_failure`].
  reports_failure: bool,
  /// [`shell_failed`].
  shell_failed: bool,
  /// [`editor_listing`].
  editor_listing: Option<(u64, String, bool)>,
  /// [`listing_coverage`].
  listing_coverage: Option<Coverage>,
  /// [`returns_content`].
  returns_content: bool,
  /// [`edited_snippet`].
  snippet: Option<(u64, u64)>,
  /// [`working_directory`].
  working_directory: Option<String>,
}

impl ResultText {
  fn of(m: &Message) -> ResultText {
    if is_placeholder(m) {
      return ResultText { placeholder: true, ..ResultText::default() };
    }
    let text = m.content_text();
    ResultText {
      placeholder: false,
      reports_failure: reports_failure(&text),
      shell_failed: shell_failed(&text),
      editor_listing: editor_listing(&text),
      listing_coverage: listing_coverage(&text),
      returns_content: returns_content(&text),
      snippet: edited_snippet(&text),
      working_directory: working_directory(&text).map(String::from),
    }
  }
}

/// The [`ResultText`] of `m`, found on the first call and kept in its memo.
fn result_text(m: &Message) -> &ResultText {
  facts(m).result_text.get_or_init(|| ResultText::of(m))
}

/// Files: a newer read or full write supersedes an older read, write or edit it covers; an
/// edit supersedes only what its result shows (the whole file, a window, the snippet of the
/// edited region: see [`Coverage`]).
///
/// A result is a file access when its tool is named in [`ToolNames::read`], `write` or `edit`
/// (path from [`ToolNames::path_keys`]), or when the built-in detection of
/// [`crate::analysis::file_ops`] finds one (deletes are ignored), or when a shell tool read one
/// file: `cat FILE` or `cat -n FILE` whole, `head -n N FILE`, `sed -n 'A,Bp' FILE` or a whole
/// read piped into them the lines they print, `tail` and other filters a part of unknown
/// extent (which supersedes nothing), or wrote one (`cat > FILE << EOF` whole; `>>` and
/// `sed -i` an edit of unknown extent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoContentDeduplicator;

impl Deduplicator for IoContentDeduplicator {
  type Scope = FileAccess;

  fn access(&self, ctx: &Context<'_, '_>, i: usize) -> Option<Access<FileAccess>> {
    if !ctx.is_single_result(i) {
      return None;
    }
    let facts = result_text(ctx.conv.message(i));
    if let Some(command) = ctx.shell_command(i) {
      if facts.shell_failed {
        return None;
      }
      // `cat F` whole; `head`, `sed -n`, `nl … | sed -n` the lines they print (a range
      // supersedes what it contains and a whole read supersedes it); other reads a part of
      // unknown extent, superseding nothing. `cat > F << EOF` writes F whole; `>>` and
      // `sed -i` edit an unknown part.
      let (path, kind, coverage) = match simple_command(&command, "cat", CAT_FLAGS) {
        Some(cmd) => match cmd.operands.as_slice() {
          [path] => (path.to_string(), FileOpKind::Read, Coverage::Whole),
          _ => return None,
        },
        None => {
          let op = shell_operation(&command)?;
          let coverage = match (op.kind, op.span) {
            (FileOpKind::Delete, _) => return None,
            (FileOpKind::Edit, _) | (_, ReadSpan::Part) => Coverage::Unknown,
            (_, ReadSpan::Whole) => Coverage::Whole,
            (_, ReadSpan::Lines(a, b)) => Coverage::Lines(a, b),
          };
          (op.path, op.kind, coverage)
        }
      };
      let (path, key) = ctx.shell_key(i, &path, facts);
      let scope = FileAccess { kind, coverage };
      return Some(Access { path, key, noun: kind.noun(), scope });
    }
    let args = ctx.arguments(i);
    let configured = ctx.conv.tool_name(i).and_then(|name| {
      let t = ctx.tools;
      [(&t.read, FileOpKind::Read), (&t.write, FileOpKind::Create), (&t.edit, FileOpKind::Edit)]
        .into_iter()
        .find_map(|(names, kind)| contains(names, name).then_some(kind))
    });
    let (kind, path) = match configured {
      Some(kind) => {
        let path = args
          .and_then(|a| string_arg(a, &ctx.tools.path_keys))
          .or_else(|| file_operation(ctx.conv, i).map(|op| op.path))?;
        if facts.reports_failure {
          return None;
        }
        (kind, path)
      }
      None => {
        let op = file_operation(ctx.conv, i)?;
        if op.failed {
          return None;
        }
        (op.kind, op.path)
      }
    };
    let coverage = match kind {
      FileOpKind::Delete => return None,
      FileOpKind::Create => Coverage::Whole,
      FileOpKind::Read => {
        args.and_then(argument_range).or(facts.listing_coverage).unwrap_or(Coverage::Whole)
      }
      FileOpKind::Edit => {
        if facts.returns_content {
          Coverage::Whole
        } else {
          match (facts.listing_coverage, facts.snippet) {
            (Some(Coverage::Lines(a, b)), _) => Coverage::Lines(a, b),
            (Some(_), _) => Coverage::Whole,
            // The numbered snippet of the edited region: a view of those lines.
            (None, Some((a, b))) => Coverage::Lines(a, Some(b)),
            (None, None) => Coverage::Unknown,
          }
        }
      }
    };
    let path = normalise(&path);
    Some(Access {
      key: path.clone(),
      path,
      noun: kind.noun(),
      scope: FileAccess { kind, coverage },
    })
  }

  fn supersedes(&self, newer: &FileAccess, older: &FileAccess) -> bool {
    let can = match newer.kind {
      FileOpKind::Read | FileOpKind::Create => true,
      // An edit that shows the file, or the numbered lines of the region it changed, is a
      // view of them as they are now.
      FileOpKind::Edit => newer.coverage != Coverage::Unknown,
      FileOpKind::Delete => false,
    };
    can && newer.coverage.contains(older.coverage)
  }
}

/// Directory listings: a newer listing of the same location supersedes an older one when it is
/// at least as deep (recursive if the older one was), excludes no more (its filters are a
/// subset of the older one's) and shows at least the same details.
///
/// Listings are recognised from the tools in [`ToolNames::list`] (directory, `recursive`,
/// `depth` and exclusion arguments from the keys configured), the editor's `view` of a
/// directory (`Here's the files and directories up to N levels deep in P, excluding hidden
/// items:`), and a shell tool running exactly `ls [FLAGS] [DIR]` with flags from [`LS_FLAGS`]
/// (no pipes, lists, redirections, globs, quotes or substitutions: anything else is not
/// recognised). `-R` is recursive; without `-a`/`-A` dot files are excluded; every
/// other flag is a detail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SurveyDirectoryDeduplicator;

impl Deduplicator for SurveyDirectoryDeduplicator {
  type Scope = Listing;

  fn access(&self, ctx: &Context<'_, '_>, i: usize) -> Option<Access<Listing>> {
    if !ctx.is_single_result(i) {
      return None;
    }
    let facts = result_text(ctx.conv.message(i));
    let listing = |path: String, key: String, scope: Listing| {
      Some(Access { path, key, noun: "listing", scope })
    };
    if let Some((depth, path, hidden)) = &facts.editor_listing {
      let (depth, hidden) = (*depth, *hidden);
      let args = ctx.arguments(i);
      let path =
        args.and_then(|a| string_arg(a, &["path".to_string()])).unwrap_or_else(|| path.clone());
      let excludes = if hidden { [HIDDEN_FILTER.to_string()].into() } else { BTreeSet::new() };
      let path = normalise(&path);
      let scope = Listing { depth: Some(depth), excludes, details: BTreeSet::new() };
      return listing(path.clone(), path, scope);
    }
    if let Some(command) = ctx.shell_command(i) {
      let cmd = simple_command(&command, "ls", LS_FLAGS)?;
      if cmd.operands.len() > 1 || facts.shell_failed {
        return None;
      }
      let dir = cmd.operands.first().copied().unwrap_or(".");
      let (path, key) = ctx.shell_key(i, dir, facts);
      let mut excludes = BTreeSet::new();
      if !cmd.flags.contains(&'a') && !cmd.flags.contains(&'A') {
        excludes.insert(HIDDEN_FILTER.to_string());
      }
      let depth = if cmd.flags.contains(&'R') { None } else { Some(1) };
      let details = cmd.flags.iter().copied().filter(|f| !matches!(f, 'a' | 'A' | 'R')).collect();
      return listing(path, key, Listing { depth, excludes, details });
    }
    let name = ctx.conv.tool_name(i)?;
    if !contains(&ctx.tools.list, name) || facts.reports_failure {
      return None;
    }
    let no_arguments = Map::new();
    let args = ctx.arguments(i).unwrap_or(&no_arguments);
    let tools = ctx.tools;
    let path = normalise(&string_arg(args, &tools.list_path_keys).unwrap_or_else(|| ".".into()));
    let recursive = tools.recursive_keys.iter().any(|k| args.get(k) == Some(&Value::Bool(true)));
    let depth = if recursive {
      None
    } else {
      let depth = tools.depth_keys.iter().find_map(|k| args.get(k).and_then(Value::as_u64));
      Some(depth.unwrap_or(1))
    };
    let mut excludes = BTreeSet::new();
    for key in &tools.exclude_keys {
      match args.get(key) {
        Some(Value::String(s)) => {
          excludes.insert(s.clone());
        }
        Some(Value::Array(items)) => {
          for item in items {
            match item {
              Value::String(s) => excludes.insert(s.clone()),
              // A filter that is not a string cannot be compared: not recognised.
              _ => return None,
            };
          }
        }
        None | Some(Value::Null) => {}
        Some(_) => return None,
      }
    }
    listing(path.clone(), path, Listing { depth, excludes, details: BTreeSet::new() })
  }

  fn supersedes(&self, newer: &Listing, older: &Listing) -> bool {
    let deep_enough = match (newer.depth, older.depth) {
      (None, _) => true,
      (Some(_), None) => false,
      (Some(n), Some(o)) => n >= o,
    };
    deep_enough
      && newer.excludes.is_subset(&older.excludes)
      && newer.details.is_superset(&older.details)
  }
}

/// A result a deduplicator found superseded, before any placeholder is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
  /// The superseded result.
  pub index: usize,
  /// The first later result superseding it (which a still later one may supersede in turn).
  pub by: usize,
  /// The location, as the superseded result names it.
  pub path: String,
  /// What the superseding result is (`read`, `write`, `edit`, `listing`).
  pub noun: &'static str,
}

/// Every result a deduplicator finds superseded, with the first result superseding it, by
/// index (see `superseded_by`).
pub fn supersessions<D: Deduplicator>(dedup: &D, ctx: &Context<'_, '_>) -> Vec<Found> {
  let accesses: Vec<(usize, Access<D::Scope>)> =
    (0..ctx.conv.len()).filter_map(|i| Some((i, dedup.access(ctx, i)?))).collect();
  superseded_by(dedup, accesses.iter().map(|(i, a)| (*i, a)))
}

/// The results superseded among `accesses` (ascending by index), each with the first later
/// result superseding it, by index: the accesses of each location are read oldest first, as
/// [`Supersessions`] reads them one message at a time ([`supersede`]).
fn superseded_by<'s, D: Deduplicator>(
  dedup: &D,
  accesses: impl Iterator<Item = (usize, &'s Access<D::Scope>)>,
) -> Vec<Found>
where
  D::Scope: 's,
{
  let mut live: BTreeMap<&str, LiveScopes<&'s D::Scope, &'s str>> = BTreeMap::new();
  let mut found = Vec::new();
  for (i, access) in accesses {
    let scopes = live.entry(access.key.as_str()).or_default();
    supersede(dedup, scopes, &access.scope, (i, access.path.as_str()), |a, path| {
      found.push(Found { index: a, by: i, path: path.to_string(), noun: access.noun });
    });
  }
  found.sort_by_key(|f| f.index);
  found
}

/// The accesses of one location that no later access has superseded yet, each with its path,
/// grouped by scope (equal scopes are superseded together), oldest scope first.
type LiveScopes<S, P> = Vec<(S, Vec<(usize, P)>)>;

/// Reads access `access` (its index and path), of scope `scope`, after the older accesses of
/// its location still in `live`: each of them whose scope `scope` supersedes is `superseded`
/// (its index and path) and leaves, so a result is superseded once, by the first later access
/// that supersedes it, and that never changes as the conversation grows (a placeholder naming
/// it keeps its text, and a provider's prompt cache with it). `access` joins `live`.
/// O(distinct live scopes) a call, plus what it finds.
fn supersede<D: Deduplicator, S: std::borrow::Borrow<D::Scope>, P>(
  dedup: &D,
  live: &mut LiveScopes<S, P>,
  scope: S,
  access: (usize, P),
  mut superseded: impl FnMut(usize, P),
) {
  live.retain_mut(|(older, accesses)| {
    let gone = dedup.supersedes(scope.borrow(), older.borrow());
    if gone {
      accesses.drain(..).for_each(|(a, path)| superseded(a, path));
    }
    !gone
  });
  match live.iter_mut().find(|(s, _)| s.borrow() == scope.borrow()) {
    Some((_, accesses)) => accesses.push(access),
    None => live.push((scope, vec![access])),
  }
}

/// What the two deduplicators with the default tool names make of one tool result, and what
/// they found it from besides the result itself: kept in the result's memo, so that a history
/// trimmed again every turn is not re-analysed (the supersession of the priority strategies'
/// classification was more than half of a re-trim before). The memo is used only while the
/// result answers a call of the same name and arguments, with the same working-directory epoch
/// when its key needed one; anything else finds the accesses afresh (and leaves the memo). A
/// result whose call has arguments longer than `MAX_MEMOISED_ARGUMENTS` is not memoised.
#[derive(Debug, Clone)]
pub(crate) struct Accesses {
  /// The name and arguments of the call the result answered (`None`: no call).
  call: Option<(String, String)>,
  /// The working-directory epoch a key was made with, if one was.
  epoch: Option<usize>,
  file: Option<Access<FileAccess>>,
  listing: Option<Access<Listing>>,
}

impl Accesses {
  /// The accesses of result `i` in `ctx` (default tool names), found afresh, for its memo.
  fn find(ctx: &Context<'_, '_>, i: usize) -> Accesses {
    let mut accesses = Accesses::find_for_call(ctx, i);
    accesses.call = ctx.conv.answered_call(i).map(|(caller, c)| {
      let call = &ctx.conv.message(caller).tool_calls[c];
      (call.name.clone(), call.arguments.clone())
    });
    accesses
  }

  /// [`Accesses::find`] for this call only: without the copy of the call's name and arguments
  /// (`call` is `None`), which only a memo checks.
  fn find_for_call(ctx: &Context<'_, '_>, i: usize) -> Accesses {
    ctx.epoch_used.set(None);
    let file = IoContentDeduplicator.access(ctx, i);
    let listing = SurveyDirectoryDeduplicator.access(ctx, i);
    Accesses { call: None, epoch: ctx.epoch_used.get(), file, listing }
  }

  /// Whether these accesses were found for result `i` as `ctx` has it.
  fn hold_in(&self, ctx: &Context<'_, '_>, i: usize) -> bool {
    let call = ctx.conv.answered_call(i).map(|(caller, c)| &ctx.conv.message(caller).tool_calls[c]);
    let same_call = match (&self.call, call) {
      (None, None) => true,
      (Some((name, arguments)), Some(call)) => *name == call.name && *arguments == call.arguments,
      _ => false,
    };
    same_call && self.epoch.is_none_or(|e| e == ctx.epoch(i))
  }
}

/// The longest call arguments (bytes) an `Accesses` memo copies.
const MAX_MEMOISED_ARGUMENTS: usize = 4096;

/// [`superseded_results`] as `(superseded, by)` index pairs, one per superseded result, ascending
/// by its index: what the classification
/// reads, without copying the paths of the supersessions the conversation carries (a long
/// history's classification runs on every call).
pub fn superseded_pairs(conv: &Conversation<'_>, tools: &ToolNames) -> Vec<(usize, usize)> {
  if let Some(known) = GrowingAnalysis::supersessions(conv).filter(|k| k.tools == *tools) {
    return known.merged().map(|f| (f.index, f.by)).collect();
  }
  superseded_results(conv, tools).into_iter().map(|f| (f.index, f.by)).collect()
}

/// [`superseded_pairs`] read result by result: the messages that answer several calls
/// ([`FileOperations::answering_several`] of `operations`, the conversation's) are read as their
/// results one message each ([`crate::model::message::Message::split_results`]), so that each
/// of their results supersedes and is superseded as it would be on its own. Each pair: the superseded result's
/// message, its part when that message holds several (`None` otherwise), and the message of
/// the first result superseding it; ascending. A conversation that carries its split view
/// ([`GrowingAnalysis::give`]) is not read again.
pub fn superseded_by_result(
  conv: &Conversation<'_>,
  operations: &FileOperations,
  tools: &ToolNames,
) -> Vec<(usize, Option<usize>, usize)> {
  if operations.answering_several().is_empty() {
    return superseded_pairs(conv, tools).into_iter().map(|(i, by)| (i, None, by)).collect();
  }
  if let Some(split) = GrowingAnalysis::split_view(conv).filter(|v| v.supersessions.tools == *tools)
  {
    return split.pairs();
  }
  read_by_result(conv, operations.answering_several(), |split, view| {
    superseded_pairs(split, tools).into_iter().filter_map(|(a, b)| view.origin_pair(a, b)).collect()
  })
}

/// The messages of `conv` that answer several calls, with how many, ascending (what
/// [`FileOperations::answering_several`] lists): those [`read_by_result`] splits.
pub(crate) fn answering_several(conv: &Conversation<'_>) -> Vec<(usize, usize)> {
  (0..conv.len())
    .map(|i| (i, conv.message(i).answers.len()))
    .filter(|&(_, answers)| answers > 1)
    .collect()
}

/// Calls `f` with `conv` read result by result (its messages `several`, those answering
/// several calls with how many, ascending, each read as its results one message each) and the
/// view that says where each message of that reading comes from
/// ([`SplitView::origin_of`]). A conversation that carries its split view is not split again.
/// The one place a conversation is split.
pub(crate) fn read_by_result<R>(
  conv: &Conversation<'_>,
  several: &[(usize, usize)],
  f: impl FnOnce(&Conversation<'_>, &SplitView) -> R,
) -> R {
  let built;
  let view = match GrowingAnalysis::split_view(conv).filter(|v| v.messages == conv.len()) {
    Some(view) => view,
    None => {
      let mut view = SplitView::default();
      view.extend(conv, several);
      built = view;
      &built
    }
  };
  let split = Conversation::with_layout(view.refs(conv), conv.encoding(), &view.layout)
    .with_format(conv.format());
  f(&split, view)
}

/// A finding of [`found_by_result`]: about messages of the conversation (`found.index`,
/// `found.by`), with the place of each one's result among its message's results, or `None` for
/// a message read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFound {
  /// The finding, by message.
  pub found: Found,
  /// The superseded result's place among the results of message `found.index`.
  pub result: Option<usize>,
  /// The superseding result's place among the results of message `found.by`.
  pub by_result: Option<usize>,
}

impl ResultFound {
  /// A finding about messages read whole.
  pub fn whole(found: Found) -> Self {
    ResultFound { found, result: None, by_result: None }
  }
}

/// What [`crate::strategy::dedup::deduplicate`] reads of a conversation whose messages
/// `several` answer several calls (each with how many, ascending; not empty): the
/// deduplicators' findings (file accesses with `io_content`, listings with `survey_directory`;
/// by index, a message's file access first) on the conversation read result by result, as
/// [`superseded_by_result`] reads it. A conversation that carries its split view with the same
/// tools is not read again.
pub(crate) fn found_by_result(
  conv: &Conversation<'_>,
  several: &[(usize, usize)],
  tools: &ToolNames,
  io_content: bool,
  survey_directory: bool,
) -> Vec<ResultFound> {
  let carried =
    GrowingAnalysis::split_view(conv).and_then(|v| Some((v, v.supersessions_for(conv, tools)?)));
  if let Some((view, known)) = carried {
    let found = known.pairs(io_content, survey_directory);
    return found.into_iter().filter_map(|f| view.origin_found(f)).collect();
  }
  read_by_result(conv, several, |split, view| {
    let found = deduplicators_find(split, tools, io_content, survey_directory);
    found.into_iter().filter_map(|f| view.origin_found(f)).collect()
  })
}

/// What the deduplicators find in `conv` with `tools`, read afresh: the file accesses with
/// `io_content`, the listings with `survey_directory`; by index, a message's file access first
/// (as [`Supersessions`] keeps them).
pub(crate) fn deduplicators_find(
  conv: &Conversation<'_>,
  tools: &ToolNames,
  io_content: bool,
  survey_directory: bool,
) -> Vec<Found> {
  let ctx = Context::new(conv, tools);
  let mut found = Vec::new();
  if io_content {
    found.extend(supersessions(&IoContentDeduplicator, &ctx));
  }
  if survey_directory {
    found.extend(supersessions(&SurveyDirectoryDeduplicator, &ctx));
  }
  found.sort_by_key(|f| f.index);
  found
}

/// A conversation read result by result ([`superseded_by_result`]), kept as it grows: its
/// layout, its supersessions with the default tool names, and where each of its messages comes
/// from. Made by [`crate::analysis::growing::GrowingAnalysis`] once a message of several results
/// appears.
#[derive(Debug)]
pub struct SplitView {
  layout: crate::model::conversation::Layout,
  supersessions: Supersessions,
  /// Per message of the view: its message in the conversation, and, for a result of a message
  /// of several, its place among them and its part.
  origin: Vec<(usize, Option<(usize, usize)>)>,
  /// How many messages of the conversation the view holds.
  messages: usize,
}

impl Default for SplitView {
  fn default() -> Self {
    SplitView {
      layout: crate::model::conversation::Layout::default(),
      supersessions: Supersessions::new(default_tools().clone()),
      origin: Vec::new(),
      messages: 0,
    }
  }
}

impl SplitView {
  /// Adds the messages of `conv` after the ones held (the messages before must be the same;
  /// `several` are the messages of `conv` that answer several calls, with how many, ascending:
  /// [`FileOperations::answering_several`]) to the layout and the origins.
  fn extend(&mut self, conv: &Conversation<'_>, several: &[(usize, usize)]) {
    let mut several = several[several.partition_point(|&(i, _)| i < self.messages)..].iter();
    let mut next = several.next();
    for i in self.messages..conv.len() {
      let m = conv.message(i);
      if next.is_none_or(|&(at, _)| at != i) {
        self.layout.push(m, conv.tokens(i));
        self.origin.push((i, None));
        continue;
      }
      next = several.next();
      let split = m.split_results();
      for (k, (alone, r)) in split.iter().zip(m.several_results()).enumerate() {
        self.layout.push(alone, message_tokens(alone, conv.encoding()));
        self.origin.push((i, Some((k, r.part))));
      }
    }
    self.messages = conv.len();
  }

  /// Extends the view with the messages of `conv` after the ones held (`operations` are
  /// `conv`'s), and its supersessions.
  pub(crate) fn grow(&mut self, conv: &Conversation<'_>, operations: &FileOperations) {
    if self.messages == conv.len() {
      return;
    }
    self.extend(conv, operations.answering_several());
    let refs = self.refs(conv);
    let split = Conversation::with_layout(refs, conv.encoding(), &self.layout);
    while self.supersessions.len() < split.len() {
      self.supersessions.push(&split);
    }
  }

  /// The messages of the view, from `conv`'s.
  fn refs<'c>(&self, conv: &Conversation<'c>) -> Vec<&'c Message> {
    self
      .origin
      .iter()
      .filter_map(|&(i, from)| {
        let m = conv.messages().get(i).copied()?;
        match from {
          None => Some(m),
          Some((k, _)) => m.split_results().get(k),
        }
      })
      .collect()
  }

  /// A pair of the view ([`superseded_pairs`]) as [`superseded_by_result`] gives it.
  fn origin_pair(&self, a: usize, b: usize) -> Option<(usize, Option<usize>, usize)> {
    let ((i, from), (by, _)) = (*self.origin.get(a)?, *self.origin.get(b)?);
    Some((i, from.map(|(_, part)| part), by))
  }

  /// A finding of the view as [`found_by_result`] gives it.
  fn origin_found(&self, f: Found) -> Option<ResultFound> {
    let ((i, from), (by, by_from)) = (*self.origin.get(f.index)?, *self.origin.get(f.by)?);
    Some(ResultFound {
      found: Found { index: i, by, ..f },
      result: from.map(|(k, _)| k),
      by_result: by_from.map(|(k, _)| k),
    })
  }

  /// The view's supersessions, if they were found with `tools` for every message of `conv`.
  pub(crate) fn supersessions_for(
    &self,
    conv: &Conversation<'_>,
    tools: &ToolNames,
  ) -> Option<&Supersessions> {
    (self.supersessions.tools == *tools && self.messages == conv.len())
      .then_some(&self.supersessions)
  }

  /// The message of the conversation that message `s` of the view is (or is a result of).
  pub(crate) fn message_of(&self, s: usize) -> Option<usize> {
    self.origin.get(s).map(|&(i, _)| i)
  }

  /// Where message `s` of the view comes from: its message in the conversation, and for a
  /// result of a message of several, its place among that message's results.
  pub(crate) fn origin_of(&self, s: usize) -> Option<(usize, Option<usize>)> {
    self.origin.get(s).map(|&(i, from)| (i, from.map(|(k, _)| k)))
  }

  /// What [`found_by_result`] finds about message `i` of the conversation, from the view's
  /// supersessions: each of its messages in the view (itself, or each of its results), in
  /// order, the file access then the listing (each when asked for).
  pub(crate) fn found_about(
    &self,
    i: usize,
    io_content: bool,
    survey_directory: bool,
  ) -> Vec<ResultFound> {
    let start = self.origin.partition_point(|&(m, _)| m < i);
    let end = start + self.origin[start..].partition_point(|&(m, _)| m == i);
    (start..end)
      .flat_map(|s| self.supersessions.found_at(s, io_content, survey_directory))
      .filter_map(|f| self.origin_found(f.clone()))
      .collect()
  }

  /// The view's pairs, as [`superseded_by_result`] gives them.
  fn pairs(&self) -> Vec<(usize, Option<usize>, usize)> {
    self.supersessions.merged().filter_map(|f| self.origin_pair(f.index, f.by)).collect()
  }

  /// How many messages of the conversation the view holds.
  pub fn len(&self) -> usize {
    self.messages
  }

  /// Whether the view holds no message.
  pub fn is_empty(&self) -> bool {
    self.messages == 0
  }
}

/// Every tool result of `conv` that a newer result supersedes, with the first result
/// superseding it, by index: the one rule of supersession ([`IoContentDeduplicator`] and
/// [`SurveyDirectoryDeduplicator`] with their default tool names), shared by
/// [`crate::strategy::dedup::deduplicate`] and the classification of the priority strategies
/// ([`crate::analysis::classify`]). A result is found once: a file access or a listing, never both.
///
/// With the default tool names each result's accesses are memoised (see `Accesses`), unless
/// the arguments of its call are longer than `MAX_MEMOISED_ARGUMENTS`.
pub fn superseded_results(conv: &Conversation<'_>, tools: &ToolNames) -> Vec<Found> {
  if let Some(known) = GrowingAnalysis::supersessions(conv).filter(|k| k.tools == *tools) {
    return known.merged().cloned().collect();
  }
  let ctx = Context::new(conv, tools);
  if *tools != *default_tools() {
    let mut found = supersessions(&IoContentDeduplicator, &ctx);
    found.extend(supersessions(&SurveyDirectoryDeduplicator, &ctx));
    found.sort_by_key(|f| f.index);
    found.dedup_by_key(|f| f.index);
    return found;
  }
  // Accesses found in another context than their memo's: held here for the call.
  let mut afresh: Vec<(usize, Accesses)> = Vec::new();
  let mut memoised: Vec<(usize, &Accesses)> = Vec::with_capacity(conv.len());
  for i in 0..conv.len() {
    let m = conv.message(i);
    if !m.is_tool_result() {
      continue;
    }
    // The memo holds a copy of the call's arguments: a large one (a whole file written) is not
    // copied, its result's accesses are found afresh every call.
    let large = conv.call_arguments(i).is_some_and(|a| a.len() > MAX_MEMOISED_ARGUMENTS);
    let memo = (!large).then(|| facts(m).accesses.get_or_init(|| Accesses::find(&ctx, i)));
    match memo {
      Some(memo) if memo.hold_in(&ctx, i) => memoised.push((i, memo)),
      _ => afresh.push((i, Accesses::find_for_call(&ctx, i))),
    }
  }
  let mut all: Vec<(usize, &Accesses)> = memoised;
  all.extend(afresh.iter().map(|(i, a)| (*i, a)));
  all.sort_by_key(|(i, _)| *i);
  let files = all.iter().filter_map(|(i, a)| Some((*i, a.file.as_ref()?)));
  let mut found = superseded_by(&IoContentDeduplicator, files);
  let listings = all.iter().filter_map(|(i, a)| Some((*i, a.listing.as_ref()?)));
  found.extend(superseded_by(&SurveyDirectoryDeduplicator, listings));
  found.sort_by_key(|f| f.index);
  found.dedup_by_key(|f| f.index);
  found
}

/// The supersessions of a conversation that grows one message at a time, kept up to date as
/// each message is appended ([`Supersessions::push`]): what [`superseded_results`] and
/// [`crate::strategy::dedup::deduplicate`] find in the conversation of the messages pushed so far, without reading the
/// earlier messages again. A conversation carries them with
/// [`GrowingAnalysis::give`] (the simulator's turns do).
///
/// A result's access (its location key and scope) depends only on the messages up to it, and
/// a result is superseded by the first later access of its location whose scope supersedes its
/// own ([`supersede`], the batch rule's too): so appending an access finds exactly the older
/// accesses of its location not superseded yet that it supersedes, and nothing found before
/// changes. O(distinct scopes not superseded yet at its location) per message.
#[derive(Debug)]
pub struct Supersessions {
  pub(crate) tools: ToolNames,
  epochs: Epochs,
  io: Finder<FileAccess>,
  survey: Finder<Listing>,
  /// Every message found superseded, in the order found ([`Supersessions::revision`]).
  changed: Vec<usize>,
}

/// One deduplicator's accesses not yet superseded, by location, and per message what
/// supersedes it.
#[derive(Debug)]
struct Finder<S> {
  live: HashMap<String, LiveScopes<S, String>>,
  found: Vec<Option<Found>>,
}

impl<S> Default for Finder<S> {
  fn default() -> Self {
    Finder { live: HashMap::new(), found: Vec::new() }
  }
}

impl<S> Finder<S> {
  /// Reads message `i` (the next one) of `ctx.conv` with `dedup`, adding to `changed` every
  /// message it finds superseded (each once: see [`supersede`]).
  fn push<D: Deduplicator<Scope = S>>(
    &mut self,
    dedup: &D,
    ctx: &Context<'_, '_>,
    i: usize,
    changed: &mut Vec<usize>,
  ) {
    self.found.push(None);
    let Some(Access { path, key, noun, scope }) = dedup.access(ctx, i) else { return };
    let Finder { live, found } = self;
    supersede(dedup, live.entry(key).or_default(), scope, (i, path), |a, path| {
      found[a] = Some(Found { index: a, by: i, path, noun });
      changed.push(a);
    });
  }
}

impl Supersessions {
  /// No messages yet, with `tools` (a conversation's [`superseded_results`] and
  /// [`crate::strategy::dedup::deduplicate`] use these only when asked with the same tool names).
  pub fn new(tools: ToolNames) -> Self {
    Supersessions {
      epochs: Epochs { default_tools: tools == *default_tools(), ..Epochs::default() },
      tools,
      io: Finder::default(),
      survey: Finder::default(),
      changed: Vec::new(),
    }
  }

  /// The messages pushed.
  pub fn len(&self) -> usize {
    self.io.found.len()
  }

  /// Whether no message was pushed.
  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }

  /// A number that grows whenever a push finds a result superseded: while it stays the same,
  /// what supersedes what among the messages pushed is the same.
  pub fn revision(&self) -> usize {
    self.changed.len()
  }

  /// The messages found superseded since `revision` ([`Supersessions::revision`]), in the order
  /// found; each result is found once, so a message is named more than once only for several
  /// results of its own (in a split view) or by both deduplicators.
  pub fn changed_since(&self, revision: usize) -> &[usize] {
    self.changed.get(revision..).unwrap_or_default()
  }

  /// What supersedes message `i`, as [`crate::strategy::dedup::deduplicate`] reads it: the file
  /// access, then the listing (each when asked for).
  pub(crate) fn found_at(
    &self,
    i: usize,
    io_content: bool,
    survey_directory: bool,
  ) -> impl Iterator<Item = &Found> {
    let io = self.io.found.get(i).and_then(Option::as_ref).filter(|_| io_content);
    let survey = self.survey.found.get(i).and_then(Option::as_ref).filter(|_| survey_directory);
    io.into_iter().chain(survey)
  }

  /// Reads the next message of `conv`, message [`Supersessions::len`] (`conv` holds every
  /// message pushed before it, in the same order; it may hold more).
  pub fn push(&mut self, conv: &Conversation<'_>) {
    let i = self.len();
    self.epochs.push(conv.message(i), &self.tools);
    let ctx = Context {
      conv,
      tools: &self.tools,
      epochs: std::cell::OnceCell::new(),
      known_epochs: Some(&self.epochs),
      epoch_used: std::cell::Cell::new(None),
    };
    self.io.push(&IoContentDeduplicator, &ctx, i, &mut self.changed);
    self.survey.push(&SurveyDirectoryDeduplicator, &ctx, i, &mut self.changed);
  }

  /// What [`superseded_results`] returns: per result, the file access, else the listing.
  fn merged(&self) -> impl Iterator<Item = &Found> {
    self
      .io
      .found
      .iter()
      .zip(&self.survey.found)
      .filter_map(|(io, survey)| io.as_ref().or(survey.as_ref()))
  }

  /// What [`deduplicate`] reads: by index, the file access, then the listing.
  pub(crate) fn pairs(&self, io_content: bool, survey_directory: bool) -> Vec<Found> {
    let mut pairs = Vec::new();
    for (io, survey) in self.io.found.iter().zip(&self.survey.found) {
      pairs.extend(io.iter().filter(|_| io_content).cloned());
      pairs.extend(survey.iter().filter(|_| survey_directory).cloned());
    }
    pairs
  }
}

/// How a placeholder of [`crate::strategy::dedup::deduplicate`] begins: `[superseded by a newer read of P at step N]`.
pub(crate) const PLACEHOLDER_PREFIX: &str = "[superseded by a newer ";

/// Whether `m` is a placeholder [`crate::strategy::dedup::deduplicate`] wrote: one line, in brackets, from
/// [`PLACEHOLDER_PREFIX`]. Results longer than any placeholder (4,096 UTF-16 units, a long
/// path included) are rejected from their memoised length, without joining their text.
fn is_placeholder(m: &Message) -> bool {
  if m.content_utf16_len() > 4096 {
    return false;
  }
  let text = m.content_text();
  text.starts_with(PLACEHOLDER_PREFIX) && text.ends_with(']') && !text.contains('\n')
}

fn contains(names: &[String], name: &str) -> bool {
  names.iter().any(|n| n == name)
}

/// The first non-empty string among `keys` of `args`.
fn string_arg(args: &Map<String, Value>, keys: &[String]) -> Option<String> {
  keys.iter().find_map(|k| match args.get(k) {
    Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
    _ => None,
  })
}

/// A shell tool's command line under the first of `keys` that holds one: a string, or an
/// argument vector such as Codex's `["bash", "-lc", "cat src/a.rs"]`
/// ([`shell_command_line`]).
fn shell_arg(args: &Map<String, Value>, keys: &[String]) -> Option<String> {
  keys.iter().find_map(|k| {
    let line = shell_command_line(args.get(k)?)?;
    let line = line.trim();
    (!line.is_empty()).then(|| line.to_string())
  })
}

/// A path as a location key: `./` prefixes, repeated and trailing slashes removed.
fn normalise(path: &str) -> String {
  let mut p = path.trim();
  while let Some(rest) = p.strip_prefix("./") {
    p = rest.trim_start_matches('/');
  }
  let mut out = String::with_capacity(p.len());
  for c in p.chars() {
    if !(c == '/' && out.ends_with('/')) {
      out.push(c);
    }
  }
  while out.len() > 1 && out.ends_with('/') {
    out.pop();
  }
  while out.len() > 2 && out.ends_with("/.") {
    out.truncate(out.len() - 2);
  }
  if out.is_empty() {
    ".".into()
  } else {
    out
  }
}

fn is_absolute(path: &str) -> bool {
  path.starts_with('/')
}

/// The working directory a shell result reports: SWE-agent's `(Current directory: D)`,
/// OpenHands' `[Current working directory: D]`.
fn working_directory(text: &str) -> Option<&str> {
  text.lines().rev().find_map(|line| {
    let line = line.trim();
    let dir = line
      .strip_prefix("(Current directory: ")
      .and_then(|d| d.strip_suffix(')'))
      .or_else(|| {
        line.strip_prefix("[Current working directory: ").and_then(|d| d.strip_suffix(']'))
      })?
      .trim();
    dir.starts_with('/').then_some(dir)
  })
}

/// A simple command: the program, its single-letter flags, its operands.
#[derive(Debug, PartialEq, Eq)]
struct SimpleCommand<'a> {
  flags: BTreeSet<char>,
  operands: Vec<&'a str>,
}

/// Parses `command` as exactly `program [-FLAGS…] [OPERANDS…]` with flags from `allowed`;
/// `None` for anything else (see [`SHELL_SPECIAL`]).
fn simple_command<'a>(command: &'a str, program: &str, allowed: &str) -> Option<SimpleCommand<'a>> {
  if command.contains(SHELL_SPECIAL) {
    return None;
  }
  let mut words = command.split_whitespace();
  if words.next()? != program {
    return None;
  }
  let mut flags = BTreeSet::new();
  let mut operands = Vec::new();
  for word in words {
    match word.strip_prefix('-') {
      Some(letters) if !letters.is_empty() && !letters.starts_with('-') => {
        for f in letters.chars() {
          if !allowed.contains(f) {
            return None;
          }
          flags.insert(f);
        }
      }
      Some(_) => return None,
      None => operands.push(word),
    }
  }
  Some(SimpleCommand { flags, operands })
}

/// The editor's directory view: (depth, path, excludes hidden items).
fn editor_listing(text: &str) -> Option<(u64, String, bool)> {
  let first = text.trim_start().lines().next()?;
  let rest = first.strip_prefix("Here's the files and directories up to ")?;
  let (depth, rest) = rest.split_once(" levels deep in ")?;
  let depth = depth.trim().parse().ok()?;
  let (path, hidden) = match rest.split_once(", excluding hidden items") {
    Some((path, _)) => (path, true),
    None => (rest.trim_end_matches(':'), false),
  };
  let path = path.trim().trim_end_matches(':').trim();
  (!path.is_empty()).then(|| (depth, path.to_string(), hidden))
}

/// The range a read's arguments ask for, if any (see [`Coverage::Lines`]).
fn argument_range(args: &Map<String, Value>) -> Option<Coverage> {
  let line = |v: &Value| v.as_i64();
  let lines = |start: i64, end: Option<i64>| -> Coverage {
    let start = start.max(1) as u64;
    let end = end.filter(|&e| e >= 0).map(|e| e as u64);
    if start == 1 && end.is_none() {
      Coverage::Whole
    } else {
      Coverage::Lines(start, end)
    }
  };
  if let Some(range) = args.get("view_range") {
    return Some(match range.as_array().map(|r| r.iter().map(line).collect::<Vec<_>>()) {
      Some(r) if r.len() == 2 => match (r[0], r[1]) {
        (Some(a), Some(b)) => lines(a, (b != -1).then_some(b)),
        _ => Coverage::Unknown,
      },
      _ => Coverage::Unknown,
    });
  }
  for (from, to) in [("start_line", "end_line"), ("line_start", "line_end")] {
    if args.contains_key(from) || args.contains_key(to) {
      let start = args.get(from).map_or(Some(1), line);
      let end = args.get(to).map(line);
      return Some(match (start, end) {
        (Some(a), None) => lines(a, None),
        (Some(a), Some(Some(b))) => lines(a, Some(b)),
        _ => Coverage::Unknown,
      });
    }
  }
  if args.contains_key("offset") || args.contains_key("limit") {
    let offset = args.get("offset").map_or(Some(1), line);
    let limit = args.get("limit").map(line);
    return Some(match (offset, limit) {
      (Some(a), None) => lines(a, None),
      (Some(a), Some(Some(n))) if n > 0 => lines(a, Some(a.max(1) + n - 1)),
      _ => Coverage::Unknown,
    });
  }
  None
}

/// The coverage of a result with a `[File: P (N lines total…)]` header and numbered lines
/// (`N:`, `N|` or `cat -n`'s `   N\t`) in one contiguous run: whole when they run from 1 to N.
fn listing_coverage(text: &str) -> Option<Coverage> {
  let total = lines_total(text)?;
  let (first, last) = numbered_run(text)?;
  Some(if first == 1 && last == total {
    Coverage::Whole
  } else {
    Coverage::Lines(first, Some(last))
  })
}

/// N of a `[File: P (N lines total)]` or `[File: P (N lines total after edit)]` header.
fn lines_total(text: &str) -> Option<u64> {
  text.lines().find_map(|line| {
    let rest = line.trim_end().strip_prefix("[File: ")?.strip_suffix(']')?;
    let info = &rest[rest.rfind(" (")? + 2..];
    let (n, after) = info.strip_suffix(')')?.split_once(" lines total")?;
    (after.is_empty() || after == " after edit").then(|| n.parse().ok()).flatten()
  })
}

/// Whether a result is a JSON object with the file's content (`content`, `newContent` or
/// `file_content`, a string).
fn returns_content(text: &str) -> bool {
  parse_object(text).is_some_and(|map| {
    ["content", "newContent", "file_content"]
      .iter()
      .any(|k| matches!(map.get(*k), Some(Value::String(_))))
  })
}

#[cfg(test)]
mod tests {
  //! The rules are checked through the strategy that writes them out, [`deduplicate`].
  use super::*;
  use crate::model::message::Message;
  use crate::model::tokens::Encoding;
  use crate::plan::{Action, MetaValue};
  use crate::strategy::dedup::{deduplicate, supersedes, DedupOptions};
  use crate::testing::{call, result, user};

  /// A conversation of (tool, arguments, result) exchanges after a task.
  fn session(exchanges: &[(&str, &str, &str)]) -> Vec<Message> {
    let mut msgs = vec![user("task")];
    for (k, (tool, args, text)) in exchanges.iter().enumerate() {
      let id = format!("c{k}");
      msgs.push(call(&id, tool, args));
      msgs.push(result(&id, text));
    }
    msgs
  }

  /// (superseded index, superseding index) pairs of `msgs` with default options.
  fn pairs(msgs: &[Message]) -> Vec<(usize, usize)> {
    let conv = Conversation::new(msgs, Encoding::O200kBase);
    deduplicate(&conv, &DedupOptions::default())
      .superseded
      .iter()
      .map(|s| (s.index, s.superseded_by))
      .collect()
  }

  fn big(label: &str) -> String {
    format!("{label}\n{}", "some file content line\n".repeat(40))
  }

  const VIEW: &str = "str_replace_editor";

  fn view(path: &str, range: Option<(i64, i64)>) -> String {
    match range {
      Some((a, b)) => format!(r#"{{"command":"view","path":"{path}","view_range":[{a},{b}]}}"#),
      None => format!(r#"{{"command":"view","path":"{path}"}}"#),
    }
  }

  #[test]
  fn a_newer_read_supersedes_older_reads_and_writes_of_the_same_file() {
    let a = r#"{"path":"src/a.ts"}"#;
    let msgs = session(&[
      ("read_file", a, &big("v1")),
      ("write_file", a, &big("File written. Content:")),
      ("read_file", r#"{"path":"src/b.ts"}"#, &big("other")),
      ("read_file", a, &big("v2")),
    ]);
    // Each older access of src/a.ts points at the first one that superseded it: the read (2)
    // at the write (4), the write at the newer read (8).
    assert_eq!(pairs(&msgs), vec![(2, 4), (4, 8)]);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let d = deduplicate(&conv, &DedupOptions::default());
    let Action::Replace(r) = d.plan.action(4) else { panic!("not replaced") };
    assert_eq!(&*r.content, "[superseded by a newer read of src/a.ts at step 4]");
    let Action::Replace(r) = d.plan.action(2) else { panic!("not replaced") };
    assert_eq!(&*r.content, "[superseded by a newer write of src/a.ts at step 2]");
    assert_eq!(
      r.meta,
      vec![
        ("_superseded", MetaValue::Bool(true)),
        ("_supersededBy", MetaValue::Number(4.0)),
        ("_originalTokens", MetaValue::Number(conv.tokens(2) as f64)),
      ]
    );
    assert_eq!(d.saved_tokens, conv.total_tokens() - d.total_tokens);
    assert_eq!(d.saved_tokens, d.superseded.iter().map(|s| s.saved_tokens).sum::<usize>());
    assert_eq!(supersedes(&d.superseded), vec![(4, vec![2]), (8, vec![4])]);
    assert!(d.plan.check_units(&conv).is_ok() && d.plan.dropped().is_empty());
  }

  #[test]
  fn a_shell_argument_vector_reads_as_its_command_line() {
    // Codex CLI's shell tool takes `["bash", "-lc", script]` or a plain argument vector.
    let cat = r#"{"command":["bash","-lc","cat /w/a.rs"]}"#;
    let msgs = session(&[
      ("shell", cat, &big("v1")),
      ("shell", r#"{"command":["ls","/w"]}"#, &big("a.rs b.rs")),
      ("shell", cat, &big("v2")),
      ("shell", r#"{"command":["ls","/w"]}"#, &big("a.rs b.rs c.rs")),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 6), (4, 8)]);
  }

  #[test]
  fn a_full_write_supersedes_and_a_partial_edit_does_not() {
    let a = r#"{"path":"/w/a.py"}"#;
    let msgs = session(&[
      ("read_file", a, &big("v1")),
      ("edit_file", a, &big("edited, snippet:")),
      ("write_file", a, &big("File written. Content:")),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 6), (4, 6)]);
    // An edit alone supersedes nothing, but is superseded by a later read.
    let msgs = session(&[
      ("read_file", a, &big("v1")),
      ("edit_file", a, &big("edited, snippet:")),
      ("read_file", a, &big("v2")),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 6), (4, 6)]);
    let msgs = session(&[("read_file", a, &big("v1")), ("edit_file", a, &big("snippet"))]);
    assert_eq!(pairs(&msgs), vec![]);
  }

  #[test]
  fn an_edit_that_returns_the_whole_file_supersedes() {
    let file = |total: usize, shown: std::ops::RangeInclusive<usize>, after: &str| {
      let lines: String = shown.map(|n| format!("{n}|line {n} of the file\n")).collect();
      format!("[File: /w/App.css ({total} lines total{after})]\n(this is the beginning of the file)\n{lines}(this is the end of the file)")
    };
    let code = r#"{"code":"edit_file_by_replace('/w/App.css')"}"#;
    let open = r#"{"code":"open_file('/w/App.css')"}"#;
    let ipy = "execute_ipython_cell";
    // OpenHands agent skills: the header says 40 lines and lines 1..40 are shown.
    let whole =
      session(&[(ipy, open, &file(40, 1..=40, "")), (ipy, code, &file(40, 1..=40, " after edit"))]);
    assert_eq!(pairs(&whole), vec![(2, 4)]);
    // A window of a longer file is not the whole file.
    let window = session(&[
      (ipy, open, &file(40, 1..=40, "")),
      (ipy, code, &file(140, 1..=100, " after edit")),
    ]);
    assert_eq!(pairs(&window), vec![]);
    // A JSON result with the content.
    let json = format!(r#"{{"path":"/w/a","content":"{}"}}"#, "x\\n".repeat(200));
    let msgs = session(&[
      ("read_file", r#"{"path":"/w/a"}"#, &big("v1")),
      ("edit_file", r#"{"path":"/w/a"}"#, &json),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 4)]);
  }

  #[test]
  fn shell_reads_supersede_by_the_lines_they_print_and_writes_whole() {
    let sh = |cmd: &str| format!(r#"{{"command":{}}}"#, serde_json::to_string(cmd).unwrap());
    let (a, b, c, d, e, f) = (
      sh("sed -n '10,20p' /w/a.py"),
      sh("nl -ba /w/a.py | sed -n '5,30p'"),
      sh("tail -n 5 /w/a.py"),
      sh("cat /w/a.py"),
      sh("head -n 3 /w/a.py"),
      sh("cat > /w/a.py << 'EOF'\nprint(1)\nEOF"),
    );
    let steps = [
      ("bash", a.as_str(), big("10-20")),
      ("bash", b.as_str(), big("5-30")),
      ("bash", c.as_str(), big("tail")),
      ("bash", d.as_str(), big("whole")),
      ("bash", e.as_str(), big("head")),
      ("bash", f.as_str(), String::new()),
    ];
    let first = |n: usize| {
      let refs: Vec<(&str, &str, &str)> =
        steps[..n].iter().map(|(t, a, r)| (*t, *a, r.as_str())).collect();
      pairs(&session(&refs))
    };
    // [10,20] is inside [5,30].
    assert_eq!(first(2), vec![(2, 4)]);
    // The whole read covers both ranges and the tail; the later head covers nothing.
    assert_eq!(first(5), vec![(2, 4), (4, 8), (6, 8)]);
    // The write replaces the file: every earlier view is stale, each named by the first
    // result that made it so (the whole read and the head that came after it, by the write).
    assert_eq!(first(6), vec![(2, 4), (4, 8), (6, 8), (8, 12), (10, 12)]);
  }

  #[test]
  fn ranges_supersede_only_what_they_contain() {
    let p = "/w/p.c";
    let cat =
      |label: &str| format!("Here's the result of running `cat -n` on {p}:\n{}", big(label));
    let msgs = session(&[
      (VIEW, &view(p, Some((100, 110))), &cat("a")),
      (VIEW, &view(p, Some((100, 102))), &cat("b")),
      (VIEW, &view(p, Some((90, 120))), &cat("c")),
      (VIEW, &view(p, Some((200, -1))), &cat("d")),
      (VIEW, &view(p, Some((150, -1))), &cat("e")),
    ]);
    // [100,110] and [100,102] are inside [90,120]; [200,end] is inside [150,end].
    assert_eq!(pairs(&msgs), vec![(2, 6), (4, 6), (8, 10)]);
    // [1, -1] is the whole file: it supersedes every range.
    let msgs = session(&[
      (VIEW, &view(p, Some((100, -1))), &cat("a")),
      (VIEW, &view(p, None), &cat("b")),
      (VIEW, &view(p, Some((1, -1))), &cat("c")),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 4), (4, 6)]);
    // offset/limit and start_line/end_line.
    let read = |args: &str| ("read_file", args.to_string(), big("r"));
    let ex = [
      read(r#"{"path":"/a","offset":10,"limit":5}"#),
      read(r#"{"path":"/a","offset":1,"limit":100}"#),
      read(r#"{"path":"/a","start_line":50,"end_line":60}"#),
      read(r#"{"path":"/a","start_line":40}"#),
    ];
    let refs: Vec<(&str, &str, &str)> =
      ex.iter().map(|(t, a, r)| (*t, a.as_str(), r.as_str())).collect();
    assert_eq!(pairs(&session(&refs)), vec![(2, 4), (6, 8)]);
  }

  #[test]
  fn coverage_containment_table() {
    use Coverage::*;
    for (newer, older, expected) in [
      (Whole, Unknown, true),
      (Whole, Lines(5, None), true),
      (Lines(1, None), Whole, false),
      (Lines(1, Some(10)), Lines(2, Some(10)), true),
      (Lines(1, Some(10)), Lines(2, Some(11)), false),
      (Lines(3, None), Lines(3, Some(99)), true),
      (Lines(3, Some(99)), Lines(3, None), false),
      (Lines(1, None), Unknown, false),
      (Unknown, Unknown, false),
    ] {
      assert_eq!(newer.contains(older), expected, "{newer:?} ⊇ {older:?}");
    }
  }

  #[test]
  fn failures_neither_supersede_nor_are_superseded() {
    let a = r#"{"path":"/w/a"}"#;
    let msgs = session(&[
      ("read_file", a, &big("v1")),
      ("read_file", a, &format!("ERROR: {}", big("permission denied"))),
      ("edit_file", a, &format!("ERROR: {}", big("no match"))),
      ("read_file", a, &big("v2")),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 8)]);
    let mut flagged = session(&[("read_file", a, &big("v1")), ("read_file", a, &big("v2"))]);
    flagged[4].is_error = true;
    assert_eq!(pairs(&flagged), vec![]);
  }

  #[test]
  fn directory_listings_supersede_when_at_least_as_inclusive() {
    let list = |args: &str| ("list_dir", args.to_string(), big("entries"));
    let ex = [
      list(r#"{"path":"src"}"#),
      list(r#"{"path":"src/","ignore":["*.log"]}"#),
      list(r#"{"path":"./src","ignore":["*.log","dist"]}"#),
      list(r#"{"path":"lib","recursive":true}"#),
      list(r#"{"path":"lib"}"#),
      list(r#"{"path":"src","ignore":"dist"}"#),
      list(r#"{"path":"lib","depth":3,"recursive":true}"#),
    ];
    let refs: Vec<(&str, &str, &str)> =
      ex.iter().map(|(t, a, r)| (*t, a.as_str(), r.as_str())).collect();
    let msgs = session(&refs);
    // src: 2 (no filter) is not superseded by 4 ({*.log}) nor 6; 6 ({*.log, dist}) is by 12
    // ({dist} ⊆ it); 4 ({*.log}) is not by 12. lib: 8 (recursive) is not by 10 (depth 1), 10 is
    // by 14 (recursive), and so is 8.
    assert_eq!(pairs(&msgs), vec![(6, 12), (8, 14), (10, 14)]);
  }

  #[test]
  fn memoised_facts_belong_to_each_message_and_give_the_same_results_on_every_turn() {
    let sh = |cmd: &str| format!(r#"{{"command":{}}}"#, serde_json::to_string(cmd).unwrap());
    let (cat, ls, cd) = (sh("cat notes.txt"), sh("ls src"), sh("cd sub"));
    let done = "[The command completed with exit code 0.]";
    let msgs = session(&[
      ("execute_bash", &cat, &big("v1")),
      ("execute_bash", &ls, &big("a b")),
      ("read_file", r#"{"path":"src/a.ts"}"#, &big("a1")),
      ("execute_bash", &cd, done),
      ("execute_bash", &cat, &big("v2")),
      ("execute_bash", &ls, &big("a b c")),
      ("read_file", r#"{"path":"./src//a.ts"}"#, &big("a2")),
      ("execute_bash", &cat, &big("v3")),
    ]);
    // `cd` (8) starts a new working directory: the relative `cat` (2) and `ls` (4) before it are
    // about other files than those after it.
    let expected = vec![(6, 14), (10, 16)];
    let found = |msgs: &[&Message]| -> Vec<(usize, usize, String)> {
      let conv = Conversation::from_refs(msgs.to_vec(), Encoding::O200kBase);
      let found = superseded_results(&conv, &ToolNames::default());
      found.into_iter().map(|f| (f.index, f.by, f.path)).collect()
    };
    let refs: Vec<&Message> = msgs.iter().collect();
    // Every prefix, as an agent loop (or the simulator) sends them turn after turn, on the same
    // messages: the first prefix fills the memos, the later ones read them; fresh copies start
    // with empty memos.
    for end in 1..=refs.len() {
      let cold: Vec<Message> = msgs[..end].to_vec();
      let cold_refs: Vec<&Message> = cold.iter().collect();
      assert_eq!(found(&refs[..end]), found(&cold_refs), "prefix of {end} messages");
    }
    let pairs: Vec<(usize, usize)> = found(&refs).iter().map(|f| (f.0, f.1)).collect();
    assert_eq!(pairs, expected);
    // The same result messages answering other calls: a result's memo holds what its own text
    // says and a call's what its arguments say, so a result paired anew is keyed by its new call.
    let (first, second) = (result("x", &big("v1")), result("y", &big("v2")));
    let with = |tool: &str, args: &str| {
      vec![
        user("task"),
        call("x", tool, args),
        first.clone(),
        call("y", tool, args),
        second.clone(),
      ]
    };
    let (shell, read) = (with("execute_bash", &cat), with("read_file", r#"{"path":"/r/b.ts"}"#));
    fn shared<'m>(
      msgs: &'m [Message],
      first: &'m Message,
      second: &'m Message,
    ) -> Vec<&'m Message> {
      vec![&msgs[0], &msgs[1], first, &msgs[3], second]
    }
    assert_eq!(found(&shared(&shell, &first, &second)), vec![(2, 4, "notes.txt".to_string())]);
    assert_eq!(found(&shared(&read, &first, &second)), vec![(2, 4, "/r/b.ts".to_string())]);
  }

  #[test]
  fn a_memoised_access_is_used_only_in_the_working_directory_it_was_keyed_in() {
    let sh = |cmd: &str| format!(r#"{{"command":{}}}"#, serde_json::to_string(cmd).unwrap());
    let (cat, cd) = (sh("cat notes.txt"), sh("cd sub"));
    let (old, new) = (result("x", &big("v1")), result("y", &big("v2")));
    let done = result("d", "[The command completed with exit code 0.]");
    let calls = [call("x", "execute_bash", &cat), call("d", "execute_bash", &cd)];
    let later = call("y", "execute_bash", &cat);
    let found = |msgs: Vec<&Message>| -> Vec<(usize, usize)> {
      let conv = Conversation::from_refs(msgs, Encoding::O200kBase);
      superseded_results(&conv, &ToolNames::default())
        .into_iter()
        .map(|f| (f.index, f.by))
        .collect()
    };
    // The same two result objects, their memos filled by the first conversation: without a
    // `cd` between them they read the same file; with one, the later `cat` reads another.
    assert_eq!(found(vec![&calls[0], &old, &later, &new]), vec![(1, 3)]);
    assert_eq!(found(vec![&calls[0], &old, &calls[1], &done, &later, &new]), vec![]);
    assert_eq!(found(vec![&calls[0], &old, &later, &new]), vec![(1, 3)]);
    // Calls with long arguments: found every time, not memoised (no copy of the arguments).
    let long = format!(r#"{{"path":"/r/b.ts","note":"{}"}}"#, "x".repeat(MAX_MEMOISED_ARGUMENTS));
    let (read_old, read_new) = (result("p", &big("b1")), result("q", &big("b2")));
    let reads = [call("p", "read_file", &long), call("q", "read_file", &long)];
    for _ in 0..2 {
      assert_eq!(found(vec![&reads[0], &read_old, &reads[1], &read_new]), vec![(1, 3)]);
    }
    assert!(facts(&read_old).accesses.get().is_none() && facts(&old).accesses.get().is_some());
  }

  #[test]
  fn shell_ls_and_cat_are_recognised_only_when_simple() {
    let sh = |cmd: &str, out: &str| {
      (
        "execute_bash",
        format!(r#"{{"command":{}}}"#, serde_json::to_string(cmd).unwrap()),
        out.to_string(),
      )
    };
    let ok = big("a  b  c\n[The command completed with exit code 0.]");
    let ex = [
      sh("ls src", &ok),
      sh("ls -a src", &ok),
      sh("ls -l src", &ok),
      sh("ls src | head", &ok),
      sh("ls -la src", &ok),
      sh("ls --color src", &ok),
      sh("ls -R src", &ok),
      sh("ls src", "ls: cannot access 'src': No such file or directory\n[The command completed with exit code 2.]"),
    ];
    let refs: Vec<(&str, &str, &str)> =
      ex.iter().map(|(t, a, r)| (*t, a.as_str(), r.as_str())).collect();
    // `ls -a` (4) supersedes plain `ls` (2); `ls -la` (10) supersedes `ls -a` and `ls -l` (6);
    // `ls -R` (14) supersedes neither `ls -la` (it hides dot files) nor anything older (each is
    // superseded already). The pipe (8), the long option (12) and the failed `ls` (16) are not
    // listings.
    assert_eq!(pairs(&session(&refs)), vec![(2, 4), (4, 10), (6, 10)]);
    // cat of one file is a whole read; `cd` starts a new working directory for relative paths.
    let ex = [
      sh("cat notes.txt", &big("v1")),
      sh("cat -n notes.txt", &big("v2")),
      sh("cd sub", "[The command completed with exit code 0.]"),
      sh("cat notes.txt", &big("v3")),
      sh("cat /abs/x", &big("x1")),
      sh("cat /abs//x/", &big("x2")),
      sh("cat a b", &big("two files")),
    ];
    let refs: Vec<(&str, &str, &str)> =
      ex.iter().map(|(t, a, r)| (*t, a.as_str(), r.as_str())).collect();
    assert_eq!(pairs(&session(&refs)), vec![(2, 4), (10, 12)]);
  }

  #[test]
  fn simple_command_table() {
    assert_eq!(simple_command("ls", "ls", LS_FLAGS).map(|c| c.operands), Some(vec![]));
    assert_eq!(
      simple_command("ls  -la   /w", "ls", LS_FLAGS),
      Some(SimpleCommand { flags: ['a', 'l'].into(), operands: vec!["/w"] })
    );
    for bad in [
      "ls -d x",
      "ls *.rs",
      "ls 'a b'",
      "ls x && ls y",
      "ls > out",
      "lsof",
      "ls $HOME",
      "ls ~",
      "ls --all",
      "ls -",
    ] {
      assert_eq!(simple_command(bad, "ls", LS_FLAGS), None, "{bad}");
    }
    assert_eq!(simple_command("cat -v x", "cat", CAT_FLAGS), None);
  }

  #[test]
  fn editor_directory_views_are_listings() {
    let v = |path: &str| format!(r#"{{"command":"view","path":"{path}"}}"#);
    let out = |p: &str| {
      format!(
        "Here's the files and directories up to 2 levels deep in {p}, excluding hidden items:\n{}",
        big("tree")
      )
    };
    let msgs = session(&[
      (VIEW, &v("/w"), &out("/w")),
      (VIEW, &v("/w/"), &out("/w")),
      (VIEW, &v("/x"), &out("/x")),
    ]);
    assert_eq!(pairs(&msgs), vec![(2, 4)]);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let d = deduplicate(&conv, &DedupOptions::default());
    let Action::Replace(r) = d.plan.action(2) else { panic!("not replaced") };
    assert_eq!(&*r.content, "[superseded by a newer listing of /w at step 2]");
  }

  #[test]
  fn configured_tools_and_keys() {
    let msgs = session(&[
      ("fetch_source", r#"{"module":"m.py"}"#, &big("v1")),
      ("fetch_source", r#"{"module":"m.py"}"#, &big("v2")),
      ("tree", r#"{"root":"/w"}"#, &big("t1")),
      ("tree", r#"{"root":"/w"}"#, &big("t2")),
    ]);
    assert_eq!(pairs(&msgs), vec![]);
    let mut options = DedupOptions::default();
    options.tools.read = vec!["fetch_source".into()];
    options.tools.path_keys = vec!["module".into()];
    options.tools.list = vec!["tree".into()];
    options.tools.list_path_keys = vec!["root".into()];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let found: Vec<(usize, usize)> =
      deduplicate(&conv, &options).superseded.iter().map(|s| (s.index, s.superseded_by)).collect();
    assert_eq!(found, vec![(2, 4), (6, 8)]);
    // Each deduplicator can be turned off.
    let off = DedupOptions { io_content: false, survey_directory: false, ..options };
    assert!(deduplicate(&conv, &off).superseded.is_empty());
  }

  #[test]
  fn below_the_threshold_nothing_changes() {
    let a = r#"{"path":"/a"}"#;
    let msgs = session(&[("read_file", a, &big("v1")), ("read_file", a, &big("v2"))]);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let total = conv.total_tokens();
    let at =
      |t| deduplicate(&conv, &DedupOptions { threshold_tokens: Some(t), ..Default::default() });
    let below = at(total + 1);
    assert!(!below.applied && below.plan.is_identity() && below.saved_tokens == 0);
    assert_eq!(below.total_tokens, total);
    assert!(at(total).applied && !at(total).plan.is_identity());
    assert_eq!(DedupOptions::threshold_from(Some(1000), None), Ok(Some(750)));
    assert_eq!(DedupOptions::threshold_from(Some(1001), Some(0.5)), Ok(Some(501)));
    assert_eq!(DedupOptions::threshold_from(None, Some(0.0)), Ok(None));
    assert_eq!(
      DedupOptions::threshold_from(None, None).unwrap_err().to_string(),
      "contextWindow: is required: deduplication only runs once the request reaches \
       deduplicationThreshold (0.75) of it; pass deduplicationThreshold: 0 to deduplicate at any size"
    );
    assert_eq!(
      DedupOptions::threshold_from(Some(10), Some(1.5)).unwrap_err().to_string(),
      "deduplicationThreshold: must be a number from 0 to 1, got 1.5"
    );
  }

  #[test]
  fn small_results_keep_their_content_and_multi_result_messages_are_left_alone() {
    let a = r#"{"path":"/a"}"#;
    let msgs = session(&[("read_file", a, "x"), ("read_file", a, "y")]);
    assert_eq!(pairs(&msgs), vec![]);
    // One message answering two calls (Anthropic parallel results).
    let mut two = result("p", &big("v1"));
    two.answers.push("q".into());
    let mut caller = call("p", "read_file", a);
    caller.tool_calls.push(crate::model::message::ToolCall {
      id: "q".into(),
      name: "read_file".into(),
      arguments: a.into(),
    });
    let mut msgs = vec![user("t"), caller, two];
    msgs.extend(session(&[("read_file", a, &big("v2"))]).into_iter().skip(1));
    assert_eq!(pairs(&msgs), vec![]);
  }

  #[test]
  fn deduplicating_the_output_again_changes_nothing() {
    // The first two reads report their working directory, so they are keyed by
    // /repo/notes.txt; the third does not, so it is keyed by the relative path. A placeholder
    // no longer shows a directory: read afresh it would be keyed by the relative path too, and
    // a second run would point it at the third read, with another text.
    let sh = |cmd: &str, out: String| ("execute_bash", format!(r#"{{"command":"{cmd}"}}"#), out);
    let ex = [
      sh("cat notes.txt", format!("{}(Current directory: /repo)", big("v1"))),
      sh("cat notes.txt", format!("{}(Current directory: /repo)", big("v2"))),
      sh("cat notes.txt", big("v3")),
    ];
    let refs: Vec<(&str, &str, &str)> =
      ex.iter().map(|(t, a, r)| (*t, a.as_str(), r.as_str())).collect();
    let msgs = session(&refs);
    assert_eq!(pairs(&msgs), vec![(2, 4)]);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let plan = deduplicate(&conv, &DedupOptions::default()).plan;
    let once = plan.apply(
      &msgs,
      |m, r| Message {
        content: crate::model::message::Content::Text(r.content.to_string()),
        ..m.clone()
      },
      |_| unreachable!("deduplicating inserts nothing"),
    );
    assert_eq!(once[2].content_text(), "[superseded by a newer read of /repo/notes.txt at step 2]");
    let again = Conversation::new(&once, Encoding::O200kBase);
    let second = deduplicate(&again, &DedupOptions::default());
    assert!(second.plan.is_identity(), "{:?}", second.superseded);
  }

  #[test]
  fn normalise_table() {
    for (raw, key) in [
      ("./src/", "src"),
      ("src//a", "src/a"),
      ("/", "/"),
      (".", "."),
      ("./", "."),
      ("/w/.", "/w"),
      (" a ", "a"),
    ] {
      assert_eq!(normalise(raw), key, "{raw}");
    }
  }
}
