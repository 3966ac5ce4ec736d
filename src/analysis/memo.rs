//! What the analysis derives from one message alone and keeps with it ([`Message::derived`]):
//! file operations, error reports, span marks and what supersession reads, each computed once
//! however many conversations share the message (the binding's cache, the simulator's turns).

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::analysis::file_ops::{CallFacts, ResultFacts};
use crate::analysis::span_index::Marks;
use crate::analysis::supersession::{Accesses, ResultText};
use crate::model::message::Message;

/// The analysis's facts about one message, made empty with the message and filled as asked.
#[derive(Default)]
pub(crate) struct Facts {
  /// What the message's own text says about a file operation (see `file_ops`).
  pub(crate) result_facts: OnceLock<ResultFacts>,
  /// What each tool call's arguments and name say about a file operation (see `file_ops`).
  pub(crate) call_facts: OnceLock<Vec<CallFacts>>,
  /// Whether the content text reads as an error report (see `detect`).
  error_output: OnceLock<bool>,
  /// The span marks of the content text, for the first minimum length asked (see `span_index`).
  span_marks: OnceLock<Marks>,
  /// Each tool call's arguments parsed as a JSON object, if they are one (see `supersession`).
  pub(crate) call_arguments: OnceLock<Vec<Option<Map<String, Value>>>>,
  /// What the deduplicators read from the message's text (see `supersession`).
  pub(crate) result_text: OnceLock<ResultText>,
  /// Per tool call, whether it changes the shell's working directory, with the default tool
  /// names (see `supersession::Epochs`).
  pub(crate) directory_changes: OnceLock<Box<[bool]>>,
  /// What the deduplicators with the default tool names make of the message as a tool result,
  /// with the call and epoch it was found with (see `supersession::Accesses`).
  pub(crate) accesses: OnceLock<Accesses>,
}

/// The facts kept with `m`.
pub(crate) fn facts(m: &Message) -> &Facts {
  m.derived::<Facts>()
}

/// Whether the content text of `m` reads as an error report
/// ([`crate::analysis::detect::is_error_output`]), decided once.
pub fn is_error_output(m: &Message) -> bool {
  *facts(m).error_output.get_or_init(|| crate::analysis::detect::is_error_output(&m.content_text()))
}

/// The [`Marks`] of the content text of `m` for spans of `min_chars` characters, computed once
/// for the first length asked (the rolling context's `minQuotedChars`); another length is
/// computed on every call.
pub fn span_marks(m: &Message, min_chars: usize) -> Cow<'_, Marks> {
  let marks = facts(m).span_marks.get_or_init(|| Marks::new(&m.content_text(), min_chars));
  if marks.min_chars() == min_chars.max(1) {
    Cow::Borrowed(marks)
  } else {
    Cow::Owned(Marks::new(&m.content_text(), min_chars))
  }
}
