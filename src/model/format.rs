//! Message formats: OpenAI Chat Completions (the default), Anthropic Messages and the Vercel
//! AI SDK `ModelMessage`, all read into the one core [`Message`] model.
//!
//! | | tool call | tool result |
//! | --- | --- | --- |
//! | OpenAI | assistant `tool_calls[{id, function:{name, arguments}}]` | `{role:'tool', tool_call_id, content}` |
//! | Anthropic | assistant block `{type:'tool_use', id, name, input}` | user block `{type:'tool_result', tool_use_id, content, is_error}` |
//! | AI SDK | assistant part `{type:'tool-call', toolCallId, toolName, input}` | `{role:'tool', content:[{type:'tool-result', toolCallId, toolName, output}]}` |
//!
//! `auto` detection looks for these format-specific shapes (see [`detect`]); it never guesses:
//! a conversation showing shapes of two formats is an error, and one showing none (plain text
//! messages) reads the same in every format, so it is read as OpenAI.

use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::model::json_body::JSON_TEXT_FIELD;
use crate::model::media::{self, Detail, Encoded, Kind, Provider};
use crate::model::message::{quote, type_name, Content, Message, Part, Role, ToolCall};
use crate::model::tokens::FILE_PART_TOKENS;

/// A message format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
  /// OpenAI Chat Completions.
  #[default]
  OpenAi,
  /// Anthropic Messages.
  Anthropic,
  /// Vercel AI SDK `ModelMessage` (v5 and later).
  AiSdk,
}

/// Where the results of an assistant message's tool calls must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
  /// In the run of tool-result messages directly after the calling message, before any other
  /// message (OpenAI Chat Completions, AI SDK).
  FollowingResults,
  /// In the one message directly after the calling message (Anthropic Messages: the
  /// `tool_result` blocks of the next user message).
  NextMessage,
}

/// The rules a provider enforces on a conversation, beyond the pairing of calls and results
/// that every format shares (each call answered once, no result without an earlier call, no
/// repeated call id within a message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
  /// Where results must be.
  pub placement: Placement,
  /// Whether text that is empty or only whitespace counts as no content (Anthropic rejects
  /// empty text blocks; OpenAI accepts `content: ''`).
  pub blank_text_is_empty: bool,
  /// Whether two consecutive messages may not have the same role.
  pub alternating_roles: bool,
  /// Whether the first message after the instructions (`system`/`developer`) must be a user
  /// message.
  pub first_must_be_user: bool,
  /// Whether a call id may not be used again by a later message. Within one message an id is
  /// never reused (its results could not be told apart); across messages OpenAI pairs results
  /// by position, and real agents (SWE-agent replays) do reuse ids.
  pub unique_call_ids: bool,
  /// Whether the instructions (`system`/`developer` messages) travel apart from the messages
  /// (Anthropic's `system` parameter), so that the request needs a message besides them.
  pub instructions_apart: bool,
}

impl Format {
  /// Every format, in the order of their names in error messages.
  pub const ALL: [Format; 3] = [Format::OpenAi, Format::Anthropic, Format::AiSdk];

  /// The rules of the format's provider.
  pub fn rules(self) -> Rules {
    match self {
      Format::OpenAi => Rules {
        placement: Placement::FollowingResults,
        blank_text_is_empty: false,
        alternating_roles: false,
        first_must_be_user: false,
        unique_call_ids: false,
        instructions_apart: false,
      },
      // Anthropic merges consecutive same-role turns, but requires a user message first,
      // rejects empty text blocks and wants tool_use ids unique in the request.
      Format::Anthropic => Rules {
        placement: Placement::NextMessage,
        blank_text_is_empty: true,
        alternating_roles: false,
        first_must_be_user: true,
        unique_call_ids: true,
        instructions_apart: true,
      },
      // The AI SDK checks that every tool-call has a tool-result; its messages are sent on to
      // the provider it is configured with, so only its own pairing rules are enforced here.
      Format::AiSdk => Rules {
        placement: Placement::FollowingResults,
        blank_text_is_empty: false,
        alternating_roles: false,
        first_must_be_user: false,
        unique_call_ids: false,
        instructions_apart: false,
      },
    }
  }

  /// Parses a `format` option: `openai`, `anthropic`, `ai-sdk`, or `auto` (`None`).
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `format` for any other value.
  pub fn parse_option(name: &str) -> Result<Option<Format>> {
    match name {
      "openai" => Ok(Some(Format::OpenAi)),
      "anthropic" => Ok(Some(Format::Anthropic)),
      "ai-sdk" => Ok(Some(Format::AiSdk)),
      "auto" => Ok(None),
      other => Err(Error::option(
        "format",
        format!("must be one of openai, anthropic, ai-sdk, auto, got {}", quote(other)),
      )),
    }
  }

