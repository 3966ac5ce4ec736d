//! Priority trimming for JavaScript (seed 000): `ContentPriority`, `classifyMessage`,
//! `FileTracker`, `trimByPriority`, `trimWithPlaceholders`, `trimByAge`, and the trimming
//! operation `trimConversation` and `enforceContextLimit` share (see `conversation.rs`).

use std::collections::BTreeSet;

use napi::bindgen_prelude::*;

use super::write::Objects;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::analysis::classify::{
  classify_conversation, classify_message as core_classify_message, classify_with_operations,
  ClassificationContext as CoreContext, ClassifyOptions, ContentPriority as Priority,
  DEFAULT_PRESERVE_RECENT_TURNS,
};
use crate::analysis::file_ops::{file_operation, file_operations, FileOpKind};
use crate::analysis::file_tracker::{FileReference as CoreReference, FileTracker as CoreTracker};
use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::conversation::Conversation;
use crate::model::format::Format;
use crate::model::message::Message;
use crate::model::tokens::Encoding;
use crate::output::placeholder::PlaceholderTemplate;
use crate::strategy::age::trim_by_age as core_trim_by_age;
use crate::strategy::budget::trim_after_rolling;
use crate::strategy::priority::{
  trim_by_priority as core_trim_by_priority, trim_with_placeholders as core_trim_with_placeholders,
  PriorityOptions, PriorityTrim,
};
use crate::strategy::rolling::TruncationConfig;
use crate::strategy::summarized::{replace_summary_text, trim_with_summary, Summary};

use super::clock::Clock;
use super::options::{
  integer_argument, integer_option, is_nullish, parse_format, read_options, TokenOptions,
};
use super::summary::{
  self, summary_request, Finish, Settled, SummaryFields, SummaryRequest, SummarySource,
};
use super::{error, read, saturate, task, write};

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
  /// The index of the newer tool result that supersedes this one (a newer read of the same
  /// file, a newer listing of the same directory): this one is then stale tool output.
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

/// The context of {@link classifyMessage}. Every field is optional. Pass `messages` and
/// `index` to classify a message of a conversation exactly as {@link trimByPriority} does
/// (step, current task, modified files and a call's results are then read from `messages`).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct ClassificationContext<'env> {
  /// The message's step (not with `messages`).
  /// @default 0
  #[napi(ts_type = "number")]
  pub message_step: Option<Unknown<'env>>,
  /// The conversation's current step (not with `messages`).
  /// @default messageStep
  #[napi(ts_type = "number")]
  pub current_step: Option<Unknown<'env>>,
  /// Paths modified in this session.
  /// @default the files `messages` modified, or none
  #[napi(ts_type = "Set<string> | string[]")]
  pub modified_files: Option<Unknown<'env>>,
  /// Tool results at most this many steps old are recent.
  /// @default preserveRecentTurns
  #[napi(ts_type = "number")]
  pub recent_threshold: Option<Unknown<'env>>,
  /// Other messages at most this many steps old are recent turns.
  /// @default 2
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Unknown<'env>>,
  /// Whether the message is the current task (not with `messages`).
  /// @default false
  pub is_current_task: Option<bool>,
  /// The conversation the message belongs to; `message` must be `messages[index]`.
  #[napi(ts_type = "Message[]")]
  pub messages: Option<Unknown<'env>>,
  /// The message's index in `messages` (required with `messages`).
  #[napi(ts_type = "number")]
  pub index: Option<Unknown<'env>>,
  /// Your own agent-instruction markers: a user message whose text starts with one (after
  /// whitespace, ASCII case-insensitive) is `AGENT_INSTRUCTIONS`, besides the built-in
  /// `# AGENTS.md`, `<agents_md>`, `<agents.md>` and a `name` of `AGENTS.md`.
  /// @default []
  pub agent_instruction_markers: Option<Vec<String>>,
  /// A model name that picks the tokenizer (see {@link countTokens}).
  pub model: Option<String>,
  /// The encoding, which wins over `model`.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// `false` counts each message as its content, tool-call names and arguments only, with no
  /// reply priming (CursorClaw's budget); `true` adds the chat framing of the
  /// OpenAI cookbook (3 tokens a message, its role, its name, 1 per tool call, and 3 of reply
  /// priming a request), which is what OpenAI bills. See README's token counting.
  /// @default true
  pub framing: Option<bool>,
  /// The message format (see {@link TokenOptions.format}).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// Classifies one message by how much it matters (see docs/priority-trimming.md for the
