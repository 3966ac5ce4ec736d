//! The Context Pruner (seed 001): watch the context window, and when it fills up, move what
//! matters least out of the conversation and into an archive.
//!
//! [`PrunerConfig::should_prune`] is true from `threshold`% of the window on, and
//! [`PrunerConfig::is_emergency`] from `emergency_threshold`%. [`prune`] then removes whole
//! units (a tool call with its results, or one message) until the request fits the target:
//! `target_percentage`% of the window, or `emergency_target_percentage`% in an emergency. It
//! always keeps
//!
//! - system and developer messages, agent instructions and the current task, and the latest
//!   tool results about files modified in the session (the tiers the seed's trimmer never
//!   drops, [`ContentPriority::is_protected`]; [`trim_by_priority`](crate::strategy::priority::trim_by_priority) itself drops them last);
//! - the last `keep_recent_messages` messages, extended to whole units so that no tool call is
//!   separated from its results;
//!
//! and otherwise removes what the priority trimmer removes first (lowest
//! [`crate::ContentPriority`], oldest first). What is removed goes to the archive
//! ([`crate::strategy::archive`]): every archived message verbatim in the JSONL sidecar, and a markdown
//! section ([`archive_markdown`]) with the session metrics, the archived items grouped (tool
//! outputs by tool, file reads, file changes, conversation) and the files to re-read
//! ([`Pruning::reconstruction`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::analysis::classify::ContentPriority;
use crate::analysis::file_ops::{numbered_file_operations, FileOp, FileOpKind, FileOperations};
use crate::analysis::file_tracker::FileTracker;
use crate::error::{js_number, Error, ErrorKind, Result};
use crate::model::conversation::Conversation;
use crate::plan::Plan;
use crate::strategy::archive;
use crate::strategy::priority::{trim_by_priority_keeping, PriorityOptions, Removal};
use crate::strategy::summarized::{trim_with_summary, Summary, SummaryOptions};

/// Default `threshold`: prune from 80% of the window.
pub const DEFAULT_THRESHOLD: f64 = 80.0;
/// Default `emergencyThreshold`: an emergency from 90% of the window.
pub const DEFAULT_EMERGENCY_THRESHOLD: f64 = 90.0;
/// Default `keepRecentMessages`.
pub const DEFAULT_KEEP_RECENT_MESSAGES: usize = 10;
/// Default `archivePath`.
pub const DEFAULT_ARCHIVE_PATH: &str = "context-archive.md";
/// Default `autoReconstruct`.
pub const DEFAULT_AUTO_RECONSTRUCT: bool = true;
/// Default `maxTokens`: the context window when the metrics do not give one (128k, the window
/// of gpt-4o and gpt-4.1-mini class models).
pub const DEFAULT_MAX_TOKENS: usize = 128_000;
/// Default `targetPercentage`: a prune brings the request down to 50% of the window, so that
/// the next prune is 30 points of growth away (each prune rewrites history and costs the
/// provider's prompt cache).
pub const DEFAULT_TARGET_PERCENTAGE: f64 = 50.0;
/// Default `emergencyTargetPercentage`: an emergency prune goes down to 30% of the window.
pub const DEFAULT_EMERGENCY_TARGET_PERCENTAGE: f64 = 30.0;
/// The configuration file `ContextPruner.fromConfigFile()` reads by default.
pub const DEFAULT_CONFIG_FILE: &str = "context-pruner.config.json";
/// How many characters of a message an archive line previews.
pub const PREVIEW_CHARS: usize = 80;

/// The pruner's configuration, every value filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct PrunerConfig {
  /// Percentage of the window from which [`PrunerConfig::should_prune`] is true.
  pub threshold: f64,
  /// Percentage of the window from which a prune is an emergency.
  pub emergency_threshold: f64,
  /// How many of the last messages a prune always keeps.
  pub keep_recent_messages: usize,
  /// The markdown archive's path; the sidecar is [`archive::sidecar_path`] of it.
  pub archive_path: String,
  /// Whether a prune reports the files to re-read and a note saying so.
  pub auto_reconstruct: bool,
  /// The context window in tokens, when the metrics do not give one.
  pub max_tokens: usize,
  /// Percentage of the window a prune brings the request down to.
  pub target_percentage: f64,
  /// Percentage of the window an emergency prune brings the request down to.
  pub emergency_target_percentage: f64,
}

impl Default for PrunerConfig {
  fn default() -> Self {
    PrunerConfig {
      threshold: DEFAULT_THRESHOLD,
      emergency_threshold: DEFAULT_EMERGENCY_THRESHOLD,
      keep_recent_messages: DEFAULT_KEEP_RECENT_MESSAGES,
      archive_path: DEFAULT_ARCHIVE_PATH.to_string(),
      auto_reconstruct: DEFAULT_AUTO_RECONSTRUCT,
      max_tokens: DEFAULT_MAX_TOKENS,
      target_percentage: DEFAULT_TARGET_PERCENTAGE,
      emergency_target_percentage: DEFAULT_EMERGENCY_TARGET_PERCENTAGE,
    }
  }
}

/// Makes the error about configuration key `key` with `detail`.
pub type ConfigError<'a> = &'a dyn Fn(&str, String) -> Error;

/// A configuration value as given, before it is checked: from a JSON file or a JavaScript
/// options object.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
  /// A number (JavaScript's `NaN` and `Infinity` included).
  Number(f64),
  /// A string.
  Text(String),
  /// A boolean.
  Bool(bool),
  /// `null` (in a JSON file; JavaScript's `null` means "not given").
  Null,
  /// Anything else, as an error message names it (`an array`, `an object`, `a function`).
  Other(String),
}

impl ConfigValue {
  /// The value of a JSON value.
  pub fn from_json(value: &Value) -> Self {
    match value {
      Value::Number(n) => ConfigValue::Number(n.as_f64().unwrap_or(f64::NAN)),
      Value::String(s) => ConfigValue::Text(s.clone()),
      Value::Bool(b) => ConfigValue::Bool(*b),
      Value::Null => ConfigValue::Null,
      Value::Array(_) => ConfigValue::Other("an array".into()),
      Value::Object(_) => ConfigValue::Other("an object".into()),
    }
  }

  /// The value as an error message shows it.
  fn got(&self) -> String {
    match self {
      ConfigValue::Number(n) => js_number(*n),
      ConfigValue::Text(s) => Value::String(s.clone()).to_string(),
      ConfigValue::Bool(b) => b.to_string(),
      ConfigValue::Null => "null".into(),
      ConfigValue::Other(what) => what.clone(),
    }
  }
}

