//! The message model: what the core reads from a chat message, whatever its format.
//!
//! A [`Message`] holds only what trimming needs (role, text, tool calls, which calls it
//! answers). The caller's own objects, with every field they carry, stay on the caller's
//! side: the core returns a [`crate::Plan`] of decisions by index, never rewritten messages.

use serde_json::Value;

use crate::error::{Error, Result};

/// The role of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
  /// `system`: the system prompt.
  System,
  /// `developer`: OpenAI's successor of `system` for reasoning models.
  Developer,
  /// `user`.
  User,
  /// `assistant`.
  Assistant,
  /// `tool`: the result of a tool call (OpenAI and AI SDK formats).
  Tool,
}

impl Role {
  /// Every role, in the order of their names in error messages.
  pub const ALL: [Role; 5] =
    [Role::System, Role::Developer, Role::User, Role::Assistant, Role::Tool];

  /// Parses a role name as it appears in a message.
  pub fn parse(name: &str) -> Option<Role> {
    match name {
      "system" => Some(Role::System),
      "developer" => Some(Role::Developer),
      "user" => Some(Role::User),
      "assistant" => Some(Role::Assistant),
      "tool" => Some(Role::Tool),
      _ => None,
    }
  }

  /// The role's name as it appears in a message.
  pub fn as_str(self) -> &'static str {
    match self {
      Role::System => "system",
      Role::Developer => "developer",
      Role::User => "user",
      Role::Assistant => "assistant",
      Role::Tool => "tool",
    }
  }

  /// Whether the role carries instructions (`system` or `developer`).
  pub fn is_instruction(self) -> bool {
    matches!(self, Role::System | Role::Developer)
  }
}

/// Text an AGENTS.md injection starts with (after leading whitespace, ASCII case-insensitive).
pub const AGENT_INSTRUCTION_MARKERS: &[&str] = &["# AGENTS.md", "<agents_md>", "<agents.md>"];
/// The `name` of a message carrying AGENTS.md (ASCII case-insensitive).
pub const AGENT_INSTRUCTION_NAME: &str = "AGENTS.md";

/// What the strategies ask of a message again and again (role, tool calls, results, summary),
/// in a few bits: a conversation's layout keeps one per message
/// ([`crate::model::conversation::Conversation::shape`]), so a pass over a long history reads a
/// byte a message, not each message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape(u16);

impl Shape {
  const INSTRUCTION: u16 = 1;
  const USER_TURN: u16 = 1 << 1;
  const TOOL_RESULT: u16 = 1 << 2;
  const SINGLE_RESULT: u16 = 1 << 3;
  const ASSISTANT: u16 = 1 << 4;
  const TOOL_CALLS: u16 = 1 << 5;
  const SUMMARY: u16 = 1 << 6;
  const AGENT_INSTRUCTION: u16 = 1 << 7;
  const RESULTS_APART: u16 = 1 << 8;

  /// The shape of `m`.
  pub fn of(m: &Message) -> Shape {
    let flags = [
      (m.role.is_instruction(), Self::INSTRUCTION),
      (m.is_user_turn(), Self::USER_TURN),
      (m.is_tool_result(), Self::TOOL_RESULT),
      (m.is_single_result(), Self::SINGLE_RESULT),
      (m.role == Role::Assistant, Self::ASSISTANT),
      (m.has_tool_calls(), Self::TOOL_CALLS),
      (m.is_summary, Self::SUMMARY),
      (m.is_agent_instruction(&[]), Self::AGENT_INSTRUCTION),
      (m.has_results_apart(), Self::RESULTS_APART),
    ];
    Shape(flags.iter().filter(|(on, _)| *on).fold(0, |bits, (_, bit)| bits | bit))
  }

  /// [`Role::is_instruction`]: a system or developer message.
  pub fn is_instruction(self) -> bool {
    self.0 & Self::INSTRUCTION != 0
  }
  /// [`Message::is_user_turn`].
  pub fn is_user_turn(self) -> bool {
    self.0 & Self::USER_TURN != 0
  }
  /// [`Message::is_tool_result`].
  pub fn is_tool_result(self) -> bool {
    self.0 & Self::TOOL_RESULT != 0
  }
  /// [`Message::is_single_result`].
  pub fn is_single_result(self) -> bool {
    self.0 & Self::SINGLE_RESULT != 0
  }
  /// An assistant message.
  pub fn is_assistant(self) -> bool {
    self.0 & Self::ASSISTANT != 0
  }
  /// [`Message::has_tool_calls`].
  pub fn has_tool_calls(self) -> bool {
    self.0 & Self::TOOL_CALLS != 0
  }
  /// [`Message::is_summary`].
  pub fn is_summary(self) -> bool {
    self.0 & Self::SUMMARY != 0
  }
  /// [`Message::is_agent_instruction`] with the crate's markers alone.
  pub fn is_agent_instruction(self) -> bool {
    self.0 & Self::AGENT_INSTRUCTION != 0
  }
  /// [`Message::has_results_apart`]: a tool result whose results a strategy shortens one by one.
  pub fn has_results_apart(self) -> bool {
    self.0 & Self::RESULTS_APART != 0
  }
}

