//! `validateConversation` and `repairConversation`: the validator and the repair as JavaScript
//! sees them.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::model::format::Format;
use crate::output::repair::{repair, RepairAction};
use crate::output::validate::{validate, ProblemKind};

use crate::napi::base::options::read_options;
use crate::napi::base::{error, read, saturate, write};

/// Options of {@link validateConversation} and {@link repairConversation}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct ValidationOptions {
  /// The message format whose provider rules to check. `'auto'` detects it (see
  /// docs/formats.md).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

impl ValidationOptions {
  fn format(&self) -> crate::error::Result<Option<Format>> {
    crate::napi::base::options::parse_format(self.format.as_deref())
  }
}

/// What is wrong with a message: `'orphan-result'` (a tool result that answers no earlier
/// call), `'call-without-result'`, `'misplaced-result'` (not among the tool messages right
/// after its call), `'duplicate-call-id'` (an id used twice in one message),
/// `'duplicate-result'`, `'missing-tool-call-id'`, `'empty-message'`, and, in formats with
/// these rules, `'consecutive-same-role'` and `'first-message-not-user'`; `'empty-conversation'`
/// (at index 0) when there is no message, or in Anthropic format none besides the instructions.
/// The variants mirror the core's `ProblemKind`, which documents each.
#[napi(string_enum = "kebab-case")]
pub enum ConversationProblemKind {
  OrphanResult,
  CallWithoutResult,
  MisplacedResult,
  DuplicateCallId,
  DuplicateResult,
  MissingToolCallId,
  EmptyMessage,
  ConsecutiveSameRole,
  FirstMessageNotUser,
  EmptyConversation,
}

impl From<ProblemKind> for ConversationProblemKind {
  fn from(kind: ProblemKind) -> Self {
    match kind {
      ProblemKind::OrphanResult => ConversationProblemKind::OrphanResult,
      ProblemKind::CallWithoutResult => ConversationProblemKind::CallWithoutResult,
      ProblemKind::MisplacedResult => ConversationProblemKind::MisplacedResult,
      ProblemKind::DuplicateCallId => ConversationProblemKind::DuplicateCallId,
      ProblemKind::DuplicateResult => ConversationProblemKind::DuplicateResult,
      ProblemKind::MissingToolCallId => ConversationProblemKind::MissingToolCallId,
      ProblemKind::EmptyMessage => ConversationProblemKind::EmptyMessage,
      ProblemKind::ConsecutiveSameRole => ConversationProblemKind::ConsecutiveSameRole,
      ProblemKind::FirstMessageNotUser => ConversationProblemKind::FirstMessageNotUser,
      ProblemKind::EmptyConversation => ConversationProblemKind::EmptyConversation,
    }
  }
}

/// Something in a conversation that the provider would reject.
#[napi(object, object_from_js = false)]
pub struct ConversationProblem {
  /// The index of the offending message.
  pub index: u32,
  /// What is wrong.
  pub kind: ConversationProblemKind,
  /// The other message involved, if any: the call of a misplaced result, the first answer of a
  /// duplicate result, the message that used a repeated id first.
  pub related: Option<u32>,
  /// A sentence saying what is wrong, e.g. `tool result for call "call_1" answers no earlier
  /// tool call`.
  pub message: String,
}

/// What a repair did to a message.
#[napi(string_enum = "lowercase")]
pub enum ConversationRepairAction {
  /// The message is left out.
  Drop,
  /// The message is returned as a copy with `content: ''` (its content was `null`).
  Replace,
}

/// One change made by {@link repairConversation}.
#[napi(object, object_from_js = false)]
pub struct ConversationRepair {
  /// The index of the message in the input.
  pub index: u32,
  /// The problem the change fixes.
  pub kind: ConversationProblemKind,
  /// What was done to the message.
  pub action: ConversationRepairAction,
  /// A sentence saying what was done and why.
  pub message: String,
}

/// The result of {@link repairConversation}.
#[napi(object, object_from_js = false)]
pub struct RepairedConversation<'env> {
  /// The repaired messages: the caller's own objects, in order, less the dropped ones.
  #[napi(ts_type = "Message[]")]
  pub messages: Array<'env>,
  /// What was changed, one entry per changed message, in message order.
  pub repairs: Vec<ConversationRepair>,
}

/// Lists what in `messages` the provider would reject: orphan, misplaced and duplicate tool
/// results, calls without results, repeated call ids, tool messages without `tool_call_id`,
/// empty messages. An empty list means the conversation is structurally valid.
///
/// ```ts
/// validateConversation([{ role: 'tool', tool_call_id: 'call_1', content: '42' }])
/// // [{ index: 0, kind: 'orphan-result', message: 'tool result for call "call_1" answers no earlier tool call' }]
/// ```
#[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[], options?: ValidationOptions")]
pub fn validate_conversation(
  env: &Env,
  messages: Unknown,
  options: Option<Unknown>,
) -> Result<Vec<ConversationProblem>> {
  let options: ValidationOptions = read_options(env, options, "options")?;
  let format = options.format().map_err(|e| error::throw(env, e))?;
  let input = read::read_messages_checked(env, messages, format, read::Check::Lenient)?;
  Ok(
    validate(&input.refs(), input.format)
      .into_iter()
      .map(|p| ConversationProblem {
        index: saturate(p.index),
        kind: p.kind.into(),
        related: p.related.map(saturate),
        message: p.message,
      })
      .collect(),
  )
}

/// Repairs what {@link validateConversation} finds, without inventing content: drops orphan,
/// duplicate and misplaced results, tool messages without `tool_call_id` and empty messages,
/// drops an assistant message whose calls are not all answered together with its results, and
/// gives a tool result with `content: null` an empty string. Never reorders; kept messages are
/// the caller's own objects, and a valid conversation comes back whole with no repair.
///
/// Throws an `Error` with code `EMPTY_CONVERSATION` instead of returning a conversation no
/// provider accepts: when no message is given, when every message would be dropped, or (in
/// Anthropic format) when only the instructions would be left.
#[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[], options?: ValidationOptions")]
pub fn repair_conversation<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<RepairedConversation<'env>> {
  let options: ValidationOptions = read_options(env, options, "options")?;
  let format = options.format().map_err(|e| error::throw(env, e))?;
  let input = read::read_messages_checked(env, messages, format, read::Check::Lenient)?;
  let repaired = repair(&input.refs(), input.format);
  repaired.check_not_empty().map_err(|e| error::throw(env, e))?;
  let messages = write::apply_plan(env, &input, &repaired.plan)?;
  let repairs = repaired
    .repairs
    .into_iter()
    .map(|r| ConversationRepair {
      index: saturate(r.index),
      kind: r.kind.into(),
      action: match r.action {
        RepairAction::Drop => ConversationRepairAction::Drop,
        RepairAction::Replace => ConversationRepairAction::Replace,
      },
      message: r.message,
    })
    .collect();
  Ok(RepairedConversation { messages, repairs })
}