impl PrunerConfig {
  /// The configuration keys, as the JSON file and the JavaScript options spell them.
  pub const KEYS: [&'static str; 8] = [
    "threshold",
    "emergencyThreshold",
    "keepRecentMessages",
    "archivePath",
    "autoReconstruct",
    "maxTokens",
    "targetPercentage",
    "emergencyTargetPercentage",
  ];

  /// Builds a configuration from the `(key, value)` entries given, the defaults for the others.
  ///
  /// # Errors
  ///
  /// `error(key, detail)` for the first key (unknown keys first, then in [`PrunerConfig::KEYS`]
  /// order) that is unknown, of the wrong type or out of range, or that contradicts another:
  /// `emergencyThreshold` below `threshold`, `targetPercentage` above `threshold`,
  /// `emergencyTargetPercentage` above `targetPercentage`.
  pub fn from_entries(entries: &[(String, ConfigValue)], error: ConfigError<'_>) -> Result<Self> {
    if let Some((key, _)) = entries.iter().find(|(k, _)| !Self::KEYS.contains(&k.as_str())) {
      return Err(error(
        key,
        format!("is not a setting; the settings are {}", Self::KEYS.join(", ")),
      ));
    }
    let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let d = PrunerConfig::default();
    let percent = |key: &str, default: f64| -> Result<(f64, bool)> {
      match get(key) {
        None => Ok((default, false)),
        Some(ConfigValue::Number(v)) if (0.0..=100.0).contains(v) => Ok((*v, true)),
        Some(v) => Err(error(key, format!("must be a number from 0 to 100, got {}", v.got()))),
      }
    };
    let integer = |key: &str, min: f64, default: usize| -> Result<usize> {
      match get(key) {
        None => Ok(default),
        Some(ConfigValue::Number(v))
          if *v >= min && v.fract() == 0.0 && *v <= 9_007_199_254_740_991.0 =>
        {
          Ok(*v as usize)
        }
        Some(v) => {
          Err(error(key, format!("must be an integer of at least {min}, got {}", v.got())))
        }
      }
    };
    let (threshold, _) = percent("threshold", d.threshold)?;
    let (emergency_threshold, _) = percent("emergencyThreshold", d.emergency_threshold)?;
    let keep_recent_messages = integer("keepRecentMessages", 0.0, d.keep_recent_messages)?;
    let archive_path = match get("archivePath") {
      None => d.archive_path,
      Some(ConfigValue::Text(s)) if !s.trim().is_empty() => s.clone(),
      Some(v) => {
        return Err(error("archivePath", format!("must be a non-empty string, got {}", v.got())))
      }
    };
    let auto_reconstruct = match get("autoReconstruct") {
      None => d.auto_reconstruct,
      Some(ConfigValue::Bool(b)) => *b,
      Some(v) => {
        return Err(error("autoReconstruct", format!("must be a boolean, got {}", v.got())))
      }
    };
    let max_tokens = integer("maxTokens", 1.0, d.max_tokens)?;
    let (target, target_given) = percent("targetPercentage", d.target_percentage)?;
    let (emergency_target, emergency_target_given) =
      percent("emergencyTargetPercentage", d.emergency_target_percentage)?;
    let given = |yes: bool, v: f64| if yes { format!("{v}") } else { format!("{v} (the default)") };
    if emergency_threshold < threshold {
      return Err(error(
        "emergencyThreshold",
        format!("must be at least threshold ({threshold}), got {emergency_threshold}"),
      ));
    }
    if target > threshold {
      return Err(error(
        "targetPercentage",
        format!("must be at most threshold ({threshold}), got {}", given(target_given, target)),
      ));
    }
    if emergency_target > target {
      return Err(error(
        "emergencyTargetPercentage",
        format!(
          "must be at most targetPercentage ({target}), got {}",
          given(emergency_target_given, emergency_target)
        ),
      ));
    }
    Ok(PrunerConfig {
      threshold,
      emergency_threshold,
      keep_recent_messages,
      archive_path,
      auto_reconstruct,
      max_tokens,
      target_percentage: target,
      emergency_target_percentage: emergency_target,
    })
  }

  /// Parses a configuration file's text; `source` names the file in errors.
  ///
  /// # Errors
  ///
  /// An `InvalidConfig` error `<source>: <detail>` when the text is not JSON or not an object,
  /// and `<source>: <key>: <detail>` for a bad key (see [`PrunerConfig::from_entries`]).
  pub fn from_json(text: &str, source: &str) -> Result<Self> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
      Error::new(ErrorKind::InvalidConfig, source, format!("is not valid JSON: {e}"))
    })?;
    let Value::Object(map) = value else {
      return Err(Error::new(
        ErrorKind::InvalidConfig,
        source,
        format!("must be a JSON object, got {}", ConfigValue::from_json(&value).got()),
      ));
    };
    let entries: Vec<(String, ConfigValue)> =
      map.iter().map(|(k, v)| (k.clone(), ConfigValue::from_json(v))).collect();
    Self::from_entries(&entries, &|key, detail| {
      Error::new(ErrorKind::InvalidConfig, format!("{source}: {key}"), detail)
    })
  }

  /// Loads the configuration file at `path`; a missing file gives the defaults.
  ///
  /// # Errors
  ///
  /// An `Io` error when the file exists but cannot be read, an `InvalidConfig` error when it is
  /// not a valid configuration (see [`PrunerConfig::from_json`]).
  pub fn load(path: &Path) -> Result<Self> {
    match archive::read_text(path)? {
      Some(text) => Self::from_json(&text, &path.display().to_string()),
      None => Ok(PrunerConfig::default()),
    }
  }

  /// The path of the archive's JSONL sidecar.
  pub fn sidecar_path(&self) -> String {
    archive::sidecar_path(&self.archive_path)
  }

  /// Whether a request at `percentage`% of the window should be pruned (≥ `threshold`).
  pub fn should_prune(&self, percentage: f64) -> bool {
    percentage >= self.threshold
  }

  /// Whether a request at `percentage`% of the window is an emergency (≥ `emergencyThreshold`).
  pub fn is_emergency(&self, percentage: f64) -> bool {
    percentage >= self.emergency_threshold
  }

  /// The target, in tokens, of a prune of a `window`-token context.
  pub fn target_tokens(&self, window: usize, emergency: bool) -> usize {
    let pct = if emergency { self.emergency_target_percentage } else { self.target_percentage };
    (window as f64 * pct / 100.0).floor() as usize
  }
}