/// One part of a multi-part content array.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Part {
  /// A text part (`{type: 'text', text}` and the like).
  Text(String),
  /// An image, audio, or another attachment whose content is not read as text (an Anthropic
  /// PDF `document`, an AI SDK `file`), with its token estimate, made when it was read (see
  /// [`crate::model::media`]: an image by the size in its header and its provider's formula,
  /// audio by its duration, a file [`crate::model::tokens::FILE_PART_TOKENS`]).
  Attachment {
    /// Its tokens.
    tokens: usize,
  },
  /// A tool result inside a message (an Anthropic `tool_result` block, an AI SDK `tool-result`
  /// part): the call it answers and its text.
  ToolResult {
    /// The id of the call it answers.
    call_id: String,
    /// The result's text.
    content: String,
    /// The tokens of the images and other attachments among the result's content (a
    /// screenshot, a document), each estimated as an attachment part is.
    attachment_tokens: usize,
    /// Whether the result is flagged as an error.
    is_error: bool,
  },
  /// An AI SDK tool approval (a tool with `needsApproval`): an assistant message's
  /// `tool-approval-request` for one of its calls, or a tool message's
  /// `tool-approval-response`. Not sent to the model (the SDK strips both before the provider
  /// sees the request), so it counts no token; it ties the response's message to the
  /// request's (see [`crate::model::conversation`]).
  Approval {
    /// The approval's id (`approvalId`), which the response names.
    id: String,
    /// The call a request is for (`toolCallId`); `None` for a response.
    call_id: Option<String>,
  },
  /// Any other part: its kind and the text it carries, if any.
  Other {
    /// The part's `type`.
    kind: String,
    /// Text the part carries, counted as tokens (e.g. `refusal`).
    text: Option<String>,
  },
}

/// The content of a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Content {
  /// `null` or absent (an assistant message that only calls tools).
  #[default]
  Empty,
  /// A plain string.
  Text(String),
  /// An array of parts.
  Parts(Vec<Part>),
}

/// A tool call made by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolCall {
  /// The call's id, which its result names.
  pub id: String,
  /// The tool's name.
  pub name: String,
  /// The arguments as JSON text (objects are serialized; strings are kept verbatim).
  pub arguments: String,
}

/// One tool result among several in a message ([`Message::several_results`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultRef<'m> {
  /// The index of its part in the message's content.
  pub part: usize,
  /// The id of the call it answers.
  pub call_id: &'m str,
  /// Its text.
  pub text: &'m str,
  /// Whether it is flagged as an error.
  pub is_error: bool,
}

/// A chat message as the core sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
  /// The role.
  pub role: Role,
  /// The content.
  pub content: Content,
  /// The tool calls of an assistant message.
  pub tool_calls: Vec<ToolCall>,
  /// The ids of the tool calls this message answers (OpenAI: the `tool_call_id` of a tool message).
  pub answers: Vec<String>,
  /// The `name` field.
  pub name: Option<String>,
  /// Whether the message is flagged as an error (`is_error: true` or `isError: true`).
  pub is_error: bool,
  /// Whether the message is a summary of earlier content: flagged `_summary: true` or
  /// `isSummary: true`, or its text starts with [`SUMMARY_MARKER`].
  pub is_summary: bool,
  /// Values derived from the message, computed once (token counts per encoding, fingerprint).
  pub memo: Memo,
}

/// Values derived from a message and computed at most once: a message kept in the binding's
/// cache is counted once however many turns it survives. Ignored by `==` and `Debug`; a clone
/// starts empty. Do not change a message's fields after it has been counted: build a new one
/// (or clone it, then change the clone).
#[derive(Default)]
pub struct Memo {
  pub(crate) tokens: [std::sync::OnceLock<u32>; crate::model::tokens::ENCODING_COUNT],
  fingerprint: std::sync::OnceLock<u64>,
  /// Each result of a message of several results as a message of its own
  /// ([`Message::split_results`]), with its own memo.
  split: std::sync::OnceLock<Box<[Message]>>,
  /// The line count of the content text.
  pub(crate) line_count: std::sync::OnceLock<usize>,
  /// What a later layer derives from the message alone and keeps with it, of a type the model
  /// does not know ([`Message::derived`]; the analysis's facts: file operations, span marks,
  /// what supersession reads from a result).
  derived: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
  /// The file paths each tool call's arguments name (see `strategy::rolling::argument_paths`).
  pub(crate) call_paths: std::sync::OnceLock<Vec<Vec<String>>>,
  /// The content text cut to a token limit in an encoding, for the first limit and encoding
  /// asked (see `strategy::rolling`).
  pub(crate) cut:
    std::sync::OnceLock<(usize, crate::model::tokens::Encoding, Option<crate::model::cut::Cut>)>,
  /// The content text cut to [`crate::model::cut::MIN_CUT_BUDGET`] in an encoding, for the first
  /// encoding asked (see `strategy::priority`: every unit it cuts but the last is cut so far).
  pub(crate) min_cut:
    std::sync::OnceLock<(crate::model::tokens::Encoding, Option<crate::model::cut::Cut>)>,
  /// What cuts of other sizes remember of the content text (see `cut::CutMemo`).
  pub(crate) cut_memo: std::sync::Mutex<crate::model::cut::CutMemo>,
  /// The length of the content text in UTF-16 code units (JavaScript's `length`).
  utf16_len: std::sync::OnceLock<usize>,
  /// The content's tokens per encoding (the message's, less the overheads).
  pub(crate) content_tokens: [std::sync::OnceLock<u32>; crate::model::tokens::BASE_ENCODING_COUNT],
}