/// rules).
///
/// ```ts
/// classifyMessage({ role: 'system', content: 'You are…' }).priority // ContentPriority.SYSTEM
/// classifyMessage(messages[5], { messages, index: 5 }) // as trimByPriority sees it
/// ```
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "message: M, context?: ClassificationContext",
  ts_return_type = "ClassifiedMessageOf<M>"
)]
pub fn classify_message<'env>(
  env: &'env Env,
  message: Unknown<'env>,
  context: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let mut ctx: ClassificationContext = read_options(env, context, "context")?;
  let throw = |e: CoreError| error::throw(env, e);
  let Settings { encoding, format, options, modified } = settings(env, &mut ctx).map_err(throw)?;
  let message_step = integer_field(ctx.message_step, "messageStep").map_err(throw)?;
  let current_step = integer_field(ctx.current_step, "currentStep").map_err(throw)?;
  let index = integer_field(ctx.index, "index").map_err(throw)?;
  let messages = ctx.messages.filter(|v| !is_nullish(v));
  let Some(messages) = messages else {
    if index.is_some() {
      return Err(throw(CoreError::option("index", "can only be given with messages")));
    }
    let (object, parsed) = read::read_message(env, message, format)?;
    let step = message_step.unwrap_or(0);
    let current = current_step.unwrap_or(step);
    let one = [parsed];
    let conv = Conversation::new(&one, encoding);
    let file = file_operation(&conv, 0);
    let modified = modified.unwrap_or_default();
    let is_modified = |p: &str| modified.contains(p);
    let core_ctx = CoreContext {
      message_step: step,
      current_step: current,
      is_current_task: ctx.is_current_task.unwrap_or(false),
      is_modified: &is_modified,
      options: &options,
    };
    let c = core_classify_message(&one[0], conv.tokens(0), file.as_ref(), &core_ctx);
    return classified(env, object, &c);
  };
  for (name, given) in [
    ("messageStep", message_step.is_some()),
    ("currentStep", current_step.is_some()),
    ("isCurrentTask", ctx.is_current_task.is_some()),
  ] {
    if given {
      return Err(throw(CoreError::option(
        name,
        "cannot be given with messages, which it is read from",
      )));
    }
  }
  let input = read::read_messages_in(env, messages, format)?;
  let Some(index) = index else {
    return Err(throw(CoreError::option("index", "is required with messages")));
  };
  let Some(object) = input.objects.get(index) else {
    return Err(throw(CoreError::option(
      "index",
      format!("must be less than the number of messages ({}), got {index}", input.objects.len()),
    )));
  };
  if !env.strict_equals(message, *object)? {
    return Err(throw(CoreError::new(
      ErrorKind::InvalidArgument,
      "message",
      "must be messages[index] when the context has messages",
    )));
  }
  let conv = input.conversation(encoding);
  let c = classify_all(&conv, modified.as_ref(), &options).swap_remove(index);
  classified(env, *object, &c)
}

/// The options of {@link classifyMessages}. Every field is optional.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct ClassifyMessagesOptions<'env> {
  /// Paths modified in this session.
  /// @default the files `messages` modified
  #[napi(ts_type = "Set<string> | string[]")]
  pub modified_files: Option<Unknown<'env>>,
  /// Tool results at most this many steps old are recent.
  /// @default preserveRecentTurns
  #[napi(ts_type = "number")]
  pub recent_threshold: Option<Unknown<'env>>,
  /// Other messages at most this many steps old are recent turns.
  /// @default 2
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Unknown<'env>>,
  /// Your own agent-instruction markers (see {@link ClassificationContext.agentInstructionMarkers}).
  /// @default []
  pub agent_instruction_markers: Option<Vec<String>>,
  /// A model name that picks the tokenizer (see {@link countTokens}).
  pub model: Option<String>,
  /// The encoding, which wins over `model`.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// Whether counts include the chat framing (see {@link TokenOptions.framing}).
  /// @default true
  pub framing: Option<bool>,
  /// The message format (see {@link TokenOptions.format}).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// Classifies every message of a conversation in one pass: entry `i` is what
/// `classifyMessage(messages[i], { messages, index: i, ...options })` returns, at the cost of one
/// call instead of one analysis of the whole conversation per message.
///
/// ```ts
/// const tiers = classifyMessages(messages).map((c) => c.priority)
/// ```
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options?: ClassifyMessagesOptions",
  ts_return_type = "ClassifiedMessageOf<M>[]"
)]
pub fn classify_messages<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Array<'env>> {
  let opts: ClassifyMessagesOptions = read_options(env, options, "options")?;
  let mut ctx = ClassificationContext {
    modified_files: opts.modified_files,
    recent_threshold: opts.recent_threshold,
    preserve_recent_turns: opts.preserve_recent_turns,
    agent_instruction_markers: opts.agent_instruction_markers,
    model: opts.model,
    encoding: opts.encoding,
    framing: opts.framing,
    format: opts.format,
    ..ClassificationContext::default()
  };
  let Settings { encoding, format, options, modified } =
    settings(env, &mut ctx).map_err(|e| error::throw(env, e))?;
  let input = read::read_messages_in(env, messages, format)?;
  let conv = input.conversation(encoding);
  let classes = classify_all(&conv, modified.as_ref(), &options);
  // The handles read, not `messages` again: a getter or `toJSON` may have changed the array.
  let objects = Array::from_vec(env, input.objects.clone())?;
  classified_list(env, objects, classes.iter())
}

/// What {@link classifyMessage} and {@link classifyMessages} read from their options alike.
struct Settings {
  encoding: Encoding,
  format: Option<Format>,
  options: ClassifyOptions,
  modified: Option<BTreeSet<String>>,
}

/// Reads the [`Settings`] of `ctx` (taking its markers and modified files).
fn settings(env: &Env, ctx: &mut ClassificationContext<'_>) -> CoreResult<Settings> {
  let encoding =
    Encoding::resolve(ctx.model.as_deref(), ctx.encoding.as_deref())?.with_framing(ctx.framing);
  let format = parse_format(ctx.format.as_deref())?;
  let options = classify_options(
    ctx.preserve_recent_turns,
    ctx.recent_threshold,
    ctx.agent_instruction_markers.take(),
  )?;
  let modified = match ctx.modified_files.take() {
    Some(v) if !is_nullish(&v) => Some(string_set(env, v, "modifiedFiles")?),
    _ => None,
  };
  Ok(Settings { encoding, format, options, modified })
}