  /// The format's name as the `format` option spells it.
  pub fn as_str(self) -> &'static str {
    match self {
      Format::OpenAi => "openai",
      Format::Anthropic => "anthropic",
      Format::AiSdk => "ai-sdk",
    }
  }

  /// Parses one message of this format.
  ///
  /// # Errors
  ///
  /// An `InvalidMessage` error naming `index` and the field.
  pub fn parse_message(self, value: &Value, index: usize) -> Result<Message> {
    let mut message = match self {
      Format::OpenAi => return Message::from_json(value, index),
      Format::Anthropic => anthropic_message(value, index)?,
      Format::AiSdk => ai_sdk_message(value, index)?,
    };
    message.is_summary = crate::model::message::is_summary(value, &message);
    Ok(message)
  }

  /// Checks a message its parser read ([`Format::parse_message`]) for what the parser lets
  /// through, so that `validateConversation` can report it, but that no provider accepts and no
  /// count can mean: no `content` at all (not even `null`) without tool calls (`{role: 'user',
  /// text: 'hi'}`), and, in the OpenAI format, a tool message without `tool_call_id`. A
  /// `content: null` stays valid (an assistant message that only calls tools, a refusal), and so
  /// does an assistant message with tool calls and no `content` key.
  ///
  /// # Errors
  ///
  /// An `InvalidMessage` error naming `index` and the field.
  pub fn check_message(self, value: &Value, message: &Message, index: usize) -> Result<()> {
    let Value::Object(o) = value else { return Ok(()) };
    if !o.contains_key("content") && message.tool_calls.is_empty() {
      return Err(Error::message(
        index,
        "content",
        "is required: a message without tool calls must have content",
      ));
    }
    if self == Format::OpenAi
      && message.role == Role::Tool
      && matches!(o.get("tool_call_id"), None | Some(Value::Null))
    {
      return Err(Error::message(
        index,
        "tool_call_id",
        "is required: a tool message must name the call it answers",
      ));
    }
    Ok(())
  }
}

/// Detects the format of `messages` from format-specific shapes.
///
/// Signals: OpenAI — a `tool_calls` field, a `tool_call_id`, parts of type `image_url`,
/// `input_audio` or `refusal`; Anthropic — blocks of type `tool_use`, `tool_result`,
/// `thinking`, `redacted_thinking` or `document`; AI SDK — parts of type `tool-call`,
/// `tool-result` or `reasoning`. (`text`, `image` and `file` parts exist in several formats and
/// say nothing.)
///
/// # Errors
///
/// An `InvalidOption` error naming `format` when two formats' shapes appear; it names the first
/// message showing each.
pub fn detect(messages: &[Value]) -> Result<Format> {
  let signals: Vec<Signals> = messages.iter().map(Signals::of).collect();
  detect_from(&signals)
}

/// The format-specific shapes one message shows: for each format, the first reason, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Signals([Option<&'static str>; 3]);

impl Signals {
  /// The shapes `message` shows.
  pub fn of(message: &Value) -> Signals {
    let mut out = Signals::default();
    for (format, why) in signals(message) {
      out.0[format as usize].get_or_insert(why);
    }
    out
  }

  /// The shape that shows `format`, if any.
  pub fn shows(&self, format: Format) -> Option<&'static str> {
    self.0[format as usize]
  }

  /// Whether no format-specific shape shows.
  pub fn is_empty(&self) -> bool {
    self.0.iter().all(Option::is_none)
  }
}