impl Clone for Memo {
  fn clone(&self) -> Memo {
    Memo::default()
  }
}

impl PartialEq for Memo {
  fn eq(&self, _: &Memo) -> bool {
    true
  }
}

impl Eq for Memo {}

impl std::fmt::Debug for Memo {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.write_str("Memo")
  }
}

/// The text a summary message starts with (after leading whitespace) to be recognised as one,
/// whatever its flags.
pub const SUMMARY_MARKER: &str = "[context-trim summary]";

impl AsRef<Message> for Message {
  fn as_ref(&self) -> &Message {
    self
  }
}

impl Message {
  /// A message with the given role and text content and nothing else.
  pub fn text(role: Role, text: impl Into<String>) -> Self {
    Message {
      role,
      content: Content::Text(text.into()),
      tool_calls: Vec::new(),
      answers: Vec::new(),
      name: None,
      is_error: false,
      memo: Memo::default(),
      is_summary: false,
    }
  }

  /// An estimate of the bytes the message holds: its own size and the bytes of every string in
  /// it (content, tool calls, answered ids, name), plus a fixed allowance per part and call for
  /// the allocator's bookkeeping. Values its memo computes later are not counted, but for the
  /// copies of its results that a message whose results are apart keeps once a strategy reads it
  /// ([`Message::split_results`], as large as the results): counted up front. The binding
  /// bounds its message cache by this.
  pub fn footprint(&self) -> usize {
    // Per heap allocation: the allocator's size classes and headers, measured at about this.
    const ALLOCATION: usize = 16;
    let string = |s: &String| if s.is_empty() { 0 } else { s.len() + ALLOCATION };
    let content = match &self.content {
      Content::Empty => 0,
      Content::Text(text) => string(text),
      Content::Parts(parts) => parts
        .iter()
        .map(|part| {
          std::mem::size_of::<Part>()
            + match part {
              Part::Text(text) => string(text),
              Part::Attachment { .. } => 0,
              Part::ToolResult { call_id, content, .. } => string(call_id) + string(content),
              Part::Other { kind, text } => string(kind) + text.as_ref().map_or(0, string),
              Part::Approval { id, call_id } => string(id) + call_id.as_ref().map_or(0, string),
            }
        })
        .sum::<usize>(),
    };
    let calls = self
      .tool_calls
      .iter()
      .map(|c| {
        std::mem::size_of::<ToolCall>() + string(&c.id) + string(&c.name) + string(&c.arguments)
      })
      .sum::<usize>();
    let answers =
      self.answers.iter().map(|a| std::mem::size_of::<String>() + string(a)).sum::<usize>();
    // Each result of a message whose results are apart, as a message of its own: one part,
    // one answered id.
    let split = match &self.content {
      Content::Parts(parts) if self.has_results_apart() => parts
        .iter()
        .map(|part| match part {
          Part::ToolResult { call_id, content, .. } => {
            std::mem::size_of::<Message>()
              + std::mem::size_of::<Part>()
              + std::mem::size_of::<String>()
              + 2 * string(call_id)
              + string(content)
          }
          _ => 0,
        })
        .sum::<usize>(),
      _ => 0,
    };
    std::mem::size_of::<Message>()
      + content
      + calls
      + answers
      + self.name.as_ref().map_or(0, string)
      + split
  }