/// Every message's classification, with `modified` as the modified files when given (else the
/// files the conversation modified).
fn classify_all(
  conv: &Conversation<'_>,
  modified: Option<&BTreeSet<String>>,
  options: &ClassifyOptions,
) -> Vec<crate::analysis::classify::Classification> {
  match modified {
    Some(set) => {
      classify_with_operations(conv, &file_operations(conv), &|p| set.contains(p), options)
    }
    None => classify_conversation(conv, None, options),
  }
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
  let mut paths = env.create_array(n as u32)?;
  let mut columns = Vec::with_capacity(n * CLASSIFIED_COLUMNS);
  for (j, c) in classes.enumerate() {
    let m = &c.metadata;
    if let Some(path) = &m.file_path {
      paths.set(j as u32, path.as_str())?;
    }
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
    ]);
  }
  let helper = super::instance::instance(env)?.classified.borrow_back(env)?;
  // Copied into V8's own memory: an external buffer would hold fresh pages until a GC.
  let columns = Float64ArraySlice::copy_from(env, &columns)?;
  helper.call(FnArgs::from((objects, columns, paths)))
}

/// Numbers per entry passed to the CLASSIFIED helper.
const CLASSIFIED_COLUMNS: usize = 6;

/// The CLASSIFIED helper: `ClassifiedMessage` objects from the messages, their numbers
/// (priority, tokens, step, age or -1, flags, superseding index or -1) and file paths. Fields that do not apply are
/// absent, as in every other object the addon returns.
pub(crate) const CLASSIFIED: &str = r#"(function contextTrimClassified(objects, columns, paths) {
  const out = new Array(objects.length);
  for (let i = 0; i < objects.length; i++) {
    const c = i * 6;
    const age = columns[c + 3];
    const flags = columns[c + 4];
    const metadata = {};
    if (flags & 1) metadata.isSystem = true;
    if (flags & 2) metadata.isAgentInstruction = true;
    if (flags & 4) metadata.isCurrentTask = true;
    if (paths[i] !== undefined) metadata.filePath = paths[i];
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
fn classified<'env>(
  env: &'env Env,
  message: Object<'env>,
  c: &crate::analysis::classify::Classification,
) -> Result<Unknown<'env>> {
  let list = classified_list(env, Array::from_vec(env, vec![message])?, std::iter::once(c))?;
  list.get::<Unknown>(0)?.ok_or_else(|| Error::new(Status::GenericFailure, "no classified message"))
}

/// Options of {@link FileTracker}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct FileTrackerOptions<'env> {
  /// The clock that stamps `lastAccessTime`: milliseconds since the epoch, or a `Date`. Pass a
  /// fixed clock (`() => 0`) for results that are the same on every run.
  /// @default Date.now
  #[napi(ts_type = "() => number | Date")]
  pub now: Option<Unknown<'env>>,
}

/// Options of {@link FileTracker.fromMessages}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct FromMessagesOptions<'env> {
  /// The clock (see {@link FileTrackerOptions.now}).
  /// @default Date.now
  #[napi(ts_type = "() => number | Date")]
  pub now: Option<Unknown<'env>>,
  /// The message format (see {@link TokenOptions.format}).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// What a {@link FileTracker} knows about one file.
#[napi(object, object_from_js = false, js_name = "FileReference")]
pub struct JsFileReference {
  /// The file's path.
  pub path: String,
  /// The step of the last access.
  pub last_access_step: u32,
  /// The time of the last access, from the tracker's clock.
  pub last_access_time: f64,
  /// Whether any access created, edited or deleted it.
  pub was_modified: bool,
  /// The last operation.
  pub operation: FileOperation,
  /// The first 200 characters of the last access's content.
  pub content_preview: Option<String>,
  /// The number of lines of the last access's content.
  pub line_count: Option<u32>,
}

impl From<&CoreReference> for JsFileReference {
  fn from(r: &CoreReference) -> Self {
    JsFileReference {
      path: r.path.clone(),
      last_access_step: saturate(r.last_access_step),
      last_access_time: r.last_access_time,
      was_modified: r.was_modified,
      operation: r.operation.into(),
      content_preview: r.content_preview.clone(),
      line_count: r.line_count.map(saturate),
    }
  }
}

/// The files a session read, created, edited or deleted, by path, with the step of their last
/// access. Build one from a conversation with {@link FileTracker.fromMessages}, or fill it with
/// {@link FileTracker.trackAccess}; pass it to {@link trimByPriority} as `fileTracker` to decide
/// which files count as modified.
#[napi]
pub struct FileTracker {
  inner: CoreTracker,
  clock: Clock,
}