/// Detects the format from each message's [`Signals`] (see [`detect`]).
///
/// # Errors
///
/// As [`detect`].
pub fn detect_from(signals: &[Signals]) -> Result<Format> {
  let mut seen: [Option<(usize, &'static str)>; 3] = [None, None, None];
  for (i, s) in signals.iter().enumerate() {
    for (slot, why) in seen.iter_mut().zip(s.0) {
      if let (None, Some(why)) = (&slot, why) {
        *slot = Some((i, why));
      }
    }
  }
  let found: Vec<(Format, usize, &str)> = [Format::OpenAi, Format::Anthropic, Format::AiSdk]
    .into_iter()
    .filter_map(|f| seen[f as usize].map(|(i, why)| (f, i, why)))
    .collect();
  match found.as_slice() {
    [] => Ok(Format::OpenAi),
    [(f, _, _)] => Ok(*f),
    [(a, ia, wa), (b, ib, wb), ..] => Err(Error::option(
      "format",
      format!(
        "cannot detect the format: messages[{ia}] looks like {} ({wa}) but messages[{ib}] looks like {} ({wb}); pass format explicitly",
        a.as_str(),
        b.as_str()
      ),
    )),
  }
}

fn signals(m: &Value) -> Vec<(Format, &'static str)> {
  let mut out = Vec::new();
  let Value::Object(o) = m else { return out };
  if o.get("tool_calls").is_some_and(|v| !v.is_null()) {
    out.push((Format::OpenAi, "tool_calls"));
  }
  if o.get("tool_call_id").is_some_and(|v| !v.is_null()) {
    out.push((Format::OpenAi, "tool_call_id"));
  }
  if let Some(Value::Array(parts)) = o.get("content") {
    for p in parts {
      let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
      let signal = match kind {
        "image_url" | "input_audio" | "refusal" => {
          Some((Format::OpenAi, "an image_url/input_audio/refusal part"))
        }
        "tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "document" => {
          Some((Format::Anthropic, "a tool_use/tool_result/thinking block"))
        }
        k if is_server_tool_block(k) => Some((Format::Anthropic, "a server tool block")),
        "tool-call" | "tool-result" | "reasoning" => {
          Some((Format::AiSdk, "a tool-call/tool-result/reasoning part"))
        }
        _ => None,
      };
      out.extend(signal);
    }
  }
  out
}

fn object(value: &Value, index: usize) -> Result<&Map<String, Value>> {
  match value {
    Value::Object(o) => Ok(o),
    other => Err(Error::message(index, "", format!("must be an object, got {}", type_name(other)))),
  }
}

fn role(o: &Map<String, Value>, index: usize, allowed: &[Role]) -> Result<Role> {
  let names = allowed.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ");
  match o.get("role") {
    None | Some(Value::Null) => Err(Error::message(index, "role", "is required")),
    Some(Value::String(s)) => Role::parse(s).filter(|r| allowed.contains(r)).ok_or_else(|| {
      Error::message(index, "role", format!("must be one of {names}, got {}", quote(s)))
    }),
    Some(other) => {
      Err(Error::message(index, "role", format!("must be a string, got {}", type_name(other))))
    }
  }
}

fn string_field(o: &Map<String, Value>, key: &str, index: usize, path: &str) -> Result<String> {
  match o.get(key) {
    Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
    Some(Value::String(_)) => {
      Err(Error::message(index, format!("{path}.{key}"), "must not be empty"))
    }
    None | Some(Value::Null) => Err(Error::message(index, format!("{path}.{key}"), "is required")),
    Some(other) => Err(Error::message(
      index,
      format!("{path}.{key}"),
      format!("must be a string, got {}", type_name(other)),
    )),
  }
}

/// JSON text of a tool input: strings verbatim, anything else serialised.
fn input_text(v: Option<&Value>) -> String {
  match v {
    None | Some(Value::Null) => String::new(),
    Some(Value::String(s)) => s.clone(),
    Some(other) => other.to_string(),
  }
}

/// The text inside a tool result's content (a string, or text blocks/parts joined by newlines;
/// other values serialised) and the tokens of the attachments it holds ([`attachment`]), each
/// estimated for `provider`.
fn nested_content(v: Option<&Value>, provider: Provider) -> (String, usize) {
  match v {
    None | Some(Value::Null) => (String::new(), 0),
    Some(Value::String(s)) => (s.clone(), 0),
    Some(Value::Array(items)) => {
      let mut texts: Vec<&str> = Vec::new();
      let mut attachments = 0;
      for item in items {
        nested_item(item, &mut texts, &mut attachments, provider, 0);
      }
      (texts.join("\n"), attachments)
    }
    Some(other) => (other.to_string(), 0),
  }
}

/// Adds the text of one item of a tool result's content to `texts`, or the tokens of an
/// attachment to `attachments`; a search result's own content is read the same way, a few
/// levels deep.
fn nested_item<'v>(
  item: &'v Value,
  texts: &mut Vec<&'v str>,
  attachments: &mut usize,
  provider: Provider,
  depth: usize,
) {
  match item {
    Value::String(s) => texts.push(s),
    Value::Object(b) => match (b.get("text"), b.get("value")) {
      (Some(Value::String(t)), _) | (_, Some(Value::String(t))) => texts.push(t),
      _ => {
        let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(text) = document_text(kind, b) {
          texts.extend(text);
        } else if attachment(kind) {
          *attachments += attachment_tokens(kind, b, provider);
        } else if let (Some(Value::Array(inner)), true) = (b.get("content"), depth < 4) {
          for item in inner {
            nested_item(item, texts, attachments, provider, depth + 1);
          }
        }
      }
    },
    _ => {}
  }
}

/// The text of an Anthropic `document` block whose source is text: a `text` source's `data`,
/// or the text blocks of a `content` source (a string, or blocks). `None` for any other block
/// or source (a PDF, a URL, a file id), which counts as an attachment. The readers read a
/// `data` field only in an object whose `type` is `text` (see `json_body::reads_data`), so a
/// base64 attachment's bytes are never copied.
fn document_text<'v>(kind: &str, block: &'v Map<String, Value>) -> Option<Vec<&'v str>> {
  if kind != "document" {
    return None;
  }
  let source = block.get("source")?.as_object()?;
  match (source.get("type")?.as_str()?, source.get("data"), source.get("content")) {
    ("text", Some(Value::String(data)), _) => Some(vec![data]),
    ("content", _, Some(Value::String(text))) => Some(vec![text]),
    ("content", _, Some(Value::Array(items))) => Some(
      items
        .iter()
        .filter_map(|item| match item {
          Value::String(s) => Some(s.as_str()),
          Value::Object(b) => b.get("text").and_then(Value::as_str),
          _ => None,
        })
        .collect(),
    ),
    _ => None,
  }
}

/// Whether a content item of `kind` inside a tool result is an image or a file whose content is
/// not read as text, counted as an attachment ([`attachment_tokens`]): Anthropic `image` and
/// `document` blocks, AI SDK `image` and `file` parts and a tool output's `media`,
/// `image-data`, `image-url`, `file-data`, `file-url`, `file-id` and `image-file-id` parts.
pub(crate) fn attachment(kind: &str) -> bool {
  matches!(
    kind,
    "image"
      | "document"
      | "file"
      | "media"
      | "image-data"
      | "image-url"
      | "file-data"
      | "file-url"
      | "file-id"
      | "image-file-id"
  )
}