  /// A 64-bit hash of everything the core reads from the message (role, content, tool calls,
  /// the calls it answers, name, flags), computed once. Equal messages have equal
  /// fingerprints, on every run (SipHash with fixed keys); a different fingerprint means the
  /// message changed. Used to recognise a message seen on an earlier call (see
  /// [`crate::strategy::cache_policy`]).
  pub fn fingerprint(&self) -> u64 {
    *self.memo.fingerprint.get_or_init(|| {
      use std::hash::{Hash, Hasher};
      let mut h = std::hash::DefaultHasher::new();
      self.role.hash(&mut h);
      self.content.hash(&mut h);
      self.tool_calls.hash(&mut h);
      self.answers.hash(&mut h);
      self.name.hash(&mut h);
      self.is_error.hash(&mut h);
      self.is_summary.hash(&mut h);
      h.finish()
    })
  }

  /// Whether this message is a tool result.
  pub fn is_tool_result(&self) -> bool {
    self.role == Role::Tool || !self.answers.is_empty()
  }

  /// Whether this message answers something: a tool call, or an AI SDK tool approval (a
  /// `tool-approval-response`). A tool message that answers nothing names no call.
  pub fn answers_anything(&self) -> bool {
    !self.answers.is_empty() || self.approval_responses().next().is_some()
  }

  /// Whether this is a user message that is not a tool result: a turn the user opened (what a
  /// format that wants a user message first wants first).
  pub fn is_user_turn(&self) -> bool {
    self.role == Role::User && self.answers.is_empty()
  }

  /// Whether this is a tool result answering exactly one call, whose text is that result's
  /// alone: one whose content a strategy may replace. A message answering several would get one
  /// text for all (the head of one result and the tail of another), and a text block beside the
  /// result block (Anthropic) would be cut into the result and kept beside it too. An OpenAI
  /// tool message's text parts are its result: such a message is a single result.
  pub fn is_single_result(&self) -> bool {
    let text_beside = match &self.content {
      Content::Parts(parts) if parts.iter().any(|p| matches!(p, Part::ToolResult { .. })) => {
        parts.iter().any(|p| match p {
          Part::Text(t) => !t.is_empty(),
          Part::Other { text, .. } => text.as_deref().is_some_and(|t| !t.is_empty()),
          Part::Attachment { .. } | Part::ToolResult { .. } | Part::Approval { .. } => false,
        })
      }
      _ => false,
    };
    self.is_tool_result() && self.answers.len() == 1 && !text_beside
  }

  /// Whether this is a tool result whose results are parts of its content, and not a single
  /// result ([`Message::is_single_result`]): parallel results in one Anthropic or AI SDK
  /// message, or a result block beside a text block. A strategy shortens such a message result
  /// by result ([`crate::plan::Replacement::results`]), each on its own text
  /// ([`Message::split_results`]), its other parts kept.
  pub fn has_results_apart(&self) -> bool {
    self.is_tool_result()
      && !self.is_single_result()
      && self.parts().iter().any(|p| matches!(p, Part::ToolResult { .. }))
  }

