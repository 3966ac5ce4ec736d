//! Classification for JavaScript (seed 000): `ContentPriority`, `FileOperation`,
//! `classifyMessage`, `classifyMessages`, and the `ClassifiedMessage` lists every strategy
//! reports.

use std::collections::BTreeSet;

use napi::bindgen_prelude::*;

use napi::Env;
use napi_derive::napi;

use crate::analysis::classify::{
  classify_conversation, classify_message as core_classify_message, classify_with_operations,
  ClassificationContext as CoreContext, ClassifyOptions, ContentPriority as Priority, Modified,
};
use crate::analysis::file_ops::{file_operation, numbered_file_operations, FileOpKind};
use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::conversation::Conversation;
use crate::model::format::Format;
use crate::model::tokens::Encoding;

use super::options::{is_nullish, parse_format, read_options};
use super::priority::{classify_options, integer_field, string_set};
use super::{error, read, saturate};

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
  super::model_warning::warn_unknown_model(env, ctx.model.as_deref(), ctx.encoding.as_deref())?;
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
  let Some(object) = input.object(index)? else {
    return Err(throw(CoreError::option(
      "index",
      format!("must be less than the number of messages ({}), got {index}", input.len()),
    )));
  };
  if !env.strict_equals(message, object)? {
    return Err(throw(CoreError::new(
      ErrorKind::InvalidArgument,
      "message",
      "must be messages[index] when the context has messages",
    )));
  }
  let conv = input.conversation(encoding);
  let c = classify_all(&conv, modified.as_ref(), &options).swap_remove(index);
  classified(env, object, &c)
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
  super::model_warning::warn_unknown_model(env, ctx.model.as_deref(), ctx.encoding.as_deref())?;
  let input = read::read_messages_in(env, messages, format)?;
  // On the layout kept from the previous calls, as the trimmers do: a history classified turn
  // after turn (the CLI, an app's report) is not paired and grouped again.
  let classes = super::task::on_kept_conversation(env, &input, encoding, |conv| {
    classify_all(conv, modified.as_ref(), &options)
  })?;
  // The objects the scan read, not `messages` again: a getter or `toJSON` may have changed the
  // array.
  classified_list(env, input.view().array(env)?, classes.iter())
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
      let modified = Modified::By(&|p| set.contains(p));
      classify_with_operations(conv, &numbered_file_operations(conv), modified, options)
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
fn classified<'env>(
  env: &'env Env,
  message: Object<'env>,
  c: &crate::analysis::classify::Classification,
) -> Result<Unknown<'env>> {
  let list = classified_list(env, Array::from_vec(env, vec![message])?, std::iter::once(c))?;
  list.get::<Unknown>(0)?.ok_or_else(|| Error::new(Status::GenericFailure, "no classified message"))
}