/// The part types some format reads, in any of them: a content part of another type is read
/// whole by the readers (its JSON text, under [`JSON_TEXT_FIELD`]) and counted by that text
/// ([`unknown_part`]).
pub(crate) const KNOWN_PART_TYPES: &[&str] = &[
  "text",
  "input_text",
  "output_text",
  "image_url",
  "image",
  "input_image",
  "input_audio",
  "file",
  "input_file",
  "refusal",
  "document",
  "search_result",
  "thinking",
  "redacted_thinking",
  "tool_use",
  "tool_result",
  "reasoning",
  "tool-call",
  "tool-result",
  "tool-approval-request",
  "tool-approval-response",
];

/// Whether a content part of type `kind` is one some format reads ([`KNOWN_PART_TYPES`], or an
/// Anthropic server tool's block).
pub(crate) fn is_known_part_type(kind: &str) -> bool {
  KNOWN_PART_TYPES.contains(&kind) || is_server_tool_block(kind)
}

/// A content part of a type the format does not read (`{type: 'weird', data: …}`), counted by
/// its JSON text: the text the readers took of the whole part ([`JSON_TEXT_FIELD`]), or, for a
/// value parsed directly, the part's own JSON. Never nothing.
pub(crate) fn unknown_part(kind: &str, fields: &Map<String, Value>) -> Part {
  let text = match fields.get(JSON_TEXT_FIELD) {
    Some(Value::String(json)) => json.clone(),
    _ => serde_json::to_string(fields).unwrap_or_default(),
  };
  Part::Other { kind: kind.into(), text: Some(text) }
}

/// An attachment part ([`attachment_tokens`]).
pub(crate) fn attachment_part(kind: &str, fields: &Map<String, Value>, provider: Provider) -> Part {
  Part::Attachment { tokens: attachment_tokens(kind, fields, provider) }
}

/// The data of an attachment part, wherever its format puts it: an OpenAI `image_url` (an
/// object's `url`, or a string) or `input_audio.data`, an Anthropic `source` (`data` or `url`),
/// an AI SDK `image` or `data`, a tool output's `data` or `url`.
fn attachment_data(f: &Map<String, Value>) -> Option<Encoded<'_>> {
  for key in ["image_url", "input_audio", "source"] {
    if let Some(Value::Object(o)) = f.get(key) {
      return Encoded::field(o, "url").or_else(|| Encoded::field(o, "data"));
    }
  }
  ["image_url", "image", "data", "url"].iter().find_map(|key| Encoded::field(f, key))
}

/// The tokens of an attachment part of `kind` (an image, audio or a file; see
/// [`crate::model::media`]) estimated for `provider`: an image by the pixel size in its data's
/// header, audio by its duration, any other file [`FILE_PART_TOKENS`]. What it is comes from
/// its type (`image_url`, `image`, `input_audio`, …) or else its media type (`mediaType`,
/// `media_type`, a data URL's).
pub(crate) fn attachment_tokens(kind: &str, f: &Map<String, Value>, provider: Provider) -> usize {
  let data = attachment_data(f);
  let named = ["mediaType", "media_type"]
    .iter()
    .find_map(|k| f.get(*k).or_else(|| f.get("source").and_then(|s| s.get(*k))))
    .and_then(Value::as_str);
  let media_type = named.or_else(|| data.and_then(Encoded::payload).and_then(|p| p.media_type));
  let what = match kind {
    "image_url" | "input_image" | "image" | "image-data" | "image-url" | "image-file-id" => {
      Kind::Image
    }
    "input_audio" => Kind::Audio,
    _ => Kind::of_media_type(media_type).unwrap_or(Kind::File),
  };
  match what {
    Kind::Image => media::encoded_image_tokens(data, Detail::of(f), provider),
    Kind::Audio => {
      let format = f.get("input_audio").and_then(|a| a.get("format")).and_then(Value::as_str);
      media::encoded_audio_tokens(data, format.or(media_type), provider)
    }
    Kind::File => FILE_PART_TOKENS,
  }
}

/// Reads one typed item of a content array (its `type`, its fields, where it is) into the
/// message: a part to keep in `content`, or `None` when it went elsewhere (a tool call).
type PartReader = fn(&str, &Map<String, Value>, &Block, &mut Message) -> Result<Option<Part>>;