  /// The tool results of a message that answers several calls (parallel calls: an Anthropic
  /// user message of `tool_result` blocks, an AI SDK tool message of `tool-result` parts), each
  /// on its own: empty for any other message, which the analyses read whole.
  pub fn several_results(&self) -> Vec<ResultRef<'_>> {
    match &self.content {
      Content::Parts(parts) if self.answers.len() > 1 => parts
        .iter()
        .enumerate()
        .filter_map(|(part, p)| match p {
          Part::ToolResult { call_id, content, is_error, .. } => {
            Some(ResultRef { part, call_id, text: content, is_error: *is_error })
          }
          _ => None,
        })
        .collect(),
      _ => Vec::new(),
    }
  }

  /// The AI SDK tool approvals the message requests: (approval id, call id) of each
  /// `tool-approval-request` part.
  pub fn approval_requests(&self) -> impl Iterator<Item = (&str, &str)> {
    self.parts().iter().filter_map(|p| match p {
      Part::Approval { id, call_id: Some(call) } => Some((id.as_str(), call.as_str())),
      _ => None,
    })
  }

  /// The ids of the AI SDK tool approvals the message responds to (its
  /// `tool-approval-response` parts).
  pub fn approval_responses(&self) -> impl Iterator<Item = &str> {
    self.parts().iter().filter_map(|p| match p {
      Part::Approval { id, call_id: None } => Some(id.as_str()),
      _ => None,
    })
  }

  /// The content's parts (none for a string or empty content).
  fn parts(&self) -> &[Part] {
    match &self.content {
      Content::Parts(parts) => parts,
      _ => &[],
    }
  }

  /// Each result of a message whose results are apart ([`Message::has_results_apart`]: of a
  /// message of several results, [`Message::several_results`]) as a tool message of its own,
  /// answering its call with its content and error flag: the conversation as the same results
  /// one message each would be (OpenAI), which the analyses that read single results
  /// (supersession) and the strategies that shorten results read instead. Made once, kept in
  /// the memo with theirs. Empty for any other message.
  pub fn split_results(&self) -> &[Message] {
    self.memo.split.get_or_init(|| {
      let Content::Parts(parts) = &self.content else { return Box::default() };
      if !self.has_results_apart() {
        return Box::default();
      }
      parts
        .iter()
        .filter_map(|p| match p {
          Part::ToolResult { call_id, is_error, .. } => Some(Message {
            role: Role::Tool,
            content: Content::Parts(vec![p.clone()]),
            tool_calls: Vec::new(),
            answers: vec![call_id.clone()],
            name: None,
            is_error: *is_error,
            is_summary: false,
            memo: Memo::default(),
          }),
          _ => None,
        })
        .collect()
    })
  }

  /// The text of tool result part `part` ([`ResultRef::part`]), if the content has one there.
  pub fn result_text(&self, part: usize) -> Option<&str> {
    match &self.content {
      Content::Parts(parts) => match parts.get(part)? {
        Part::ToolResult { content, .. } => Some(content),
        _ => None,
      },
      _ => None,
    }
  }

  /// Whether this is agent instructions (AGENTS.md): a user message (not a tool result) named
  /// [`AGENT_INSTRUCTION_NAME`] (any case), or whose text, after leading whitespace, starts with
  /// one of [`AGENT_INSTRUCTION_MARKERS`] or of `extra_markers` (ASCII case-insensitive).
  pub fn is_agent_instruction(&self, extra_markers: &[String]) -> bool {
    if !self.is_user_turn() {
      return false;
    }
    if self.name.as_deref().is_some_and(|n| n.trim().eq_ignore_ascii_case(AGENT_INSTRUCTION_NAME)) {
      return true;
    }
    let text = self.content_text();
    let start = text.trim_start();
    let starts_with = |marker: &str| {
      !marker.is_empty()
        && start.len() >= marker.len()
        && start.as_bytes()[..marker.len()].eq_ignore_ascii_case(marker.as_bytes())
    };
    AGENT_INSTRUCTION_MARKERS.iter().any(|m| starts_with(m))
      || extra_markers.iter().any(|m| starts_with(m.trim_start()))
  }

  /// Whether this message calls tools.
  pub fn has_tool_calls(&self) -> bool {
    !self.tool_calls.is_empty()
  }

  /// The text of the content: the string, or the text parts joined by newlines.
  pub fn content_text(&self) -> std::borrow::Cow<'_, str> {
    match &self.content {
      Content::Empty => "".into(),
      Content::Text(t) => t.as_str().into(),
      Content::Parts(parts) => {
        let mut texts = parts.iter().filter_map(|p| match p {
          Part::Text(t) | Part::ToolResult { content: t, .. } => Some(t.as_str()),
          Part::Other { text: Some(t), .. } => Some(t.as_str()),
          _ => None,
        });
        match (texts.next(), texts.next()) {
          (None, _) => "".into(),
          (Some(one), None) => one.into(),
          (Some(a), Some(b)) => {
            let mut s = String::with_capacity(a.len() + b.len() + 1);
            s.push_str(a);
            s.push('\n');
            s.push_str(b);
            for t in texts {
              s.push('\n');
              s.push_str(t);
            }
            s.into()
          }
        }
      }
    }
  }

  /// The first `chars` characters of the content text.
  pub fn preview(&self, chars: usize) -> String {
    self.content_text().chars().take(chars).collect()
  }

  /// The number of lines of the content text (newlines + 1), counted once.
  pub fn line_count(&self) -> usize {
    *self.memo.line_count.get_or_init(|| self.content_text().matches('\n').count() + 1)
  }

  /// The length of the content text in UTF-16 code units (JavaScript's `string.length`),
  /// counted once.
  pub fn content_utf16_len(&self) -> usize {
    *self.memo.utf16_len.get_or_init(|| self.content_text().chars().map(char::len_utf16).sum())
  }

  /// What a later layer derives from this message alone and keeps with it: a `T` made by
  /// `Default` on the first call, then the same one (the analysis keeps its facts there, each
  /// computed once however many conversations share the message). One type claims the slot: the
  /// analysis's, whose facts are all fields of it.
  ///
  /// # Panics
  ///
  /// If another type already holds the slot (a programming error, never input data).
  pub fn derived<T: std::any::Any + Send + Sync + Default>(&self) -> &T {
    let slot = self.memo.derived.get_or_init(|| Box::new(T::default()));
    match slot.downcast_ref::<T>() {
      Some(value) => value,
      None => panic!("a message's derived slot holds one type"),
    }
  }

  /// Parses an OpenAI Chat Completions message.
  ///
  /// Unknown fields are ignored (the caller keeps them on its own objects).
  ///
  /// # Errors
  ///
  /// An [`Error`] naming `index` and the field when the value is not an object, the role is
  /// missing or unknown, the content is of the wrong type, or a tool call lacks its id or name.
  pub fn from_json(value: &Value, index: usize) -> Result<Message> {
    let obj = match value {
      Value::Object(o) => o,
      other => {
        return Err(Error::message(
          index,
          "",
          format!("must be an object, got {}", type_name(other)),
        ))
      }
    };
    let role = match obj.get("role") {
      None | Some(Value::Null) => return Err(Error::message(index, "role", "is required")),
      Some(Value::String(s)) => Role::parse(s).ok_or_else(|| {
        Error::message(
          index,
          "role",
          format!("must be one of system, developer, user, assistant, tool, got {}", quote(s)),
        )
      })?,
      Some(other) => {
        return Err(Error::message(
          index,
          "role",
          format!("must be a string, got {}", type_name(other)),
        ))
      }
    };
    let content = parse_content(obj.get("content"), index)?;
    let tool_calls = match obj.get("tool_calls") {
      None | Some(Value::Null) => Vec::new(),
      Some(Value::Array(calls)) => calls
        .iter()
        .enumerate()
        .map(|(i, c)| parse_tool_call(c, index, i))
        .collect::<Result<_>>()?,
      Some(other) => {
        return Err(Error::message(
          index,
          "tool_calls",
          format!("must be an array, got {}", type_name(other)),
        ))
      }
    };
    let answers = match optional_string(obj.get("tool_call_id"), index, "tool_call_id")? {
      Some(id) => vec![id],
      None => Vec::new(),
    };
    let name = optional_string(obj.get("name"), index, "name")?;
    let is_error = flag(obj.get("is_error")) || flag(obj.get("isError"));
    let mut message = Message {
      role,
      content,
      tool_calls,
      answers,
      name,
      is_error,
      is_summary: false,
      memo: Memo::default(),
    };
    message.is_summary = is_summary(value, &message);
    Ok(message)
  }
}