/// Why a prune kept a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeepReason {
  /// A system or developer message.
  System,
  /// Agent instructions.
  AgentInstructions,
  /// The current task.
  CurrentTask,
  /// A tool result about a file modified in the session, or its call.
  ModifiedFile,
  /// One of the last `keep_recent_messages` messages, or in a unit with one.
  Recent,
  /// Kept because the request fit the target without removing it.
  WithinTarget,
}

impl KeepReason {
  /// The reason as the archive and `keptItems` write it.
  pub fn as_str(self) -> &'static str {
    match self {
      KeepReason::System => "system",
      KeepReason::AgentInstructions => "agent instructions",
      KeepReason::CurrentTask => "current task",
      KeepReason::ModifiedFile => "modified file",
      KeepReason::Recent => "recent",
      KeepReason::WithinTarget => "within target",
    }
  }
}

/// A file to read again after a prune.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reread {
  /// The file's path.
  pub path: String,
  /// Whether the session modified it.
  pub modified: bool,
}

/// What a prune decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Pruning {
  /// The decisions: kept units and dropped (archived) units, and an inserted summary.
  pub plan: Plan,
  /// The summary of what was archived, when asked for ([`prune_summarized`]).
  pub summary: Option<Summary>,
  /// Whether the prune used the emergency target.
  pub emergency: bool,
  /// The target in request tokens.
  pub target_tokens: usize,
  /// The request's tokens before.
  pub before_tokens: usize,
  /// The request's tokens after.
  pub after_tokens: usize,
  /// Whether `after_tokens` is still above the target (what is always kept exceeds it).
  pub over_budget: bool,
  /// The kept messages with why, by index.
  pub kept: Vec<(usize, KeepReason)>,
  /// The archived messages, by index.
  pub archived: Vec<usize>,
  /// The files to re-read, most important first: files whose content went to the archive and
  /// is not shown by a kept message (the file's last operation being a kept read or write).
  /// Modified files first, then the most recently accessed; deleted files are left out.
  pub reconstruction: Vec<Reread>,
}

impl Pruning {
  /// The reduction in percent, to one decimal (0 for an empty request).
  pub fn reduction(&self) -> f64 {
    if self.before_tokens == 0 {
      return 0.0;
    }
    let saved = self.before_tokens.saturating_sub(self.after_tokens) as f64;
    (saved * 1000.0 / self.before_tokens as f64).round() / 10.0
  }
}

/// Prunes `conv`, a request for a `window`-token context, to the configuration's target (the
/// emergency one when `emergency`); see the module docs.
pub fn prune(
  conv: &Conversation<'_>,
  config: &PrunerConfig,
  window: usize,
  emergency: bool,
) -> Pruning {
  prune_summarized(conv, config, window, emergency, None)
}

/// [`prune`], with a summary of what is archived when `summary` is given (see
/// [`crate::strategy::summarized`]): returned in [`Pruning::summary`], written to the
/// markdown archive's "Conversation Summary", and inserted into the messages if the options
/// say so (its tokens then count towards the target).
pub fn prune_summarized(
  conv: &Conversation<'_>,
  config: &PrunerConfig,
  window: usize,
  emergency: bool,
  summary: Option<&SummaryOptions>,
) -> Pruning {
  let target = config.target_tokens(window, emergency);
  let n = conv.len();
  let recent_from = n.saturating_sub(config.keep_recent_messages);
  let mut keep = vec![false; conv.units().len()];
  for i in recent_from..n {
    keep[conv.unit_of(i)] = true;
  }
  let run = |t: usize| {
    let options = PriorityOptions { target_tokens: t, ..PriorityOptions::default() };
    trim_by_priority_keeping(conv, None, &options, &keep, Removal::Archive)
  };
  let (trim, summary) = match summary {
    Some(options) => trim_with_summary(conv, target, options, run),
    None => (run(target), None),
  };
  let plan = trim.outcome.plan;
  let mut kept = Vec::new();
  let mut archived = Vec::new();
  for i in 0..n {
    if plan.is_dropped(i) {
      archived.push(i);
      continue;
    }
    let priority = trim.classification.get(i).map(|c| c.priority);
    let reason = match priority {
      Some(ContentPriority::System) => KeepReason::System,
      Some(ContentPriority::AgentInstructions) => KeepReason::AgentInstructions,
      Some(ContentPriority::CurrentTask) => KeepReason::CurrentTask,
      Some(ContentPriority::ModifiedFiles) => KeepReason::ModifiedFile,
      _ if keep[conv.unit_of(i)] => KeepReason::Recent,
      _ => KeepReason::WithinTarget,
    };
    kept.push((i, reason));
  }
  let reconstruction = reconstruction(conv, &plan);
  Pruning {
    summary,
    emergency,
    target_tokens: target,
    before_tokens: conv.total_tokens(),
    after_tokens: trim.outcome.total_tokens,
    over_budget: trim.outcome.over_budget,
    kept,
    archived,
    reconstruction,
    plan,
  }
}

/// The files to re-read after `plan` (see [`Pruning::reconstruction`]).
fn reconstruction(conv: &Conversation<'_>, plan: &Plan) -> Vec<Reread> {
  let ops = numbered_file_operations(conv);
  let tracker = FileTracker::from_operations(conv, &ops, 0.0);
  let mut archived: BTreeSet<&str> = BTreeSet::new();
  // The last successful operation on each path.
  let mut last: BTreeMap<&str, (usize, FileOpKind)> = BTreeMap::new();
  for (i, op, _) in ops.each() {
    if op.failed {
      continue;
    }
    if plan.is_dropped(i) {
      archived.insert(&op.path);
    }
    last.insert(&op.path, (i, op.kind));
  }
  let mut files: Vec<(bool, usize, &str)> = archived
    .into_iter()
    .filter(|path| match last.get(path) {
      Some(&(_, FileOpKind::Delete)) => false,
      Some(&(i, kind)) => plan.is_dropped(i) || kind == FileOpKind::Edit,
      None => false,
    })
    .map(|path| {
      let step = tracker.get(path).map_or(0, |r| r.last_access_step);
      (tracker.was_modified(path), step, path)
    })
    .collect();
  files.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));
  files.into_iter().map(|(modified, _, path)| Reread { path: path.to_string(), modified }).collect()
}