/// The envelope the Anthropic and AI SDK formats share: a role among `roles`, and content that
/// is a string or an array of typed objects, each read by `part` into the message. `noun`
/// names the array's items in errors (`content block`, `part`).
fn block_message(
  value: &Value,
  index: usize,
  roles: &[Role],
  noun: &str,
  part: PartReader,
) -> Result<Message> {
  let o = object(value, index)?;
  let role = role(o, index, roles)?;
  let mut m = Message::text(role, "");
  m.content = Content::Empty;
  let items = match o.get("content") {
    None | Some(Value::Null) => return Ok(m),
    Some(Value::String(s)) => {
      m.content = Content::Text(s.clone());
      return Ok(m);
    }
    Some(Value::Array(items)) => items,
    Some(other) => {
      let detail = format!("must be a string or an array of {noun}s, got {}", type_name(other));
      return Err(Error::message(index, "content", detail));
    }
  };
  let mut parts = Vec::with_capacity(items.len());
  for (i, item) in items.iter().enumerate() {
    let path = format!("content[{i}]");
    let Value::Object(fields) = item else {
      let detail = format!("must be a {noun} object, got {}", type_name(item));
      return Err(Error::message(index, path, detail));
    };
    let Some(Value::String(kind)) = fields.get("type") else {
      return Err(Error::message(
        index,
        format!("{path}.type"),
        "is required and must be a string",
      ));
    };
    let block = Block { index, path, role };
    parts.extend(part(kind, fields, &block, &mut m)?);
  }
  m.content = Content::Parts(parts);
  Ok(m)
}

/// Where a block being read sits, for its errors.
struct Block {
  index: usize,
  path: String,
  role: Role,
}

impl Block {
  fn string(&self, fields: &Map<String, Value>, key: &str) -> Result<String> {
    string_field(fields, key, self.index, &self.path)
  }

  fn text(&self, fields: &Map<String, Value>, key: &str) -> Result<String> {
    text_of(fields, key, self.index, &self.path)
  }

  /// A tool call, which only an assistant message may make.
  fn tool_call(
    &self,
    kind: &str,
    id: String,
    name: String,
    input: Option<&Value>,
  ) -> Result<ToolCall> {
    if self.role != Role::Assistant {
      let detail = format!("a {kind} must be in an assistant message");
      return Err(Error::message(self.index, self.path.clone(), detail));
    }
    Ok(ToolCall { id, name, arguments: input_text(input) })
  }
}

/// A part that only carries text under `key` (thinking, reasoning, unknown kinds).
fn other_part(kind: &str, fields: &Map<String, Value>, key: &str) -> Part {
  Part::Other { kind: kind.into(), text: fields.get(key).and_then(Value::as_str).map(String::from) }
}

/// Whether an Anthropic block `kind` is a server tool's call or result: `server_tool_use`,
/// `mcp_tool_use`, and every `…_tool_result` but the client's own `tool_result`
/// (`web_search_tool_result`, `web_fetch_tool_result`, `code_execution_tool_result`,
/// `bash_code_execution_tool_result`, `mcp_tool_result`, …).
pub(crate) fn is_server_tool_block(kind: &str) -> bool {
  kind == "server_tool_use"
    || kind == "mcp_tool_use"
    || (kind.ends_with("_tool_result") && kind != "tool_result")
}

/// A server tool's call or result, kept as a part of its message: its text is the call's input
/// or the result's content as read, so that it is counted.
fn server_tool_part(kind: &str, fields: &Map<String, Value>) -> Part {
  let value =
    fields.get("input").or_else(|| fields.get("content")).or_else(|| fields.get("output"));
  let text = input_text(value);
  Part::Other { kind: kind.into(), text: (!text.is_empty()).then_some(text) }
}

/// Records a tool result in the message and returns its part.
fn tool_result(
  m: &mut Message,
  call_id: String,
  (content, attachment_tokens): (String, usize),
  is_error: bool,
) -> Part {
  m.is_error |= is_error;
  m.answers.push(call_id.clone());
  Part::ToolResult { call_id, content, attachment_tokens, is_error }
}

fn anthropic_message(value: &Value, index: usize) -> Result<Message> {
  block_message(
    value,
    index,
    &[Role::System, Role::User, Role::Assistant],
    "content block",
    |kind, f, b, m| {
      Ok(Some(match kind {
        "text" => Part::Text(b.text(f, "text")?),
        "document" => match document_text(kind, f) {
          Some(texts) => Part::Other { kind: kind.into(), text: Some(texts.join("\n")) },
          None => attachment_part(kind, f, Provider::Anthropic),
        },
        "image" => attachment_part(kind, f, Provider::Anthropic),
        "search_result" => {
          let (text, _) = nested_content(f.get("content"), Provider::Anthropic);
          Part::Other { kind: kind.into(), text: (!text.is_empty()).then_some(text) }
        }
        "thinking" => other_part(kind, f, "thinking"),
        // Tools the provider runs itself (web search, web fetch, code execution, MCP
        // connectors): the call and its result are blocks of the same assistant turn, which
        // the client neither answers nor splits. Counted, never paired with a tool_result.
        _ if is_server_tool_block(kind) => server_tool_part(kind, f),
        "tool_use" => {
          let call = b.tool_call(
            "tool_use block",
            b.string(f, "id")?,
            b.string(f, "name")?,
            f.get("input"),
          )?;
          m.tool_calls.push(call);
          return Ok(None);
        }
        "tool_result" => {
          let is_error = matches!(f.get("is_error"), Some(Value::Bool(true)));
          let content = nested_content(f.get("content"), Provider::Anthropic);
          tool_result(m, b.string(f, "tool_use_id")?, content, is_error)
        }
        // Encrypted thinking: not counted (as a `thinking` block is by its text).
        "redacted_thinking" => other_part(kind, f, "text"),
        _ => unknown_part(kind, f),
      }))
    },
  )
}