/// Whether a message is a summary: flagged `_summary: true` or `isSummary: true` on `value`, or
/// its text starts with [`SUMMARY_MARKER`].
pub(crate) fn is_summary(value: &Value, message: &Message) -> bool {
  flag(value.get("_summary"))
    || flag(value.get("isSummary"))
    || message.content_text().trim_start().starts_with(SUMMARY_MARKER)
}

fn flag(v: Option<&Value>) -> bool {
  matches!(v, Some(Value::Bool(true)))
}

fn parse_content(v: Option<&Value>, index: usize) -> Result<Content> {
  match v {
    None | Some(Value::Null) => Ok(Content::Empty),
    Some(Value::String(s)) => Ok(Content::Text(s.clone())),
    Some(Value::Array(parts)) => parts
      .iter()
      .enumerate()
      .map(|(i, p)| parse_part(p, index, i))
      .collect::<Result<_>>()
      .map(Content::Parts),
    Some(other) => Err(Error::message(
      index,
      "content",
      format!("must be a string, an array of content parts or null, got {}", type_name(other)),
    )),
  }
}

fn parse_part(v: &Value, index: usize, i: usize) -> Result<Part> {
  let obj = match v {
    Value::Object(o) => o,
    // A bare string inside a content array is accepted as a text part.
    Value::String(s) => return Ok(Part::Text(s.clone())),
    other => {
      return Err(Error::message(
        index,
        format!("content[{i}]"),
        format!("must be a content part object, got {}", type_name(other)),
      ))
    }
  };
  let kind = match obj.get("type") {
    Some(Value::String(k)) => k.as_str(),
    None | Some(Value::Null) => {
      return Err(Error::message(index, format!("content[{i}].type"), "is required"));
    }
    Some(other) => {
      return Err(Error::message(
        index,
        format!("content[{i}].type"),
        format!("must be a string, got {}", type_name(other)),
      ))
    }
  };
  let text_field = |key: &str| -> Result<Option<String>> {
    match obj.get(key) {
      None | Some(Value::Null) => Ok(None),
      Some(Value::String(s)) => Ok(Some(s.clone())),
      Some(other) => Err(Error::message(
        index,
        format!("content[{i}].{key}"),
        format!("must be a string, got {}", type_name(other)),
      )),
    }
  };
  Ok(match kind {
    "text" | "input_text" | "output_text" => match text_field("text")? {
      Some(t) => Part::Text(t),
      None => {
        return Err(Error::message(
          index,
          format!("content[{i}].text"),
          "is required for a text part",
        ))
      }
    },
    "image_url" | "image" | "input_image" | "input_audio" | "file" | "input_file" => {
      crate::model::format::attachment_part(kind, obj, crate::model::media::Provider::OpenAi)
    }
    "refusal" => Part::Other { kind: kind.to_string(), text: text_field("refusal")? },
    _ => crate::model::format::unknown_part(kind, obj),
  })
}

