//! Priorities as JavaScript sees them ({@link ContentPriority}, {@link FileOperation}) and lists
//! of {@link ClassifiedMessage}s, built by one JavaScript call from columns of numbers: shared by
//! `classifyMessages` and the trimming results that return a classification.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::analysis::classify::ContentPriority as Priority;
use crate::analysis::file_ops::FileOpKind;

use super::saturate;

/// How much a message matters; higher values are kept longer. The system prompt is never
/// dropped; the three tiers below it and `MODIFIED_FILES` are dropped only when nothing lower
/// is left (see docs/priority-trimming.md).
#[napi]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)] // the seed's names: `ContentPriority.SYSTEM === 100` in JS
pub enum ContentPriority {
  /// The system prompt (and `developer` messages). Never dropped.
  SYSTEM = 100,
  /// AGENTS.md-style instructions. Dropped last.
  AGENT_INSTRUCTIONS = 90,
  /// The user message that opened the current turn. Dropped only after every lower tier.
  CURRENT_TASK = 80,
  /// The latest tool results about files modified in this session, with their calls (a
  /// result a newer read of the file supersedes is stale). Dropped only after every lower
  /// tier.
  MODIFIED_FILES = 70,
  /// The most recent turns and tool results.
  RECENT_TURNS = 60,
  /// Recent reads of files that were not modified.
  RECENT_FILE_READS = 50,
  /// Older turns.
  OLD_HISTORY = 40,
  /// Older tool results, with their calls: easily re-run.
  STALE_TOOL_OUTPUTS = 30,
  /// Messages flagged as summaries: already compressed.
  SUMMARIZED = 20,
}

impl From<Priority> for ContentPriority {
  fn from(p: Priority) -> Self {
    match p {
      Priority::System => ContentPriority::SYSTEM,
      Priority::AgentInstructions => ContentPriority::AGENT_INSTRUCTIONS,
      Priority::CurrentTask => ContentPriority::CURRENT_TASK,
      Priority::ModifiedFiles => ContentPriority::MODIFIED_FILES,
      Priority::RecentTurns => ContentPriority::RECENT_TURNS,
      Priority::RecentFileReads => ContentPriority::RECENT_FILE_READS,
      Priority::OldHistory => ContentPriority::OLD_HISTORY,
      Priority::StaleToolOutputs => ContentPriority::STALE_TOOL_OUTPUTS,
      Priority::Summarized => ContentPriority::SUMMARIZED,
    }
  }
}

/// What a tool did to a file.
#[napi(string_enum)]
pub enum FileOperation {
  /// Read, viewed or opened.
  #[napi(value = "read")]
  Read,
  /// Created or wholly written.
  #[napi(value = "create")]
  Create,
  /// Changed in part.
  #[napi(value = "edit")]
  Edit,
  /// Deleted.
  #[napi(value = "delete")]
  Delete,
}

impl From<FileOpKind> for FileOperation {
  fn from(k: FileOpKind) -> Self {
    match k {
      FileOpKind::Read => FileOperation::Read,
      FileOpKind::Create => FileOperation::Create,
      FileOpKind::Edit => FileOperation::Edit,
      FileOpKind::Delete => FileOperation::Delete,
    }
  }
}

/// Why a message got its priority. Only the fields that apply are set.
#[napi(object, object_from_js = false)]
#[allow(dead_code)] // the TypeScript type of what the CLASSIFIED helper builds
pub struct ClassificationMetadata {
  /// A `system` or `developer` message.
  pub is_system: Option<bool>,
  /// AGENTS.md-style instructions.
  pub is_agent_instruction: Option<bool>,
  /// The current task.
  pub is_current_task: Option<bool>,
  /// The file a tool result is about.
  pub file_path: Option<String>,
  /// The file was modified in this session.
  pub was_modified: Option<bool>,
  /// The age in steps (for the droppable priorities).
  pub age: Option<u32>,
  /// A summary.
  pub is_summarized: Option<bool>,
  /// The index of the first later tool result that supersedes this one (a newer read of the
  /// same file, a newer listing of the same directory): this one is then stale tool output.
  pub superseded_by: Option<u32>,
}

/// A message with its priority.
#[napi(object, object_from_js = false)]
#[allow(dead_code)] // the TypeScript type of what the CLASSIFIED helper builds (`classified_list`)
pub struct ClassifiedMessage<'env> {
  /// The caller's message object, unchanged.
  #[napi(ts_type = "Message")]
  pub message: Object<'env>,
  /// How much it matters.
  pub priority: ContentPriority,
  /// Its tokens, framing included.
  pub tokens: u32,
  /// Its step.
  pub step: u32,
  /// Why it got its priority.
  pub metadata: ClassificationMetadata,
}