#[napi]
impl FileTracker {
  /// An empty tracker.
  #[napi(constructor, catch_unwind, ts_args_type = "options?: FileTrackerOptions")]
  pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
    Ok(FileTracker { inner: CoreTracker::new(), clock: clock(env, options)? })
  }

  /// Records an access to `path` at `step`: a modification (`create`, `edit`, `delete`) marks
  /// the file modified for good; `content` gives the preview and line count.
  #[napi(
    catch_unwind,
    ts_args_type = "path: string, step: number, operation: FileOperation, content?: string"
  )]
  pub fn track_access(
    &mut self,
    env: &Env,
    path: Unknown,
    step: Unknown,
    operation: Unknown,
    content: Option<Unknown>,
  ) -> Result<()> {
    let throw = |e: CoreError| error::throw(env, e);
    let path = read::string_argument(&path, "path").map_err(throw)?;
    let step = integer_argument(&step, "step", 0.0).map_err(throw)?;
    let operation = read::string_argument(&operation, "operation").map_err(throw)?;
    let operation = FileOpKind::parse(&operation).ok_or_else(|| {
      throw(CoreError::new(
        ErrorKind::InvalidArgument,
        "operation",
        format!("must be one of read, create, edit, delete, got {operation:?}"),
      ))
    })?;
    let content = match content {
      Some(c) if !is_nullish(&c) => Some(read::string_argument(&c, "content").map_err(throw)?),
      _ => None,
    };
    let time = self.now(env)?;
    self.inner.track_access(&path, step, operation, content.as_deref(), time);
    Ok(())
  }

  /// The options given, resolved: `{ now }` when a clock was given, `{}` for the system clock.
  /// `new FileTracker(tracker.options)` is an empty tracker on the same clock.
  #[napi(getter, catch_unwind, ts_return_type = "FileTrackerOptions")]
  pub fn options<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
    let mut options = Object::new(env)?;
    if let Some(now) = self.clock.function(env)? {
      options.set_named_property("now", now)?;
    }
    Ok(options)
  }

  /// Whether `path` was modified in this session.
  #[napi(catch_unwind, ts_args_type = "path: string")]
  pub fn was_modified(&self, env: &Env, path: Unknown) -> Result<bool> {
    let path = read::string_argument(&path, "path").map_err(|e| error::throw(env, e))?;
    Ok(self.inner.was_modified(&path))
  }

  /// The paths of the modified files, in the order they were first accessed.
  #[napi(catch_unwind, ts_return_type = "Set<string>")]
  pub fn get_modified_files<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
    let paths: Vec<&str> = self.inner.modified_files();
    let set: Function<Array, Unknown> = env.get_global()?.get_named_property("Set")?;
    set.new_instance(Array::from_vec(env, paths)?)
  }

  /// Whether the last access to `path` is more than `maxAge` steps before `currentStep` (a
  /// file never accessed is stale).
  #[napi(catch_unwind, ts_args_type = "path: string, currentStep: number, maxAge: number")]
  pub fn is_stale(
    &self,
    env: &Env,
    path: Unknown,
    current_step: Unknown,
    max_age: Unknown,
  ) -> Result<bool> {
    let throw = |e: CoreError| error::throw(env, e);
    let path = read::string_argument(&path, "path").map_err(throw)?;
    let current = integer_argument(&current_step, "currentStep", 0.0).map_err(throw)?;
    let max_age = integer_argument(&max_age, "maxAge", 0.0).map_err(throw)?;
    Ok(self.inner.is_stale(&path, current, max_age))
  }

  /// The files accessed at most `maxAge` steps before `currentStep`, newest first.
  #[napi(catch_unwind, ts_args_type = "currentStep: number, maxAge: number")]
  pub fn get_recent_files(
    &self,
    env: &Env,
    current_step: Unknown,
    max_age: Unknown,
  ) -> Result<Vec<JsFileReference>> {
    let throw = |e: CoreError| error::throw(env, e);
    let current = integer_argument(&current_step, "currentStep", 0.0).map_err(throw)?;
    let max_age = integer_argument(&max_age, "maxAge", 0.0).map_err(throw)?;
    Ok(self.inner.recent_files(current, max_age).into_iter().map(JsFileReference::from).collect())
  }

  /// Builds a tracker from a conversation: every tool result about a file (as the call's
  /// arguments or the result show it) is an access at the step of its call. A modification
  /// whose result reports failure counts as a read. The clock is read once.
  #[napi(
    factory,
    catch_unwind,
    ts_args_type = "messages: AnyMessageInput[], options?: FromMessagesOptions"
  )]
  pub fn from_messages(env: &Env, messages: Unknown, options: Option<Unknown>) -> Result<Self> {
    let options: FromMessagesOptions = read_options(env, options, "options")?;
    let format = parse_format(options.format.as_deref()).map_err(|e| error::throw(env, e))?;
    let input = read::read_messages_in(env, messages, format)?;
    let clock = Clock::from_option(env, options.now)?;
    let mut tracker = FileTracker { inner: CoreTracker::new(), clock };
    let time = tracker.now(env)?;
    let conv =
      Conversation::with_tokens(input.refs(), Encoding::default(), vec![0; input.messages.len()]);
    tracker.inner = CoreTracker::from_conversation(&conv, time);
    Ok(tracker)
  }

  fn now(&self, env: &Env) -> Result<f64> {
    self.clock.now(env)
  }
}

fn clock(env: &Env, options: Option<Unknown>) -> Result<Clock> {
  let options: FileTrackerOptions = read_options(env, options, "options")?;
  Clock::from_option(env, options.now)
}