fn parse_tool_call(v: &Value, index: usize, i: usize) -> Result<ToolCall> {
  let field = |f: &str| format!("tool_calls[{i}]{f}");
  let obj = match v {
    Value::Object(o) => o,
    other => {
      return Err(Error::message(
        index,
        field(""),
        format!("must be an object, got {}", type_name(other)),
      ))
    }
  };
  let id = match obj.get("id") {
    Some(Value::String(s)) if !s.is_empty() => s.clone(),
    Some(Value::String(_)) => return Err(Error::message(index, field(".id"), "must not be empty")),
    None | Some(Value::Null) => return Err(Error::message(index, field(".id"), "is required")),
    Some(other) => {
      return Err(Error::message(
        index,
        field(".id"),
        format!("must be a string, got {}", type_name(other)),
      ))
    }
  };
  let function = match obj.get("function") {
    Some(Value::Object(f)) => f,
    None | Some(Value::Null) => {
      return Err(Error::message(index, field(".function"), "is required"))
    }
    Some(other) => {
      return Err(Error::message(
        index,
        field(".function"),
        format!("must be an object, got {}", type_name(other)),
      ))
    }
  };
  let name = match function.get("name") {
    Some(Value::String(s)) => s.clone(),
    None | Some(Value::Null) => {
      return Err(Error::message(index, field(".function.name"), "is required"))
    }
    Some(other) => {
      return Err(Error::message(
        index,
        field(".function.name"),
        format!("must be a string, got {}", type_name(other)),
      ))
    }
  };
  let arguments = match function.get("arguments") {
    None | Some(Value::Null) => String::new(),
    Some(Value::String(s)) => s.clone(),
    Some(v @ (Value::Object(_) | Value::Array(_))) => v.to_string(),
    Some(other) => {
      return Err(Error::message(
        index,
        field(".function.arguments"),
        format!("must be a JSON string or an object, got {}", type_name(other)),
      ))
    }
  };
  Ok(ToolCall { id, name, arguments })
}

fn optional_string(v: Option<&Value>, index: usize, field: &str) -> Result<Option<String>> {
  match v {
    None | Some(Value::Null) => Ok(None),
    Some(Value::String(s)) => Ok(Some(s.clone())),
    Some(other) => {
      Err(Error::message(index, field, format!("must be a string, got {}", type_name(other))))
    }
  }
}

/// The JavaScript-style name of a JSON value's type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
  match v {
    Value::Null => "null",
    Value::Bool(_) => "boolean",
    Value::Number(_) => "number",
    Value::String(_) => "string",
    Value::Array(_) => "array",
    Value::Object(_) => "object",
  }
}

/// Quotes a string for an error message, shortened to 40 characters.
pub(crate) fn quote(s: &str) -> String {
  let mut out: String = s.chars().take(40).collect();
  if out.len() < s.len() {
    out.push('…');
  }
  format!("{out:?}")
}