/// One line about message `i`: `messages[i] <what> (<tokens> tokens[, <note>])[: <preview>]`;
/// a tool result about files (`ops`, one per result about a file) says `[failed ]<kind> of
/// <path>` for each, without a preview.
pub fn describe(conv: &Conversation<'_>, i: usize, ops: &[&FileOp], note: Option<&str>) -> String {
  let m = conv.message(i);
  let note = note.map(|n| format!(", {n}")).unwrap_or_default();
  let tokens = format!("({} tokens{note})", thousands(conv.tokens(i)));
  let text = m.content_text();
  let (what, body) = match ops {
    [_, ..] if m.is_tool_result() => {
      let what: Vec<String> = ops
        .iter()
        .map(|op| {
          let failed = if op.failed { "failed " } else { "" };
          format!("{failed}{} of {}", op.kind.as_str(), op.path)
        })
        .collect();
      return format!("messages[{i}] {} {tokens}", what.join(", "));
    }
    _ if m.is_tool_result() => {
      (format!("output of {}", conv.tool_name(i).unwrap_or("a tool")), preview(&text))
    }
    _ if m.has_tool_calls() => {
      let names: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
      let body = match preview(&text) {
        p if p.is_empty() => {
          m.tool_calls.first().map(|c| preview(&c.arguments)).unwrap_or_default()
        }
        p => p,
      };
      (format!("{} calling {}", m.role.as_str(), names.join(", ")), body)
    }
    _ => (m.role.as_str().to_string(), preview(&text)),
  };
  if body.is_empty() {
    format!("messages[{i}] {what} {tokens}")
  } else {
    format!("messages[{i}] {what} {tokens}: {body}")
  }
}

/// The first [`PREVIEW_CHARS`] characters of `text` on one line (whitespace runs collapsed),
/// with `…` when cut.
fn preview(text: &str) -> String {
  let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
  match line.char_indices().nth(PREVIEW_CHARS) {
    Some((at, _)) => format!("{}…", &line[..at]),
    None => line,
  }
}

/// `n` with thousands separators (`28,450`).
pub fn thousands(n: usize) -> String {
  let digits = n.to_string();
  let mut out = String::with_capacity(digits.len() + digits.len() / 3);
  for (k, c) in digits.chars().enumerate() {
    if k > 0 && (digits.len() - k).is_multiple_of(3) {
      out.push(',');
    }
    out.push(c);
  }
  out
}

/// The descriptions of the archived messages (the seed's `archivedItems`).
pub fn archived_items(conv: &Conversation<'_>, pruning: &Pruning) -> Vec<String> {
  let ops = numbered_file_operations(conv);
  pruning.archived.iter().map(|&i| describe(conv, i, &file_ops_of(&ops, i), None)).collect()
}

/// The operations of message `i`, for [`describe`].
fn file_ops_of(ops: &FileOperations, i: usize) -> Vec<&FileOp> {
  ops.of_message(i).into_iter().map(|(op, _)| op).collect()
}

/// The descriptions of the kept messages with why they were kept (the seed's `keptItems`).
pub fn kept_items(conv: &Conversation<'_>, pruning: &Pruning) -> Vec<String> {
  let ops = numbered_file_operations(conv);
  pruning
    .kept
    .iter()
    .map(|&(i, why)| {
      describe(conv, i, &file_ops_of(&ops, i), Some(&format!("kept: {}", why.as_str())))
    })
    .collect()
}

/// The note telling the agent what to re-read, when `autoReconstruct` is on.
pub fn reconstruction_note(pruning: &Pruning, archive_path: &str) -> String {
  let mut note = format!(
    "[Context pruned: {} earlier messages were archived to {archive_path}.",
    pruning.archived.len()
  );
  if pruning.reconstruction.is_empty() {
    note.push_str(" No file needs to be read again.]");
  } else {
    note.push_str(" Read these files again before relying on their content: ");
    let files: Vec<String> = pruning
      .reconstruction
      .iter()
      .map(|r| if r.modified { format!("{} (modified)", r.path) } else { r.path.clone() })
      .collect();
    note.push_str(&files.join(", "));
    note.push_str(".]");
  }
  note
}

/// What an archive section is stamped with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp<'a> {
  /// When the prune ran (ISO 8601).
  pub timestamp: &'a str,
  /// The prune's number in the archive.
  pub prune: u64,
  /// The context window the target was computed from.
  pub window: usize,
  /// The sidecar's path.
  pub data_path: &'a str,
}

/// The markdown section of one prune, in the seed's archive format: `# Context Archive -
/// <timestamp>`, `## Session Metrics`, `## Archived Items` grouped into `### Tool Outputs` (a
/// `####` per tool), `### File Reads`, `### File Changes` and `### Conversation`, and `##
/// Reconstruction Priority`.
pub fn archive_markdown(
  conv: &Conversation<'_>,
  pruning: &Pruning,
  config: &PrunerConfig,
  stamp: &Stamp<'_>,
) -> String {
  let ops = numbered_file_operations(conv);
  let pct =
    if pruning.emergency { config.emergency_target_percentage } else { config.target_percentage };
  let mut md = format!("# Context Archive - {}\n\n## Session Metrics\n", stamp.timestamp);
  md.push_str(&format!("- Before Prune: {} tokens\n", thousands(pruning.before_tokens)));
  md.push_str(&format!("- After Prune: {} tokens\n", thousands(pruning.after_tokens)));
  md.push_str(&format!("- Archived Items: {}\n", pruning.archived.len()));
  md.push_str(&format!("- Kept Items: {}\n", pruning.kept.len()));
  md.push_str(&format!("- Reduction: {}%\n", pruning.reduction()));
  md.push_str(&format!(
    "- Target: {} tokens ({pct}% of {}{})\n",
    thousands(pruning.target_tokens),
    thousands(stamp.window),
    if pruning.emergency { ", emergency" } else { "" }
  ));
  md.push_str(&format!("- Prune: {} (messages in {})\n", stamp.prune, stamp.data_path));
  let mut outputs: BTreeMap<&str, Vec<String>> = BTreeMap::new();
  let (mut reads, mut changes, mut talk) = (Vec::new(), Vec::new(), Vec::new());
  for &i in &pruning.archived {
    let m = conv.message(i);
    let at = format!("messages[{i}] (step {}, {} tokens)", conv.step(i), thousands(conv.tokens(i)));
    if !m.is_tool_result() {
      talk.push(format!("- {}", describe(conv, i, &[], None)));
      continue;
    }
    // Each result: a file it read or changed, else its tool's output. A message of several
    // results (parallel calls) lists each of them.
    let several = m.several_results();
    let results: Vec<(Option<usize>, Option<&str>, std::borrow::Cow<'_, str>)> =
      match several.is_empty() {
        true => vec![(None, conv.tool_name(i), m.content_text())],
        false => several
          .iter()
          .map(|r| {
            let tool = conv
              .result_call(i, r.call_id)
              .map(|(caller, c)| conv.message(caller).tool_calls[c].name.as_str());
            (Some(r.part), tool, r.text.into())
          })
          .collect(),
      };
    let files = ops.of_message(i);
    for (part, tool, text) in results {
      match files.iter().map(|(op, _)| *op).find(|op| op.part == part && !op.failed) {
        Some(op) if op.kind == FileOpKind::Read => reads.push(format!("- {}: {at}", op.path)),
        Some(op) => changes.push(format!("- {}: {} at {at}", op.path, op.kind.as_str())),
        None => {
          let line = match preview(&text) {
            p if p.is_empty() => format!("- {at}"),
            p => format!("- {at}: {p}"),
          };
          outputs.entry(tool.unwrap_or("unknown tool")).or_default().push(line);
        }
      }
    }
  }
  md.push_str("\n## Archived Items\n");
  if !outputs.is_empty() {
    md.push_str("\n### Tool Outputs\n");
    for (tool, lines) in &outputs {
      md.push_str(&format!("\n#### {tool}\n{}\n", lines.join("\n")));
    }
  }
  for (title, lines) in
    [("File Reads", &reads), ("File Changes", &changes), ("Conversation", &talk)]
  {
    if !lines.is_empty() {
      md.push_str(&format!("\n### {title}\n{}\n", lines.join("\n")));
    }
  }
  if let Some(summary) = &pruning.summary {
    md.push_str(&format!("\n### Conversation Summary\n\n{}\n", summary.text));
  }
  md.push_str("\n## Reconstruction Priority\n\n");
  if pruning.reconstruction.is_empty() {
    md.push_str("Nothing to re-read: every archived file is shown by a kept message.\n");
  } else {
    for (k, r) in pruning.reconstruction.iter().enumerate() {
      let modified = if r.modified { " (modified in this session)" } else { "" };
      md.push_str(&format!("{}. Read: {}{modified}\n", k + 1, r.path));
    }
  }
  md.push_str(&format!(
    "\nOptional: Read this archive for conversation history; the archived messages are in {} (prune {}).\n",
    stamp.data_path, stamp.prune
  ));
  md
}

/// Where a prune was archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveWrite {
  /// The prune's number in the archive (1 + the highest number in the sidecar).
  pub prune: u64,
}