/// Options of {@link trimByPriority} and {@link trimWithPlaceholders} (and of their async
/// variants).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct TrimOptions<'env> {
  /// The budget in tokens for the whole request (messages and reply priming). Required.
  #[napi(ts_type = "number")]
  pub target_tokens: Option<Unknown<'env>>,
  /// Messages at most this many steps old are recent turns (and tool results recent).
  /// @default 2
  #[napi(ts_type = "number")]
  pub preserve_recent_turns: Option<Unknown<'env>>,
  /// Decides which files count as modified (and what file placeholders say).
  /// @default FileTracker.fromMessages(messages)
  #[napi(ts_type = "FileTracker")]
  pub file_tracker: Option<Unknown<'env>>,
  /// Returns `summary`: a deterministic summary of the messages dropped or replaced (files,
  /// commands, errors, user requests, the assistant's decisions), starting with
  /// `[context-trim summary]`. See docs/summaries.md.
  /// @default false
  pub summarize_dropped: Option<bool>,
  /// Also inserts the summary into `messages`: one `user` message flagged `_summary: true`,
  /// right after the leading system/developer messages. Its tokens count towards
  /// `targetTokens` (more is trimmed to make room), and an earlier summary is folded into it.
  /// Needs `summarizeDropped`.
  /// @default false
  pub insert_summary: Option<bool>,
  /// The bound of the summary's text, in tokens (at least 64).
  /// @default 500
  #[napi(ts_type = "number")]
  pub max_summary_tokens: Option<Unknown<'env>>,
  /// Async functions only: writes the summary instead of the extractive one. Called on the JS
  /// thread with the dropped messages (your own objects) and the extractive draft; its text is
  /// given the `[context-trim summary]` marker if it lacks it and cut to `maxSummaryTokens`.
  /// If it throws, rejects, resolves to something other than a non-empty string or does not
  /// settle within `summarizerTimeoutMs`, the draft is used (see `summarySource`). Passing it to
  /// a sync function is an `INVALID_OPTION` error. Needs `summarizeDropped`.
  #[napi(ts_type = "(dropped: Message[], draft: string) => Promise<string> | string")]
  pub summarizer: Option<Unknown<'env>>,
  /// How long the summarizer may take, in milliseconds (1 to 2147483647).
  /// @default 10000
  #[napi(ts_type = "number")]
  pub summarizer_timeout_ms: Option<Unknown<'env>>,
  /// A model name that picks the tokenizer (see {@link countTokens}).
  pub model: Option<String>,
  /// The encoding, which wins over `model`.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// `false` counts each message as its content, tool-call names and arguments only, with no
  /// reply priming (CursorClaw's budget); `true` adds the chat framing of the
  /// OpenAI cookbook (3 tokens a message, its role, its name, 1 per tool call, and 3 of reply
  /// priming a request), which is what OpenAI bills. See README's token counting.
  /// @default true
  pub framing: Option<bool>,
  /// Your own agent-instruction markers (see {@link ClassificationContext}).
  /// @default []
  pub agent_instruction_markers: Option<Vec<String>>,
  /// {@link trimWithPlaceholders} only: the text of every placeholder instead of the seed's
  /// (`[Content truncated - N steps ago - T tokens]`, and the file summary for a file the
  /// tracker knows). `{age}` (or `{N}`) becomes the result's age in steps, `{tokens}` its
  /// tokens and `{path}` the file it is about (empty if none), e.g.
  /// `'[content truncated - {age} steps ago, {tokens} tokens]'`, nanocoder's wording.
  /// @default undefined (the seed's placeholders)
  pub placeholder: Option<String>,
  /// The message format (see {@link TokenOptions.format}). Give it for Anthropic
  /// conversations without tool blocks: read as OpenAI (the default detection of plain text),
  /// the result may start with an assistant message, which Anthropic refuses.
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// The result of {@link trimByPriority} and {@link trimWithPlaceholders}.
#[napi(object, object_from_js = false)]
pub struct TrimResult<'env> {
  /// The trimmed messages, in order: kept ones are your own objects, placeholders are copies
  /// (`{...original, content, _truncated: true, _originalTokens}`), and with `insertSummary`
  /// the summary is a new `{role: 'user', content, _summary: true}` message.
  #[napi(ts_type = "Message[]")]
  pub messages: Array<'env>,
  /// The messages dropped or replaced by a placeholder (your own objects), in order.
  #[napi(ts_type = "Array<ClassifiedMessage>")]
  pub dropped_messages: Array<'env>,
  /// Tokens before minus tokens after.
  pub saved_tokens: u32,
  /// With `summarizeDropped`, when something was dropped or replaced: the summary of it,
  /// starting with `[context-trim summary]`.
  pub summary: Option<String>,
  /// Where `summary` comes from: `'extractive'` without a summarizer; `'callback'`,
  /// `'fallback-error'` or `'fallback-timeout'` with one.
  pub summary_source: Option<SummarySource>,
  /// Why the summarizer's text was not used (with `'fallback-error'` and `'fallback-timeout'`).
  pub summary_error: Option<String>,
  /// Whether `totalTokens` is still above `targetTokens` because the system messages and the
  /// last message with its unit alone exceed it (they are never dropped; under Anthropic's
  /// rule the opening user message counts too).
  pub over_budget: bool,
  /// The tokens of the returned request (an inserted summary included).
  pub total_tokens: u32,
}

/// Trims a conversation to `targetTokens`, taking what matters least first
/// ({@link ContentPriority}), oldest first within a priority: tool results are cut to head and
/// tail (their calls stay), and units are dropped whole (a tool call always with its results)
/// only when that is not enough; dropped units that still fit are put back. The system
/// messages and the last message with its unit are always returned; the seed's
/// never-truncated tiers (agent instructions, the current task, modified files) go last. When
/// those alone exceed the budget they are cut to head and tail, the system messages last;
/// `overBudget` is true only when even that does not fit. See docs/priority-trimming.md.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "TrimResultOf<M>"
)]
pub fn trim_by_priority<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare_priority(env, messages, options, Strategy::ByPriority, false)?;
  task::run_sync(env, input, op)
}

/// {@link trimByPriority} on the libuv thread pool; the only way to use a `summarizer`.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "Promise<TrimResultOf<M>>"
)]
pub fn trim_by_priority_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(env, prepare_priority(env, messages, options, Strategy::ByPriority, true))
}