fn ai_sdk_message(value: &Value, index: usize) -> Result<Message> {
  let roles = [Role::System, Role::User, Role::Assistant, Role::Tool];
  block_message(value, index, &roles, "part", |kind, f, b, m| {
    Ok(Some(match kind {
      "text" => Part::Text(b.text(f, "text")?),
      "image" | "file" => attachment_part(kind, f, Provider::Any),
      "reasoning" => other_part(kind, f, "text"),
      // A tool the provider ran (`providerExecuted: true`): its result is a `tool-result` part of
      // the same assistant message, not a tool message of the client's.
      "tool-call" if matches!(f.get("providerExecuted"), Some(Value::Bool(true))) => {
        server_tool_part(kind, f)
      }
      "tool-result" if b.role == Role::Assistant => server_tool_part(kind, f),
      "tool-call" => {
        let call = b.tool_call(
          "tool-call part",
          b.string(f, "toolCallId")?,
          b.string(f, "toolName")?,
          f.get("input"),
        )?;
        m.tool_calls.push(call);
        return Ok(None);
      }
      "tool-approval-request" if b.role == Role::Assistant => {
        Part::Approval { id: b.string(f, "approvalId")?, call_id: Some(b.string(f, "toolCallId")?) }
      }
      "tool-approval-response" if b.role == Role::Tool => {
        Part::Approval { id: b.string(f, "approvalId")?, call_id: None }
      }
      "tool-result" => {
        let output = f.get("output");
        let is_error = output
          .and_then(|o| o.get("type"))
          .and_then(Value::as_str)
          .is_some_and(|t| t.starts_with("error"));
        let content = match output {
          Some(Value::Object(out)) => match out.get("value") {
            // A `content` output's parts, which the binding's reader hands over as their JSON
            // text (as every `value`): read as parts, so that its images count as images.
            Some(Value::String(s))
              if out.get("type").and_then(Value::as_str) == Some("content") =>
            {
              match serde_json::from_str::<Value>(s) {
                Ok(parts @ Value::Array(_)) => nested_content(Some(&parts), Provider::Any),
                _ => (s.clone(), 0),
              }
            }
            Some(Value::String(s)) => (s.clone(), 0),
            Some(v @ Value::Array(_)) => nested_content(Some(v), Provider::Any),
            Some(v) => (v.to_string(), 0),
            None => (String::new(), 0),
          },
          other => nested_content(other, Provider::Any),
        };
        tool_result(m, b.string(f, "toolCallId")?, content, is_error)
      }
      _ => unknown_part(kind, f),
    }))
  })
}

fn text_of(o: &Map<String, Value>, key: &str, index: usize, path: &str) -> Result<String> {
  match o.get(key) {
    Some(Value::String(s)) => Ok(s.clone()),
    None | Some(Value::Null) => Err(Error::message(index, format!("{path}.{key}"), "is required")),
    Some(other) => Err(Error::message(
      index,
      format!("{path}.{key}"),
      format!("must be a string, got {}", type_name(other)),
    )),
  }
}

/// Parses messages in `format`, or in the detected format when `format` is `None`.
///
/// # Errors
///
/// An [`Error`] when `messages` is not an array, the format cannot be detected, or a message
/// is invalid in the format.
pub fn parse_messages(messages: &Value, format: Option<Format>) -> Result<(Format, Vec<Message>)> {
  let Value::Array(items) = messages else {
    return Err(Error::new(
      ErrorKind::InvalidMessages,
      "messages",
      format!("must be an array, got {}", type_name(messages)),
    ));
  };
  let format = match format {
    Some(f) => f,
    None => detect(items)?,
  };
  let parsed =
    items.iter().enumerate().map(|(i, m)| format.parse_message(m, i)).collect::<Result<_>>()?;
  Ok((format, parsed))
}

#[cfg(test)]
mod tests {
  use super::*;
  use serde_json::json;