/// Appends one prune to the archive of `config`: `messages` (index, the caller's JSON text of
/// the archived message) to the sidecar, then the markdown section `markdown(prune number)` to
/// the markdown archive, each in one write under the sidecar's lock (see [`crate::strategy::archive`]).
/// The prune number is 1 + that of the sidecar's last record.
///
/// # Errors
///
/// An `Io` error naming the file that could not be read, locked or written, or whose last line
/// is not an archive record.
pub fn write_archive(
  config: &PrunerConfig,
  timestamp: &str,
  messages: &[(usize, String)],
  markdown: impl FnOnce(u64) -> String,
) -> Result<ArchiveWrite> {
  let data_path = config.sidecar_path();
  let data = Path::new(&data_path);
  let mut sidecar = archive::Appender::open(data)?;
  let (last, ends_with_newline) = last_prune(&mut sidecar, data)?;
  let prune = last + 1;
  let mut lines = String::new();
  if !ends_with_newline {
    lines.push('\n');
  }
  for (index, json) in messages {
    lines.push_str(&archive::record_line(prune, timestamp, *index, json));
  }
  sidecar.append(&lines)?;
  let md_path = Path::new(&config.archive_path);
  let mut md = archive::Appender::open(md_path)?;
  let section = format!("{}{}", md.section_separator()?, markdown(prune));
  md.append(&section)?;
  Ok(ArchiveWrite { prune })
}