/// Like {@link trimByPriority}, but tool results become placeholders in place (the call stays,
/// so pairs stay valid) instead of cuts; other messages are removed. Placeholders count towards
/// the budget; when they alone do not fit, the lowest units are removed whole. The system
/// messages and the last message with its unit are always returned.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "TrimResultOf<M>"
)]
pub fn trim_with_placeholders<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare_priority(env, messages, options, Strategy::WithPlaceholders, false)?;
  task::run_sync(env, input, op)
}

/// {@link trimWithPlaceholders} on the libuv thread pool; the only way to use a `summarizer`.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], options: TrimOptions",
  ts_return_type = "Promise<TrimResultOf<M>>"
)]
pub fn trim_with_placeholders_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(
    env,
    prepare_priority(env, messages, options, Strategy::WithPlaceholders, true),
  )
}

/// What a trimming call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
  /// The messages only.
  Messages,
  /// A {@link TrimResult}.
  TrimResult,
  /// A {@link ContextLimitResult} (`enforceContextLimit`).
  ContextLimit,
}

/// Which strategy a trimming call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
  ByPriority,
  WithPlaceholders,
  ByAge,
}

/// A trimming call as the task runner runs it (sync or async).
pub(crate) struct TrimOp {
  pub(super) strategy: Strategy,
  /// What the call returns.
  pub(super) shape: Shape,
  pub(super) target: usize,
  pub(super) classify: ClassifyOptions,
  pub(super) tracker: Option<CoreTracker>,
  pub(super) encoding: Encoding,
  /// The format the messages were read in (its rules shape the plan).
  pub(super) format: Format,
  pub(super) summary: Option<SummaryRequest>,
  /// The placeholder template of `trimWithPlaceholders` (`None`: the seed's placeholders).
  pub(super) placeholder: Option<PlaceholderTemplate>,
  /// Rolling context's rules, applied first (`trimConversation`, see `strategy::budget`).
  pub(super) rolling: Option<TruncationConfig>,
  /// The parsed messages, kept for building the result after a summarizer.
  pub(super) messages: Vec<std::sync::Arc<super::instance::Cached>>,
}

/// What a trimming call computed.
pub(crate) struct TrimOutput {
  pub(super) trim: PriorityTrim,
  pub(super) summary: Option<Summary>,
  /// The request's tokens before trimming.
  pub(super) original_tokens: usize,
}

impl TrimOp {
  fn run(&self, conv: &Conversation<'_>, target: usize) -> PriorityTrim {
    match &self.rolling {
      Some(config) => trim_after_rolling(conv, config, target, |c| self.run_strategy(c, target)),
      None => self.run_strategy(conv, target),
    }
  }

  fn run_strategy(&self, conv: &Conversation<'_>, target: usize) -> PriorityTrim {
    let options = PriorityOptions {
      target_tokens: target,
      classify: self.classify.clone(),
      placeholder: self.placeholder.clone(),
    };
    let tracker = self.tracker.as_ref();
    match self.strategy {
      Strategy::ByPriority => core_trim_by_priority(conv, tracker, &options),
      Strategy::WithPlaceholders => core_trim_with_placeholders(conv, tracker, &options),
      Strategy::ByAge => {
        PriorityTrim { outcome: core_trim_by_age(conv, target), classification: Vec::new() }
      }
    }
  }
}

impl task::Operation for TrimOp {
  type Output = TrimOutput;

  fn compute(&mut self, messages: &[&Message]) -> TrimOutput {
    let conv = Conversation::from_refs(messages.to_vec(), self.encoding).with_format(self.format);
    task::OnConversation::compute_on(self, &conv)
  }

  fn to_js<'env>(
    &mut self,
    env: &'env Env,
    output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
  ) -> Result<Unknown<'env>> {
    let summarizer = self.summary.as_mut().and_then(|r| r.summarizer.take());
    let (Some(summarizer), Some(summary)) = (summarizer, &output.summary) else {
      let source = output.summary.as_ref().map(|_| Settled {
        source: SummarySource::Extractive,
        text: None,
        error: None,
      });
      return self.finish(env, output, objects, format, source);
    };
    let sources = summary.sources.clone();
    let draft = summary.text.clone();
    let finisher = Finisher {
      shape: self.shape,
      target: self.target,
      encoding: self.encoding,
      messages: std::mem::take(&mut self.messages),
    };
    let finish: Finish = Box::new(move |env, objects, settled| {
      let value = finisher.finish(env, output, objects, format, settled)?;
      Ok(value.raw())
    });
    summary::ask(env, &summarizer, objects, &sources, &draft, finish)
  }
}

impl task::OnConversation for TrimOp {
  fn compute_on(&mut self, conv: &Conversation<'_>) -> TrimOutput {
    let original_tokens = conv.total_tokens();
    match &self.summary {
      None => TrimOutput { trim: self.run(conv, self.target), summary: None, original_tokens },
      Some(request) => {
        let (trim, summary) =
          trim_with_summary(conv, self.target, &request.options, |t| self.run(conv, t));
        TrimOutput { trim, summary, original_tokens }
      }
    }
  }
}

impl TrimOp {
  fn finish<'env>(
    &self,
    env: &'env Env,
    output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
    settled: Option<Settled>,
  ) -> Result<Unknown<'env>> {
    let finisher = Finisher {
      shape: self.shape,
      target: self.target,
      encoding: self.encoding,
      messages: Vec::new(),
    };
    finisher.build(env, output, objects, format, settled)
  }
}

