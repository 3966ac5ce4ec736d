//! Classification for JavaScript (seed 000): `ContentPriority`, `FileOperation`,
//! `classifyMessage`, `classifyMessages`, and the `ClassifiedMessage` lists every strategy
//! reports.

use std::collections::BTreeSet;

use napi::bindgen_prelude::*;

use napi::Env;
use napi_derive::napi;

use crate::analysis::classify::{
  classify_conversation, classify_message as core_classify_message, classify_with_operations,
  ClassificationContext as CoreContext, ClassifyOptions, Modified,
};
use crate::analysis::file_ops::{file_operation, numbered_file_operations};
use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::conversation::Conversation;
use crate::model::format::Format;
use crate::model::tokens::Encoding;

use crate::napi::base::classified::{classified, classified_list};
use crate::napi::base::options::{classify_options, integer_field, string_set};
use crate::napi::base::options::{is_nullish, parse_format, read_options};
use crate::napi::base::{error, read};

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
  crate::napi::base::model_warning::warn_unknown_model(
    env,
    ctx.model.as_deref(),
    ctx.encoding.as_deref(),
  )?;
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
  crate::napi::base::model_warning::warn_unknown_model(
    env,
    ctx.model.as_deref(),
    ctx.encoding.as_deref(),
  )?;
  let input = read::read_messages_in(env, messages, format)?;
  // On the layout kept from the previous calls, as the trimmers do: a history classified turn
  // after turn (the CLI, an app's report) is not paired and grouped again.
  let classes = crate::napi::base::task::on_kept_conversation(env, &input, encoding, |conv| {
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