/// The prune number of the sidecar's last record (0 when it has none), and whether the file
/// ends with a newline (an empty file does). A torn last line (no newline, not a record: a
/// write cut short by a crash) is cut off; a blank last line sends the search through the
/// whole file.
fn last_prune(sidecar: &mut archive::Appender<'_>, path: &Path) -> Result<(u64, bool)> {
  loop {
    let ends_with_newline = sidecar.ends_with_newline()?;
    let Some(line) = sidecar.last_line()? else { return Ok((0, true)) };
    if line.iter().all(u8::is_ascii_whitespace) {
      let max = archive::read_records(path)?.iter().map(|r| r.prune).max().unwrap_or(0);
      return Ok((max, ends_with_newline));
    }
    let parsed = std::str::from_utf8(&line)
      .map_err(|_| "not UTF-8".to_string())
      .and_then(archive::parse_record);
    match parsed {
      Ok(record) => return Ok((record.prune, ends_with_newline)),
      Err(_) if !ends_with_newline => sidecar.truncate_tail(line.len() as u64)?,
      Err(detail) => {
        let detail = format!(
          "its last line is not an archive record ({detail}): fix or remove that line, or give the pruner another archivePath"
        );
        return Err(Error::new(ErrorKind::Io, path.display().to_string(), detail));
      }
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::testing::{call, result, user};

  fn config_error(text: &str) -> String {
    PrunerConfig::from_json(text, "context-pruner.config.json").unwrap_err().to_string()
  }

  #[test]
  fn the_seed_configuration_is_the_default() {
    let seed = r#"{"threshold": 80, "emergencyThreshold": 90, "keepRecentMessages": 10,
      "archivePath": "context-archive.md", "autoReconstruct": true}"#;
    assert_eq!(PrunerConfig::from_json(seed, "f").unwrap(), PrunerConfig::default());
    assert_eq!(PrunerConfig::from_json("{}", "f").unwrap(), PrunerConfig::default());
    let c = PrunerConfig::from_json(
      r#"{"threshold": 70.5, "maxTokens": 1000, "targetPercentage": 40, "emergencyTargetPercentage": 0, "autoReconstruct": false, "archivePath": "a/b.md"}"#,
      "f",
    )
    .unwrap();
    assert_eq!((c.threshold, c.max_tokens, c.target_percentage), (70.5, 1000, 40.0));
    assert_eq!((c.auto_reconstruct, c.sidecar_path()), (false, "a/b.jsonl".to_string()));
    assert_eq!(c.target_tokens(1000, false), 400);
    assert_eq!(c.target_tokens(1000, true), 0);
    assert!(c.should_prune(70.5) && !c.should_prune(70.4));
    assert!(c.is_emergency(90.0) && !c.is_emergency(89.9));
  }

  #[test]
  fn each_bad_key_is_named() {
    let f = "context-pruner.config.json";
    for (text, message) in [
      ("{", format!("{f}: is not valid JSON: EOF while parsing an object at line 1 column 1")),
      ("[]", format!("{f}: must be a JSON object, got an array")),
      (r#"{"threshold": 120}"#, format!("{f}: threshold: must be a number from 0 to 100, got 120")),
      (r#"{"threshold": "80"}"#, format!("{f}: threshold: must be a number from 0 to 100, got \"80\"")),
      (r#"{"emergencyThreshold": -1}"#, format!("{f}: emergencyThreshold: must be a number from 0 to 100, got -1")),
      (r#"{"emergencyThreshold": 70}"#, format!("{f}: emergencyThreshold: must be at least threshold (80), got 70")),
      (r#"{"keepRecentMessages": 2.5}"#, format!("{f}: keepRecentMessages: must be an integer of at least 0, got 2.5")),
      (r#"{"keepRecentMessages": null}"#, format!("{f}: keepRecentMessages: must be an integer of at least 0, got null")),
      (r#"{"archivePath": ""}"#, format!("{f}: archivePath: must be a non-empty string, got \"\"")),
      (r#"{"archivePath": 3}"#, format!("{f}: archivePath: must be a non-empty string, got 3")),
      (r#"{"autoReconstruct": "yes"}"#, format!("{f}: autoReconstruct: must be a boolean, got \"yes\"")),
      (r#"{"maxTokens": 0}"#, format!("{f}: maxTokens: must be an integer of at least 1, got 0")),
      (r#"{"targetPercentage": {}}"#, format!("{f}: targetPercentage: must be a number from 0 to 100, got an object")),
      (r#"{"threshold": 40}"#, format!("{f}: targetPercentage: must be at most threshold (40), got 50 (the default)")),
      (r#"{"targetPercentage": 85}"#, format!("{f}: targetPercentage: must be at most threshold (80), got 85")),
      (r#"{"targetPercentage": 20}"#, format!("{f}: emergencyTargetPercentage: must be at most targetPercentage (20), got 30 (the default)")),
      (r#"{"emergencyTargetPercentage": 60}"#, format!("{f}: emergencyTargetPercentage: must be at most targetPercentage (50), got 60")),
      (r#"{"treshold": 80}"#, format!("{f}: treshold: is not a setting; the settings are threshold, emergencyThreshold, keepRecentMessages, archivePath, autoReconstruct, maxTokens, targetPercentage, emergencyTargetPercentage")),
    ] {
      assert_eq!(config_error(text), message);
    }
    let e = PrunerConfig::from_json("{", f).unwrap_err();
    assert_eq!(e.code(), "INVALID_CONFIG");
    assert!(!e.is_type_error());
  }

  #[test]
  fn a_missing_file_gives_the_defaults() {
    let missing = std::env::temp_dir().join("context-trim-no-such-dir/context-pruner.config.json");
    assert_eq!(PrunerConfig::load(&missing).unwrap(), PrunerConfig::default());
  }

  /// A session: system, task, then `steps` exchanges of a big read each, then a final answer.
  fn session(steps: usize) -> Vec<Message> {
    let mut msgs =
      vec![Message::text(Role::System, "You are a coding agent."), user("Fix the bug")];
    for k in 0..steps {
      let id = format!("c{k}");
      msgs.push(call(&id, "read_file", &format!(r#"{{"path":"/w/f{k}.rs"}}"#)));
      msgs.push(result(&id, &format!("fn f{k}() {{}}\n").repeat(50)));
    }
    msgs.push(Message::text(Role::Assistant, "Done."));
    msgs
  }

  #[test]
  fn prune_keeps_instructions_task_and_recent_units_and_archives_the_rest() {
    let msgs = session(6);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = PrunerConfig { keep_recent_messages: 4, ..Default::default() };
    // A window so small that the target is 0: everything droppable goes.
    let p = prune(&conv, &config, 10, false);
    // Last 4 messages: 11, 12, 13, 14 → units [11, 12], [13] … message 10 is the call of 11.
    assert_eq!(p.archived, (2..=9).collect::<Vec<_>>());
    let reasons: Vec<(usize, &str)> = p.kept.iter().map(|&(i, r)| (i, r.as_str())).collect();
    assert_eq!(
      reasons,
      vec![
        (0, "system"),
        (1, "current task"),
        (10, "recent"),
        (11, "recent"),
        (12, "recent"),
        (13, "recent"),
        (14, "recent")
      ]
    );
    assert!(p.over_budget && p.plan.check_units(&conv).is_ok());
    assert_eq!(p.after_tokens, p.plan.total_tokens(&conv));
    assert_eq!(p.before_tokens, conv.total_tokens());
    // The archived reads are files to re-read, most recently accessed first.
    let paths: Vec<&str> = p.reconstruction.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, vec!["/w/f3.rs", "/w/f2.rs", "/w/f1.rs", "/w/f0.rs"]);
    // A large window: the target is met after the two oldest units.
    let window = (conv.total_tokens() - conv.tokens(2) - conv.tokens(3) - conv.tokens(4)) * 2;
    let p = prune(&conv, &config, window, false);
    assert_eq!(p.archived, vec![2, 3, 4, 5]);
    assert!(!p.over_budget && p.after_tokens <= p.target_tokens);
    assert_eq!(p.kept.iter().filter(|k| k.1 == KeepReason::WithinTarget).count(), 4);
    // The emergency target is lower: more goes.
    let e = prune(&conv, &config, window, true);
    assert!(
      e.emergency && e.target_tokens < p.target_tokens && e.archived.len() > p.archived.len()
    );
    assert_eq!(e.reduction(), {
      let saved = (e.before_tokens - e.after_tokens) as f64;
      (saved * 1000.0 / e.before_tokens as f64).round() / 10.0
    });
  }

  #[test]
  fn files_shown_again_by_a_kept_message_are_not_re_read() {
    let msgs = vec![
      user("task"),
      call("1", "read_file", r#"{"path":"/a"}"#),
      result("1", &"a\n".repeat(300)),
      call("2", "read_file", r#"{"path":"/b"}"#),
      result("2", &"b\n".repeat(300)),
      call("3", "read_file", r#"{"path":"/d"}"#),
      result("3", &"d\n".repeat(300)),
      call("4", "read_file", r#"{"path":"/a"}"#),
      result("4", "a\n"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = PrunerConfig { keep_recent_messages: 2, ..Default::default() };
    let p = prune(&conv, &config, 10, false);
    assert_eq!(p.archived, vec![1, 2, 3, 4, 5, 6]);
    // /a is read again in a kept message; /d was accessed last.
    let reread = |path: &str| Reread { path: path.into(), modified: false };
    assert_eq!(p.reconstruction, vec![reread("/d"), reread("/b")]);
    assert_eq!(
      reconstruction_note(&p, "context-archive.md"),
      "[Context pruned: 6 earlier messages were archived to context-archive.md. Read these files again before relying on their content: /d, /b.]"
    );
  }

  #[test]
  fn modified_files_come_first_and_deleted_or_rewritten_files_are_left_out() {
    // The priority trimmer keeps results about modified files, so this plan is made by hand.
    let msgs = vec![
      user("task"),
      call("1", "read_file", r#"{"path":"/c"}"#),
      result("1", "c"),
      call("2", "edit_file", r#"{"path":"/c"}"#),
      result("2", "edited"),
      call("3", "read_file", r#"{"path":"/b"}"#),
      result("3", "b"),
      call("4", "delete_file", r#"{"path":"/b"}"#),
      result("4", "deleted"),
      call("5", "read_file", r#"{"path":"/e"}"#),
      result("5", "e"),
      call("6", "write_file", r#"{"path":"/e"}"#),
      result("6", "written"),
      call("7", "read_file", r#"{"path":"/f"}"#),
      result("7", "f"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut plan = Plan::keep_all(msgs.len());
    for i in [1, 5, 9, 13] {
      plan.drop_unit(&conv, conv.unit_of(i));
    }
    // /c: its last operation, an edit, shows no content; /b: deleted; /e: rewritten in a kept
    // message; /f: unmodified, accessed last, after the modified /c.
    assert_eq!(
      reconstruction(&conv, &plan),
      vec![
        Reread { path: "/c".into(), modified: true },
        Reread { path: "/f".into(), modified: false }
      ]
    );
    let none = Pruning {
      summary: None,
      plan,
      emergency: false,
      target_tokens: 0,
      before_tokens: 0,
      after_tokens: 0,
      over_budget: false,
      kept: vec![],
      archived: vec![],
      reconstruction: vec![],
    };
    assert_eq!(none.reduction(), 0.0);
    assert_eq!(
      reconstruction_note(&none, "a.md"),
      "[Context pruned: 0 earlier messages were archived to a.md. No file needs to be read again.]"
    );
  }

  #[test]
  fn descriptions_and_markdown() {
    let msgs = vec![
      Message::text(Role::System, "sys"),
      user("Fix   the\nbug please"),
      call("1", "execute_bash", r#"{"command":"ls"}"#),
      result("1", "a b c"),
      call("2", "read_file", r#"{"path":"/w/a.rs"}"#),
      result("2", "fn a() {}"),
      call("3", "edit_file", r#"{"path":"/w/a.rs"}"#),
      result("3", "ERROR: no match"),
      Message::text(Role::Assistant, "x".repeat(100)),
      user("next"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let ops = numbered_file_operations(&conv);
    let d = |i: usize| describe(&conv, i, &file_ops_of(&ops, i), None);
    let t = |i: usize| conv.tokens(i);
    assert_eq!(d(1), format!("messages[1] user ({} tokens): Fix the bug please", t(1)));
    assert_eq!(
      d(2),
      format!(
        "messages[2] assistant calling execute_bash ({} tokens): {{\"command\":\"ls\"}}",
        t(2)
      )
    );
    assert_eq!(d(3), format!("messages[3] output of execute_bash ({} tokens): a b c", t(3)));
    assert_eq!(d(5), format!("messages[5] read of /w/a.rs ({} tokens)", t(5)));
    assert_eq!(d(7), format!("messages[7] failed edit of /w/a.rs ({} tokens)", t(7)));
    assert_eq!(d(8), format!("messages[8] assistant ({} tokens): {}…", t(8), "x".repeat(80)));
    assert_eq!(
      describe(&conv, 0, &[], Some("kept: system")),
      format!("messages[0] system ({} tokens, kept: system): sys", t(0))
    );
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(28450), "28,450");
    assert_eq!(thousands(1234567), "1,234,567");
    let config = PrunerConfig { keep_recent_messages: 1, ..Default::default() };
    let p = prune(&conv, &config, 10, true);
    assert_eq!(p.archived, vec![1, 2, 3, 4, 5, 6, 7, 8]);
    let stamp = Stamp {
      timestamp: "2026-02-12T14:30:00.000Z",
      prune: 2,
      window: 10,
      data_path: "context-archive.jsonl",
    };
    let md = archive_markdown(&conv, &p, &config, &stamp);
    let expected = format!(
      "# Context Archive - 2026-02-12T14:30:00.000Z

## Session Metrics
- Before Prune: {before} tokens
- After Prune: {after} tokens
- Archived Items: 8
- Kept Items: 2
- Reduction: {reduction}%
- Target: 3 tokens (30% of 10, emergency)
- Prune: 2 (messages in context-archive.jsonl)

## Archived Items

### Tool Outputs

#### edit_file
- messages[7] (step 3, {t7} tokens): ERROR: no match

#### execute_bash
- messages[3] (step 1, {t3} tokens): a b c

### File Reads
- /w/a.rs: messages[5] (step 2, {t5} tokens)

### Conversation
- messages[1] user ({t1} tokens): Fix the bug please
- messages[2] assistant calling execute_bash ({t2} tokens): {{\"command\":\"ls\"}}
- messages[4] assistant calling read_file ({t4} tokens): {{\"path\":\"/w/a.rs\"}}
- messages[6] assistant calling edit_file ({t6} tokens): {{\"path\":\"/w/a.rs\"}}
- messages[8] assistant ({t8} tokens): {x80}…

## Reconstruction Priority

1. Read: /w/a.rs

Optional: Read this archive for conversation history; the archived messages are in context-archive.jsonl (prune 2).
",
      before = p.before_tokens,
      after = p.after_tokens,
      reduction = p.reduction(),
      t1 = t(1), t2 = t(2), t3 = t(3), t4 = t(4), t5 = t(5), t6 = t(6), t7 = t(7), t8 = t(8),
      x80 = "x".repeat(80),
    );
    assert_eq!(md, expected);
  }

  #[test]
  fn archives_append_with_increasing_prune_numbers() {
    let dir = std::env::temp_dir().join(format!("context-trim-pruner-{}", std::process::id()));
    let config = PrunerConfig {
      archive_path: dir.join("archive.md").display().to_string(),
      ..Default::default()
    };
    let first =
      write_archive(&config, "t1", &[(3, "{\"a\":1}".into())], |n| format!("# one {n}\n")).unwrap();
    let second = write_archive(&config, "t2", &[(0, "{\"b\":2}".into()), (5, "[]".into())], |n| {
      format!("# two {n}\n")
    })
    .unwrap();
    assert_eq!((first.prune, second.prune), (1, 2));
    let md = std::fs::read_to_string(&config.archive_path).unwrap();
    assert_eq!(md, "# one 1\n\n# two 2\n");
    let records = archive::read_records(Path::new(&config.sidecar_path())).unwrap();
    let got: Vec<(u64, &str, usize, &str)> =
      records.iter().map(|r| (r.prune, r.timestamp.as_str(), r.index, r.json.as_str())).collect();
    assert_eq!(got, vec![(1, "t1", 3, "{\"a\":1}"), (2, "t2", 0, "{\"b\":2}"), (2, "t2", 5, "[]")]);
    std::fs::remove_dir_all(&dir).unwrap();
  }

  fn scratch_config(name: &str) -> (std::path::PathBuf, PrunerConfig) {
    let dir =
      std::env::temp_dir().join(format!("context-trim-pruner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = PrunerConfig {
      archive_path: dir.join("archive.md").display().to_string(),
      ..Default::default()
    };
    (dir, config)
  }

  #[test]
  fn a_torn_last_line_is_cut_off_and_a_bad_complete_one_is_an_error() {
    let (dir, config) = scratch_config("torn");
    let sidecar = config.sidecar_path();
    write_archive(&config, "t1", &[(0, "{\"a\":1}".into())], |n| format!("# {n}\n")).unwrap();
    // A crash in the middle of the second append: half a line, cut inside a multi-byte char.
    let full = std::fs::read(&sidecar).unwrap();
    let mut torn = full.clone();
    torn.extend_from_slice(
      &"{\"prune\":2,\"timestamp\":\"t2\",\"index\":0,\"message\":\"é".as_bytes()[..50],
    );
    std::fs::write(&sidecar, &torn).unwrap();
    let next = write_archive(&config, "t3", &[(4, "[]".into())], |n| format!("# {n}\n")).unwrap();
    assert_eq!(next.prune, 2);
    let records = archive::read_records(Path::new(&sidecar)).unwrap();
    let got: Vec<(u64, usize)> = records.iter().map(|r| (r.prune, r.index)).collect();
    assert_eq!(got, vec![(1, 0), (2, 4)]);
    // A complete record without its newline is kept, and continued on a new line.
    let text = std::fs::read_to_string(&sidecar).unwrap();
    std::fs::write(&sidecar, text.trim_end()).unwrap();
    assert_eq!(
      write_archive(&config, "t4", &[(1, "1".into())], |_| String::new()).unwrap().prune,
      3
    );
    assert_eq!(archive::read_records(Path::new(&sidecar)).unwrap().len(), 3);
    // A complete last line that is not a record is the user's: an error, nothing written.
    std::fs::write(&sidecar, format!("{text}not a record\n")).unwrap();
    let err = write_archive(&config, "t5", &[(1, "1".into())], |_| String::new()).unwrap_err();
    assert!(err.to_string().contains("its last line is not an archive record"), "{err}");
    assert_eq!(std::fs::read_to_string(&sidecar).unwrap(), format!("{text}not a record\n"));
    std::fs::remove_dir_all(&dir).unwrap();
  }

  #[test]
  fn concurrent_writers_number_their_prunes_one_after_the_other() {
    let (dir, config) = scratch_config("concurrent");
    let threads: Vec<_> = (0..8)
      .map(|t| {
        let config = config.clone();
        std::thread::spawn(move || {
          (0..10)
            .map(|i| {
              let messages = vec![(t, format!("{{\"thread\":{t},\"i\":{i}}}")), (99, "[]".into())];
              write_archive(&config, "t", &messages, |n| format!("# prune {n}\n")).unwrap().prune
            })
            .collect::<Vec<u64>>()
        })
      })
      .collect();
    let mut numbers: Vec<u64> = threads.into_iter().flat_map(|h| h.join().unwrap()).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=80).collect::<Vec<u64>>());
    let records = archive::read_records(Path::new(&config.sidecar_path())).unwrap();
    assert_eq!(records.len(), 160);
    // Each prune's two records are adjacent, and the markdown has every section once.
    for pair in records.chunks(2) {
      assert_eq!((pair[0].prune, pair[1].index), (pair[1].prune, 99));
    }
    let md = std::fs::read_to_string(&config.archive_path).unwrap();
    let sections: Vec<&str> = md.split("\n\n").map(str::trim_end).collect();
    let expected: Vec<String> = (1..=80).map(|n| format!("# prune {n}")).collect();
    assert_eq!(sections, expected);
    std::fs::remove_dir_all(&dir).unwrap();
  }

  /// Parallel calls answered in one message: every file its results read or changed is to be
  /// re-read (not only the first result's), a failed read is not, and the archive lists each.
  #[test]
  fn every_file_of_a_message_of_several_results_is_reconstructed() {
    let msgs = crate::testing::parallel_results();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = PrunerConfig { keep_recent_messages: 1, ..Default::default() };
    let p = prune(&conv, &config, 10, false);
    // The edit of src/c.ts is kept (a modified file), with the read beside it.
    assert_eq!(p.archived, vec![1, 2, 5, 6]);
    let paths: Vec<(&str, bool)> =
      p.reconstruction.iter().map(|r| (r.path.as_str(), r.modified)).collect();
    assert_eq!(paths, [("src/d.ts", false), ("src/a.ts", false)]);
    let items = archived_items(&conv, &p);
    assert!(
      items[1].starts_with("messages[2] read of src/a.ts, failed read of src/b.ts ("),
      "{}",
      items[1]
    );
    let stamp = Stamp { timestamp: "t", prune: 1, window: 10, data_path: "d.json" };
    let md = archive_markdown(&conv, &p, &config, &stamp);
    assert!(
      md.contains("- src/a.ts: messages[2]") && md.contains("- src/d.ts: messages[6]"),
      "{md}"
    );
    assert!(!md.contains("src/b.ts: messages[2]") && !md.contains("src/x.ts"), "{md}");
    // The failed read and the test run beside the reads are tool outputs of their own tools.
    assert!(md.contains("#### bash\n- messages[6] (step 3, "), "{md}");
    assert!(md.contains("#### read_file\n- messages[2] (step 1, "), "{md}");
    assert!(md.contains("ENOENT") && md.contains("1 passing"), "{md}");
  }
}