/// Builds a trimming call's JavaScript result, after the summarizer if there is one.
struct Finisher {
  shape: Shape,
  target: usize,
  encoding: Encoding,
  messages: Vec<std::sync::Arc<super::instance::Cached>>,
}

impl Finisher {
  /// Swaps in the summarizer's text when it is the source, then builds the result.
  fn finish<'env>(
    &self,
    env: &'env Env,
    mut output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
    settled: Settled,
  ) -> Result<Unknown<'env>> {
    if let (Some(text), Some(summary)) = (&settled.text, output.summary.as_mut()) {
      let refs = self.messages.iter().map(|c| &c.message).collect();
      let conv = Conversation::from_refs(refs, self.encoding).with_format(format);
      let outcome = &mut output.trim.outcome;
      replace_summary_text(&conv, outcome, summary, text, self.target);
    }
    self.build(env, output, objects, format, Some(settled))
  }

  fn build<'env>(
    &self,
    env: &'env Env,
    output: TrimOutput,
    objects: Objects<'_, 'env>,
    format: Format,
    settled: Option<Settled>,
  ) -> Result<Unknown<'env>> {
    let TrimOutput { trim, summary, original_tokens } = output;
    let messages = write::apply_plan_to(env, objects, format, &trim.outcome.plan)?;
    match self.shape {
      Shape::Messages => return messages.into_unknown(env),
      Shape::ContextLimit => {
        let limit = super::conversation::LimitFigures { original_tokens, target: self.target };
        return super::conversation::context_limit_result(
          env,
          &trim.outcome,
          messages,
          objects,
          limit,
        );
      }
      Shape::TrimResult => {}
    }
    let dropped: Vec<u32> = trim
      .outcome
      .dropped
      .iter()
      .filter(|&&i| i < objects.len() && i < trim.classification.len())
      .map(|&i| i as u32)
      .collect();
    let classes = dropped.iter().map(|&i| &trim.classification[i as usize]);
    let dropped_messages = classified_list(env, objects.pick(env, &dropped)?, classes)?;
    let (summary_source, summary_error) = match settled {
      Some(s) if summary.is_some() => (Some(s.source), s.error),
      _ => (None, None),
    };
    let result = TrimResult {
      messages,
      dropped_messages,
      saved_tokens: saturate(trim.outcome.saved_tokens),
      summary: summary.map(|s| s.text),
      summary_source,
      summary_error,
      over_budget: trim.outcome.over_budget,
      total_tokens: saturate(trim.outcome.total_tokens),
    };
    // SAFETY: `env` is the live env of the current call.
    let raw = unsafe { TrimResult::to_napi_value(env.raw(), result) }?;
    // SAFETY: `raw` was just created in `env`'s current scope.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
  }
}

fn prepare_priority<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Unknown<'env>,
  strategy: Strategy,
  asynchronous: bool,
) -> Result<(read::JsMessages<'env>, TrimOp)> {
  let (mut op, format) = trim_op(env, options, strategy, asynchronous, None)?;
  let input = read::read_messages_in(env, messages, format)?;
  op.format = input.format;
  op.messages = keep_for_summarizer(&input, op.summary.as_ref());
  Ok((input, op))
}

/// Reads the {@link TrimOptions} of a trimming call into its operation (on messages in the
/// OpenAI format until told otherwise), and the format the options give (`None`: detect it).
/// With `fixed` (a window's encoding and format), counts are in that encoding, and
/// `model`/`encoding`/`format` may only name those.
pub(crate) fn trim_op(
  env: &Env,
  options: Unknown<'_>,
  strategy: Strategy,
  asynchronous: bool,
  fixed: Option<(Encoding, Format)>,
) -> Result<(TrimOp, Option<Format>)> {
  let throw = |e: CoreError| error::throw(env, e);
  let opts: TrimOptions = read_options(env, Some(options), "options")?;
  let Some(target) = integer_field(opts.target_tokens, "targetTokens").map_err(throw)? else {
    return Err(throw(CoreError::option("targetTokens", "is required")));
  };
  let classify = classify_options(opts.preserve_recent_turns, None, opts.agent_instruction_markers)
    .map_err(throw)?;
  let encoding = Encoding::resolve_within(
    opts.model.as_deref(),
    opts.encoding.as_deref(),
    opts.framing,
    fixed.map(|f| f.0),
  )
  .map_err(throw)?;
  let format = parse_format(opts.format.as_deref()).map_err(throw)?;
  if let Some((_, own)) = fixed {
    check_window_format(own, format).map_err(throw)?;
  }
  let tracker = file_tracker_option(opts.file_tracker).map_err(throw)?;
  let fields = SummaryFields {
    summarize_dropped: opts.summarize_dropped,
    insert_summary: Some(opts.insert_summary),
    max_summary_tokens: opts.max_summary_tokens,
    summarizer: opts.summarizer,
    summarizer_timeout_ms: opts.summarizer_timeout_ms,
  };
  let summary = summary_request(fields, asynchronous).map_err(throw)?;
  if strategy != Strategy::WithPlaceholders && opts.placeholder.is_some() {
    let detail = "only trimWithPlaceholders makes placeholders; this call drops whole messages";
    return Err(throw(CoreError::option("placeholder", detail)));
  }
  let op = TrimOp {
    strategy,
    shape: Shape::TrimResult,
    target,
    classify,
    tracker,
    encoding,
    format: fixed.map(|f| f.1).or(format).unwrap_or_default(),
    summary,
    placeholder: opts.placeholder.as_deref().map(PlaceholderTemplate::new),
    rolling: None,
    messages: Vec::new(),
  };
  Ok((op, format))
}