/// Parses a JSON array of OpenAI messages.
///
/// # Errors
///
/// An [`Error`] when `value` is not an array or one of its messages is invalid.
pub fn messages_from_json(value: &Value) -> Result<Vec<Message>> {
  match value {
    Value::Array(items) => {
      items.iter().enumerate().map(|(i, m)| Message::from_json(m, i)).collect()
    }
    other => Err(Error::new(
      crate::error::ErrorKind::InvalidMessages,
      "messages",
      format!("must be an array, got {}", type_name(other)),
    )),
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn footprint_grows_with_every_string_the_message_holds() {
    let short = Message::text(Role::User, "abc");
    let long = Message::text(Role::User, "abc".repeat(1000));
    assert_eq!(long.footprint() - short.footprint(), 2997);
    let empty = Message::text(Role::User, "");
    assert_eq!(empty.footprint(), std::mem::size_of::<Message>());
    let call = |args: &str| {
      Message::from_json(
        &json!({"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_1", "function": {"name": "read_file", "arguments": args}}]}),
        0,
      )
      .unwrap()
    };
    assert_eq!(call("{\"path\":\"a.rs\"}").footprint() - call("{}").footprint(), 13);
    assert!(call("{}").footprint() > empty.footprint() + std::mem::size_of::<ToolCall>());
    let parts = Message::from_json(
      &json!({"role": "user", "content": [{"type": "text", "text": "x".repeat(500)}, {"type": "image_url"}]}),
      0,
    )
    .unwrap();
    assert!(parts.footprint() >= empty.footprint() + 500 + 2 * std::mem::size_of::<Part>());
    // Parallel results are counted twice: once in the message, once in the copies of its
    // results that the strategies read (its split view), which the message keeps.
    let results = |n: usize| {
      let block =
        |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "r".repeat(n)});
      let m = json!([{"role": "user", "content": [block("a"), block("b")]}]);
      let (_, mut parsed) =
        crate::model::format::parse_messages(&m, Some(crate::model::format::Format::Anthropic))
          .unwrap();
      parsed.remove(0)
    };
    let grown = results(1000).footprint() - results(0).footprint();
    assert_eq!(grown, 2 * 2 * (1000 + 16));
    assert_eq!(results(10).split_results().len(), 2);
  }

  fn err(v: Value) -> String {
    Message::from_json(&v, 2).unwrap_err().to_string()
  }

  #[test]
  fn parses_every_openai_shape() {
    let m = Message::from_json(
      &json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"x\"}"}},
        {"id": "b", "function": {"name": "ls", "arguments": {"dir": "."}}}
      ], "extra": 1}),
      0,
    )
    .unwrap();
    assert_eq!(m.role, Role::Assistant);
    assert_eq!(m.content, Content::Empty);
    assert_eq!(m.tool_calls[0].arguments, "{\"path\":\"x\"}");
    assert_eq!(m.tool_calls[1].arguments, "{\"dir\":\".\"}");
    let t = Message::from_json(
      &json!({"role": "tool", "tool_call_id": "a", "content": "ok", "isError": true}),
      1,
    )
    .unwrap();
    assert!(t.is_tool_result() && t.is_error);
    assert_eq!(t.answers, vec!["a".to_string()]);
    let p = Message::from_json(
      &json!({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]}),
      0,
    )
    .unwrap();
    assert_eq!(p.content_text(), "a\nb");
  }

  #[test]
  fn fingerprints_tell_changed_messages_apart() {
    let parse = |v: Value| Message::from_json(&v, 0).unwrap();
    let a = parse(json!({"role": "tool", "tool_call_id": "a", "content": "ok"}));
    assert_eq!(
      a.fingerprint(),
      parse(json!({"role": "tool", "tool_call_id": "a", "content": "ok", "x": 1})).fingerprint()
    );
    assert_eq!(a.fingerprint(), a.clone().fingerprint());
    for other in [
      json!({"role": "tool", "tool_call_id": "a", "content": "ok!"}),
      json!({"role": "tool", "tool_call_id": "b", "content": "ok"}),
      json!({"role": "user", "content": "ok"}),
      json!({"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "ok"}]}),
      json!({"role": "tool", "tool_call_id": "a", "content": "ok", "is_error": true}),
      json!({"role": "tool", "tool_call_id": "a", "content": "ok", "name": "ls"}),
    ] {
      assert_ne!(a.fingerprint(), parse(other.clone()).fingerprint(), "{other}");
    }
    let call = |args: &str| {
      parse(
        json!({"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "ls", "arguments": args}}]}),
      )
    };
    assert_ne!(call("{}").fingerprint(), call("{ }").fingerprint());
  }

  #[test]
  fn summaries_are_recognised_by_flag_or_marker() {
    let parse = |v: Value| Message::from_json(&v, 0).unwrap().is_summary;
    assert!(parse(json!({"role": "user", "content": "x", "_summary": true})));
    assert!(parse(json!({"role": "assistant", "content": "x", "isSummary": true})));
    assert!(parse(json!({"role": "user", "content": "  [context-trim summary] 3 messages"})));
    assert!(parse(
      json!({"role": "user", "content": [{"type": "text", "text": "[context-trim summary] a"}]})
    ));
    assert!(!parse(json!({"role": "user", "content": "x", "_summary": "yes"})));
    assert!(!parse(json!({"role": "user", "content": "see [context-trim summary]"})));
  }

  #[test]
  fn errors_name_index_and_field() {
    assert_eq!(err(json!(null)), "messages[2]: must be an object, got null");
    assert_eq!(err(json!({"content": "x"})), "messages[2].role: is required");
    assert_eq!(
      err(json!({"role": "robot"})),
      "messages[2].role: must be one of system, developer, user, assistant, tool, got \"robot\""
    );
    assert_eq!(
      err(json!({"role": "user", "content": 5})),
      "messages[2].content: must be a string, an array of content parts or null, got number"
    );
    assert_eq!(
      err(json!({"role": "assistant", "tool_calls": {}})),
      "messages[2].tool_calls: must be an array, got object"
    );
    assert_eq!(
      err(json!({"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]})),
      "messages[2].tool_calls[0].id: is required"
    );
    assert_eq!(
      err(json!({"role": "assistant", "tool_calls": [{"id": "1", "function": {}}]})),
      "messages[2].tool_calls[0].function.name: is required"
    );
    assert_eq!(
      err(json!({"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "x", "arguments": 3}}]})),
      "messages[2].tool_calls[0].function.arguments: must be a JSON string or an object, got number"
    );
    assert_eq!(
      err(json!({"role": "user", "content": [1]})),
      "messages[2].content[0]: must be a content part object, got number"
    );
    assert_eq!(
      err(json!({"role": "tool", "tool_call_id": 1})),
      "messages[2].tool_call_id: must be a string, got number"
    );
    assert_eq!(
      messages_from_json(&json!({"a": 1})).unwrap_err().to_string(),
      "messages: must be an array, got object"
    );
  }
}