  #[test]
  fn anthropic_tool_use_and_result_pair_up() {
    let v = json!([
      {"role": "user", "content": "list files"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {"dir": "."}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.ts"}], "is_error": false}, {"type": "text", "text": "thanks"}]}
    ]);
    let (f, ms) = parse_messages(&v, None).unwrap();
    assert_eq!(f, Format::Anthropic);
    assert_eq!(ms[1].tool_calls[0].arguments, "{\"dir\":\".\"}");
    assert_eq!(ms[2].answers, vec!["t1".to_string()]);
    assert!(ms[2].is_tool_result());
    assert_eq!(ms[2].content_text(), "a.ts\nthanks");
    let conv = crate::Conversation::new(&ms, crate::Encoding::O200kBase);
    assert_eq!(conv.units()[conv.unit_of(2)].members, vec![1, 2]);
  }

  #[test]
  fn ai_sdk_tool_call_and_result_pair_up() {
    let v = json!([
      {"role": "system", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "go"}]},
      {"role": "assistant", "content": [{"type": "reasoning", "text": "r"}, {"type": "tool-call", "toolCallId": "c1", "toolName": "read", "input": {"path": "a"}}]},
      {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "read", "output": {"type": "error-text", "value": "ENOENT"}}]}
    ]);
    let (f, ms) = parse_messages(&v, None).unwrap();
    assert_eq!(f, Format::AiSdk);
    assert!(ms[3].is_error);
    assert_eq!(ms[3].content_text(), "ENOENT");
    assert_eq!(ms[2].tool_calls[0].name, "read");
  }

  /// Images and files count as attachments wherever they are: in a tool result's content (a
  /// screenshot), as a document or file part, and among an AI SDK `content` output's parts,
  /// given as parts or as their JSON text (how the binding's reader hands over every `value`),
  /// whose base64 data is never read as text. A search result's text counts.
  #[test]
  fn attachments_count_as_images_wherever_they_are() {
    use crate::model::media::tests::{base64, png};
    use crate::model::tokens::message_tokens;
    let e = crate::Encoding::O200kBase;
    // A 1280×800 PNG: 1,366 tokens at Anthropic (w×h/750), 1,105 at OpenAI; the AI SDK's
    // provider is unknown, so the larger.
    const IMAGE: usize = 1366;
    let data = base64(&png(1280, 800)) + &"A".repeat(30_000);
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}});
    let tokens =
      |format: Format, m: Value| message_tokens(&format.parse_message(&m, 0).unwrap(), e);
    let anthropic =
      |content: Value| tokens(Format::Anthropic, json!({"role": "user", "content": content}));
    let alone = anthropic(json!([image]));
    let result = |content: Value| {
      anthropic(json!([{"type": "tool_result", "tool_use_id": "t", "content": content}]))
    };
    assert_eq!(result(json!([image.clone()])), alone);
    assert_eq!(
      result(json!([{"type": "text", "text": "ok"}, image.clone(), image.clone()])),
      result(json!("ok")) + 2 * IMAGE
    );
    assert_eq!(alone, anthropic(json!([])) + IMAGE);
    let pdf = json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}});
    assert_eq!(anthropic(json!([pdf])), anthropic(json!([])) + FILE_PART_TOKENS);
    // A text document counts its text, wherever it is, whichever source holds it.
    let contract = "the party of the first part agrees ".repeat(400);
    let by_text = anthropic(json!([{"type": "text", "text": contract}]));
    assert!(by_text > 2_000);
    for source in [
      json!({"type": "text", "media_type": "text/plain", "data": contract}),
      json!({"type": "content", "content": [{"type": "text", "text": contract}]}),
      json!({"type": "content", "content": contract}),
    ] {
      let document = json!({"type": "document", "source": source, "title": "contract"});
      assert_eq!(anthropic(json!([document.clone()])), by_text, "{source}");
      assert_eq!(result(json!([document])), result(json!(contract)), "{source}");
    }
    // A fetched page (a server tool's result) counts its text too.
    let fetched = json!([{"type": "web_fetch_tool_result", "tool_use_id": "s", "content": {"type": "web_fetch_result", "url": "u", "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": contract}}}}]);
    let fetched = tokens(Format::Anthropic, json!({"role": "assistant", "content": fetched}));
    assert!(fetched > by_text, "{fetched} <= {by_text}");
    let text = "hello world ".repeat(500);
    let search = json!({"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": text}]});
    assert!(anthropic(json!([search.clone()])) > 500);
    assert!(result(json!([search])) > 500);
    let ai = |output: Value| {
      tokens(
        Format::AiSdk,
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c", "toolName": "shot", "output": output}]}),
      )
    };
    let parts = json!([{"type": "text", "text": "here"}, {"type": "media", "data": data, "mediaType": "image/png"}]);
    let as_parts = ai(json!({"type": "content", "value": parts}));
    assert_eq!(as_parts, ai(json!({"type": "text", "value": "here"})) + IMAGE);
    assert_eq!(ai(json!({"type": "content", "value": parts.to_string()})), as_parts);
    let file = json!({"role": "user", "content": [{"type": "file", "data": data, "mediaType": "image/png"}]});
    assert_eq!(tokens(Format::AiSdk, file), alone);
  }

  /// A part of a type no format reads counts by its JSON text, in every format, as a value
  /// parsed directly or as the readers hand it over (its text under `#json`).
  #[test]
  fn unknown_parts_count_by_their_json_text() {
    use crate::model::tokens::{count_tokens, message_tokens};
    let e = crate::Encoding::O200kBase;
    let words = "lorem ipsum dolor sit amet ".repeat(400);
    let weird = json!({"type": "weird", "data": words});
    let text = weird.to_string();
    for format in Format::ALL {
      let m =
        format.parse_message(&json!({"role": "user", "content": [weird.clone()]}), 0).unwrap();
      let empty = format.parse_message(&json!({"role": "user", "content": []}), 0).unwrap();
      assert_eq!(
        message_tokens(&m, e),
        message_tokens(&empty, e) + count_tokens(&text, e),
        "{format:?}"
      );
      let view = json!({"role": "user", "content": [{"type": "weird", "#json": text}]});
      assert_eq!(format.parse_message(&view, 0).unwrap().content, m.content, "{format:?}");
    }
    assert!(
      message_tokens(
        &Format::OpenAi.parse_message(&json!({"role": "user", "content": [weird]}), 0).unwrap(),
        e
      ) > 2_000
    );
  }

  /// Audio counts by its duration, images by their header, in each format's formula.
  #[test]
  fn audio_and_images_count_by_their_size_in_each_format() {
    use crate::model::media::tests::{base64, png};
    use crate::model::tokens::message_tokens;
    let e = crate::Encoding::O200kBase;
    let tokens = |format: Format, content: Value| {
      let m = format.parse_message(&json!({"role": "user", "content": content}), 0).unwrap();
      let empty = format.parse_message(&json!({"role": "user", "content": []}), 0).unwrap();
      message_tokens(&m, e) - message_tokens(&empty, e)
    };
    // 200 kB of base64 audio (150 kB) with an unreadable header: MP3 at 128 kbps, 9.4 s.
    let audio = "A".repeat(200_000);
    let input_audio =
      json!([{"type": "input_audio", "input_audio": {"data": audio, "format": "mp3"}}]);
    assert_eq!(tokens(Format::OpenAi, input_audio), 94);
    let file = json!([{"type": "file", "data": audio, "mediaType": "audio/mpeg"}]);
    assert_eq!(tokens(Format::AiSdk, file), 300);
    for (w, h, openai, anthropic) in
      [(200, 200, 255, 54), (1280, 800, 1105, 1366), (4000, 3000, 765, 1600)]
    {
      let data = base64(&png(w, h));
      let url = format!("data:image/png;base64,{data}");
      let openai_part = json!([{"type": "image_url", "image_url": {"url": url}}]);
      assert_eq!(tokens(Format::OpenAi, openai_part), openai, "{w}x{h}");
      let low = json!([{"type": "image_url", "image_url": {"url": url, "detail": "low"}}]);
      assert_eq!(tokens(Format::OpenAi, low), 85);
      let block = json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]);
      assert_eq!(tokens(Format::Anthropic, block), anthropic, "{w}x{h}");
      let ai = json!([{"type": "image", "image": data}]);
      assert_eq!(tokens(Format::AiSdk, ai), openai.max(anthropic), "{w}x{h}");
      let ai_file = json!([{"type": "file", "data": url, "mediaType": "image/png"}]);
      assert_eq!(tokens(Format::AiSdk, ai_file), openai.max(anthropic), "{w}x{h}");
    }
    // A URL: the size is unknown.
    let url = json!([{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]);
    assert_eq!(tokens(Format::OpenAi, url), crate::model::media::OPENAI_UNKNOWN_IMAGE_TOKENS);
    let url =
      json!([{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]);
    assert_eq!(tokens(Format::Anthropic, url), crate::model::media::ANTHROPIC_MAX_IMAGE_TOKENS);
  }

  #[test]
  fn messages_without_content_or_a_tool_message_without_its_call_id_are_refused() {
    let check = |format: Format, v: Value| {
      let m = format.parse_message(&v, 3)?;
      format.check_message(&v, &m, 3)
    };
    let e = |format: Format, v: Value| check(format, v).unwrap_err().to_string();
    for format in Format::ALL {
      assert_eq!(
        e(format, json!({"role": "user", "text": "hi"})),
        "messages[3].content: is required: a message without tool calls must have content"
      );
    }
    assert_eq!(
      e(Format::OpenAi, json!({"role": "tool", "content": "x"})),
      "messages[3].tool_call_id: is required: a tool message must name the call it answers"
    );
    for ok in [
      json!({"role": "assistant", "content": null, "tool_calls": [{"id": "a", "function": {"name": "f"}}]}),
      json!({"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]}),
      json!({"role": "assistant", "content": null}),
      json!({"role": "tool", "tool_call_id": "a", "content": "x"}),
    ] {
      assert!(check(Format::OpenAi, ok.clone()).is_ok(), "{ok}");
    }
  }

  #[test]
  fn detection_refuses_mixed_formats_and_reads_plain_text_as_openai() {
    let mixed = json!([
      {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "x"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "r"}]}
    ]);
    assert_eq!(
      parse_messages(&mixed, None).unwrap_err().to_string(),
      "format: cannot detect the format: messages[0] looks like openai (tool_calls) but messages[1] looks like anthropic (a tool_use/tool_result/thinking block); pass format explicitly"
    );
    let plain =
      json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]);
    assert_eq!(parse_messages(&plain, None).unwrap().0, Format::OpenAi);
  }

  #[test]
  fn format_errors_name_index_and_field() {
    let e = |v: Value, f: Format| f.parse_message(&v, 4).unwrap_err().to_string();
    assert_eq!(
      e(json!({"role": "tool", "content": "x"}), Format::Anthropic),
      "messages[4].role: must be one of system, user, assistant, got \"tool\""
    );
    assert_eq!(
      e(
        json!({"role": "user", "content": [{"type": "tool_result", "content": "x"}]}),
        Format::Anthropic
      ),
      "messages[4].content[0].tool_use_id: is required"
    );
    assert_eq!(
      e(
        json!({"role": "tool", "content": [{"type": "tool-result", "toolName": "x"}]}),
        Format::AiSdk
      ),
      "messages[4].content[0].toolCallId: is required"
    );
    assert_eq!(
      Format::parse_option("gemini").unwrap_err().to_string(),
      "format: must be one of openai, anthropic, ai-sdk, auto, got \"gemini\""
    );
  }
}