/// The `fileTracker` option: absent, or a {@link FileTracker} (its state as of this call).
pub(super) fn file_tracker_option(value: Option<Unknown<'_>>) -> CoreResult<Option<CoreTracker>> {
  match value.filter(|v| !is_nullish(v)) {
    None => Ok(None),
    Some(v) => {
      let got = read::js_type_name(&v);
      let instance = ClassInstance::<FileTracker>::from_unknown(v).map_err(|_| {
        CoreError::option("fileTracker", format!("must be a FileTracker, got {got}"))
      })?;
      Ok(Some(instance.inner.clone()))
    }
  }
}

/// The parsed messages when a summarizer may need them after the worker (else nothing).
pub(super) fn keep_for_summarizer(
  input: &read::JsMessages<'_>,
  summary: Option<&SummaryRequest>,
) -> Vec<std::sync::Arc<super::instance::Cached>> {
  match summary {
    Some(r) if r.summarizer.is_some() => input.messages.clone(),
    _ => Vec::new(),
  }
}

/// Phase 1 trimming: drops the oldest messages first (a tool call with its results) until the
/// request fits `targetTokens`, keeping system messages and the last message.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput = Message",
  ts_args_type = "messages: M[], targetTokens: number, options?: TokenOptions",
  ts_return_type = "M[]"
)]
pub fn trim_by_age<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  target_tokens: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Array<'env>> {
  let throw = |e: CoreError| error::throw(env, e);
  let opts: TokenOptions = read_options(env, options, "options")?;
  let input = read::read_messages_in(env, messages, opts.format().map_err(throw)?)?;
  let target = target_argument(&target_tokens).map_err(throw)?;
  let conv = input.conversation(opts.encoding().map_err(throw)?);
  write::apply_plan(env, &input, &core_trim_by_age(&conv, target).plan)
}

/// The classification options from the options of that name (`preserveRecentTurns`, its
/// `recentThreshold`, `agentInstructionMarkers`).
pub(super) fn classify_options(
  preserve_recent_turns: Option<Unknown<'_>>,
  recent_threshold: Option<Unknown<'_>>,
  markers: Option<Vec<String>>,
) -> CoreResult<ClassifyOptions> {
  let turns = integer_field(preserve_recent_turns, "preserveRecentTurns")?
    .unwrap_or(DEFAULT_PRESERVE_RECENT_TURNS);
  let threshold = integer_field(recent_threshold, "recentThreshold")?.unwrap_or(turns);
  Ok(ClassifyOptions {
    recent_threshold: threshold,
    preserve_recent_turns: turns,
    agent_markers: markers.unwrap_or_default(),
  })
}

/// The `format` option given to a window's trim or truncation: absent, or the window's own.
pub(super) fn check_window_format(own: Format, given: Option<Format>) -> CoreResult<()> {
  match given {
    Some(given) if given != own => Err(CoreError::option(
      "format",
      format!(
        "must be the window's format ({}), got {:?}: give the format when creating the window",
        own.as_str(),
        given.as_str()
      ),
    )),
    _ => Ok(()),
  }
}

/// A numeric option: absent (`undefined`/`null`) or a non-negative integer.
fn integer_field(value: Option<Unknown<'_>>, name: &str) -> CoreResult<Option<usize>> {
  match value {
    Some(v) if !is_nullish(&v) => integer_option(name, number(&v, name)?, 0.0).map(Some),
    _ => Ok(None),
  }
}

/// The positional `targetTokens` (`INVALID_ARGUMENT`, as every positional argument; the
/// option of the same name is `INVALID_OPTION`).
pub(super) fn target_argument(value: &Unknown<'_>) -> CoreResult<usize> {
  integer_argument(value, "targetTokens", 0.0)
}

/// A numeric option's value (`INVALID_OPTION` naming it when it is not a number).
pub(super) fn number(value: &Unknown<'_>, name: &str) -> CoreResult<f64> {
  number_of_kind(value, ErrorKind::InvalidOption, name)
}

fn number_of_kind(value: &Unknown<'_>, kind: ErrorKind, name: &str) -> CoreResult<f64> {
  if matches!(value.get_type(), Ok(ValueType::Number)) {
    value
      .coerce_to_number()
      .and_then(|n| n.get_double())
      .map_err(|e| CoreError::new(kind, name, e.reason))
  } else {
    Err(CoreError::new(kind, name, format!("must be a number, got {}", read::js_type_name(value))))
  }
}

/// Reads a `Set<string>` or `string[]`.
fn string_set(env: &Env, value: Unknown<'_>, name: &str) -> CoreResult<BTreeSet<String>> {
  let bad = || CoreError::option(name, "must be a Set or an array of strings");
  let array = if value.is_array().unwrap_or(false) {
    value
  } else if matches!(value.get_type(), Ok(ValueType::Object)) {
    let from = || -> Result<Unknown<'_>> {
      let array: Function<Unknown, Unknown> = env.get_global()?.get_named_property("Array")?;
      let from: Function<Unknown, Unknown> = array.get_named_property("from")?;
      from.apply(array, value)
    };
    from().map_err(|_| bad())?
  } else {
    return Err(bad());
  };
  let strings = Vec::<String>::from_unknown(array).map_err(|_| bad())?;
  Ok(strings.into_iter().collect())
}