/// Builds `ClassifiedMessage` objects for `objects` and their `classes` in one call of the
/// CLASSIFIED helper: a list
/// of hundreds of dropped messages costs microseconds this way, where napi property definitions
/// took a millisecond. The shape is {@link ClassifiedMessage}'s.
pub(crate) fn classified_list<'env, 'c>(
  env: &'env Env,
  objects: Array<'env>,
  classes: impl ExactSizeIterator<Item = &'c crate::analysis::classify::Classification>,
) -> Result<Array<'env>> {
  let n = classes.len();
  if n == 0 {
    return env.create_array(0);
  }
  // Each distinct path crosses once (a history reads the same few files again and again).
  let mut distinct: Vec<&str> = Vec::new();
  let mut path_index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
  let mut columns = Vec::with_capacity(n * CLASSIFIED_COLUMNS);
  for c in classes {
    let m = &c.metadata;
    let path = m.file_path.as_deref().map_or(-1.0, |path| {
      let next = distinct.len();
      let k = *path_index.entry(path).or_insert(next);
      if k == next {
        distinct.push(path);
      }
      k as f64
    });
    let flags = u8::from(m.is_system)
      | u8::from(m.is_agent_instruction) << 1
      | u8::from(m.is_current_task) << 2
      | u8::from(m.was_modified) << 3
      | u8::from(m.is_summarized) << 4;
    columns.extend([
      f64::from(c.priority.value()),
      f64::from(saturate(c.tokens)),
      f64::from(saturate(c.step)),
      m.age.map_or(-1.0, |a| f64::from(saturate(a))),
      f64::from(flags),
      m.superseded_by.map_or(-1.0, |i| f64::from(saturate(i))),
      path,
    ]);
  }
  let mut paths = env.create_array(distinct.len() as u32)?;
  for (k, path) in distinct.iter().enumerate() {
    paths.set(k as u32, *path)?;
  }
  let helper = super::instance::instance(env)?.classified.borrow_back(env)?;
  // Copied into V8's own memory: an external buffer would hold fresh pages until a GC.
  let columns = Float64ArraySlice::copy_from(env, &columns)?;
  helper.call(FnArgs::from((objects, columns, paths)))
}

/// Numbers per entry passed to the CLASSIFIED helper.
const CLASSIFIED_COLUMNS: usize = 7;

/// The CLASSIFIED helper: `ClassifiedMessage` objects from the messages, their numbers
/// (priority, tokens, step, age or -1, flags, superseding index or -1, index of the file path
/// among `paths` or -1) and the distinct file paths. Fields that do not apply are
/// absent, as in every other object the addon returns.
pub(crate) const CLASSIFIED: &str = r#"(function contextTrimClassified(objects, columns, paths) {
  const out = new Array(objects.length);
  for (let i = 0; i < objects.length; i++) {
    const c = i * 7;
    const age = columns[c + 3];
    const flags = columns[c + 4];
    const metadata = {};
    if (flags & 1) metadata.isSystem = true;
    if (flags & 2) metadata.isAgentInstruction = true;
    if (flags & 4) metadata.isCurrentTask = true;
    if (columns[c + 6] >= 0) metadata.filePath = paths[columns[c + 6]];
    if (flags & 8) metadata.wasModified = true;
    if (age >= 0) metadata.age = age;
    if (flags & 16) metadata.isSummarized = true;
    if (columns[c + 5] >= 0) metadata.supersededBy = columns[c + 5];
    out[i] = { message: objects[i], priority: columns[c], tokens: columns[c + 1], step: columns[c + 2], metadata };
  }
  return out;
})"#;

/// The CLASSIFIED helper's arguments.
pub(crate) type ClassifiedArgs<'env> = FnArgs<(Array<'env>, Float64ArraySlice<'env>, Array<'env>)>;

/// One `ClassifiedMessage`, built like every list of them.
pub(crate) fn classified<'env>(
  env: &'env Env,
  message: Object<'env>,
  c: &crate::analysis::classify::Classification,
) -> Result<Unknown<'env>> {
  let list = classified_list(env, Array::from_vec(env, vec![message])?, std::iter::once(c))?;
  list.get::<Unknown>(0)?.ok_or_else(|| Error::new(Status::GenericFailure, "no classified message"))
}
