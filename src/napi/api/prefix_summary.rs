//! `summarizePrefix`: CursorClaw's summary of earlier turns (seed 002's TU.4) for JavaScript.

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::output::prefix_summary::summarize_prefix as summarize;

use crate::napi::base::options::integer_argument;
use crate::napi::base::{error, read};

/// The system message that stands for the earlier turns.
#[napi(object, object_from_js = false)]
pub struct PrefixSummaryMessage {
  /// Always `'system'`.
  #[napi(ts_type = "'system'")]
  pub role: String,
  /// `Summary of earlier turns:\n`, then each earlier message as `User: …`, `Agent: …`,
  /// `System: …` or `Tool: …`, separated by blank lines, or `(none)` when there is nothing
  /// before the last message.
  pub content: String,
}

/// What {@link summarizePrefix} returns.
#[napi(object, object_from_js = false)]
pub struct PrefixSummary<'env> {
  /// The summary of every message before the last.
  pub summary_message: PrefixSummaryMessage,
  /// The caller's last message object (`[]` for no messages).
  #[napi(ts_type = "AnyMessageInput[]")]
  pub remaining_messages: Vec<Object<'env>>,
}

/// Replaces every message but the last with one system message that quotes them, as
/// CursorClaw's `summarizePrefix(messages, maxSummaryTokens)` does (no model call): `Summary
/// of earlier turns:` and a line `User: …` (user), `Agent: …` (assistant), `System: …` (system,
/// developer) or `Tool: …` (tool result) per message, separated by blank lines; an assistant's
/// tool calls follow its text as `Called name(arguments)` lines. The part after the first line
/// is cut to `4 × maxSummaryTokens` characters (UTF-16 code units, never half a character), so
/// its estimate `ceil(length / 4)` is at most `maxSummaryTokens`. `remainingMessages` holds the
/// last message, the caller's own object; with one message or none the summary reads
/// `(none)`. The input is not changed.
///
/// The summary is a `system` message, as OpenAI's and the AI SDK's formats have them; with
/// Anthropic's Messages API put its `content` in the request's `system` parameter.
///
/// ```ts
/// const { summaryMessage, remainingMessages } = summarizePrefix(messages, 200)
/// const request = applyMaxContextTokens([summaryMessage, ...remainingMessages], cap)
/// ```
///
/// # Errors
///
/// `INVALID_ARGUMENT` when `maxSummaryTokens` is not a non-negative integer; the errors of
/// reading `messages` (`INVALID_MESSAGE` naming the index and field).
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], maxSummaryTokens: number",
  ts_return_type = "Omit<PrefixSummary, 'remainingMessages'> & { remainingMessages: M[] }"
)]
pub fn summarize_prefix<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  max_summary_tokens: Unknown<'env>,
) -> Result<PrefixSummary<'env>> {
  let input = read::read_messages(env, messages)?;
  let max = integer_argument(&max_summary_tokens, "maxSummaryTokens", 0.0)
    .map_err(|e| error::throw(env, e))?;
  let content = summarize(&input.refs(), max);
  let last = input.len().checked_sub(1).map(|i| input.object(i)).transpose()?.flatten();
  let remaining_messages = last.into_iter().collect();
  Ok(PrefixSummary {
    summary_message: PrefixSummaryMessage { role: "system".into(), content },
    remaining_messages,
  })
}
