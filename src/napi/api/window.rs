//! `ContextWindow`: the incremental API for apps that own the agent loop (see
//! [`crate::analysis::window`]). Messages are read once, when appended; a trim reads nothing from
//! JavaScript but the held objects it returns.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::analysis::window::ContextWindow as CoreWindow;
use crate::error::Error as CoreError;
use crate::model::format::Format;
use crate::model::message::Message;
use crate::model::tokens::Encoding;
use crate::napi::base::cache::Cached;
use crate::napi::base::options::{read_options, ResolvedTokenOptions, TokenOptions};
use crate::napi::base::read::{self, JsMessages};
use crate::napi::base::task::OnConversation;
use crate::napi::base::trim::truncate_op;
use crate::napi::base::trim::{trim_op, Strategy};
use crate::napi::base::write::Objects;
use crate::napi::base::{error, saturate};

impl AsRef<Message> for Arc<Cached> {
  fn as_ref(&self) -> &Message {
    &self.message
  }
}

/// A conversation that grows as the agent runs, for apps that own the loop: append each
/// message as it happens, and ask for the request to send. Each message is read and counted
/// once, when appended, and linked into the window's steps and tool-call units; `trim`,
/// `trimWithPlaceholders` and `truncate` then cost time proportional to the number of
/// messages, not their size, and decide exactly as {@link trimByPriority},
/// {@link trimWithPlaceholders} and {@link truncateOldToolOutputs} do on the same messages.
/// The window keeps every message (a trim returns a view, it removes nothing); `reset`
/// replaces them.
///
/// ```ts
/// const window = new ContextWindow({ model: 'gpt-4o' })
/// window.append([system, task])
/// for (;;) {
///   const { messages } = window.trim({ targetTokens: 100_000 })
///   const reply = await model(messages)
///   window.append([reply, ...(await runTools(reply))])
/// }
/// ```
#[napi(custom_finalize)]
pub struct ContextWindow {
  core: CoreWindow<Arc<Cached>>,
  /// A JavaScript array of the caller's objects, one per message, held until the window's
  /// finalisation (results are picked from it in one call).
  held: ObjectRef<false>,
  /// The format given at construction (`None`: detect).
  given_format: Option<Format>,
  /// Whether a held message showed the window's format (with `given_format` unset): until
  /// then the messages read as OpenAI, and the first message showing a format decides it.
  format_shown: bool,
}

impl ObjectFinalize for ContextWindow {
  fn finalize(self, env: Env) -> Result<()> {
    self.held.unref(&env)
  }
}

#[napi]
impl ContextWindow {
  /// An empty window. Every count is in the encoding of `options` (`model`, `encoding`); with
  /// `format: 'auto'` (the default) the format is detected from the messages appended so far.
  /// Its type parameter is the app's message type, which `trim` and `trimWithPlaceholders`
  /// return (`new ContextWindow<ChatCompletionMessageParam>({ model })`; context-trim's
  /// `Message` when not named).
  #[napi(constructor, catch_unwind, ts_args_type = "options?: TokenOptions")]
  pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
    let options: TokenOptions = read_options(env, options, "options")?;
    let throw = |e| error::throw(env, e);
    let encoding = options.encoding().map_err(throw)?;
    crate::napi::base::model_warning::warn_unknown_model(
      env,
      options.model.as_deref(),
      options.encoding.as_deref(),
    )?;
    let given_format = options.format().map_err(throw)?;
    Ok(ContextWindow {
      core: CoreWindow::new(encoding, given_format.unwrap_or_default()),
      held: Object::from_raw(env.raw(), env.create_array(0)?.raw()).create_ref::<false>()?,
      given_format,
      format_shown: false,
    })
  }

  /// Appends messages (an array: `append([message])` for one) and returns the new length. They
  /// are read and checked first: a bad message is a coded error naming its index in the array
  /// given, and then nothing is appended.
  #[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[]")]
  pub fn append(&mut self, env: &Env, batch: Unknown) -> Result<u32> {
    let input = read::read_messages_in(env, batch, self.given_format)?;
    let format = match self.given_format {
      Some(f) => f,
      None => self.detect(env, &input)?,
    };
    if format != self.core.format() && !self.core.is_empty() {
      // The messages so far were read in another format (they showed none of their own):
      // read them again in this one.
      let held = self.held_array(env)?.to_unknown();
      let again = read::read_messages_in(env, held, Some(format))?;
      self.core.reset(again.messages, format);
    } else if self.core.is_empty() {
      self.core.reset(Vec::new(), format);
    }
    let input = if input.format == format {
      input
    } else {
      read::read_messages_in(env, batch, Some(format))?
    };
    let mut held = self.held_array(env)?;
    for (j, object) in input.objects()?.iter().enumerate() {
      held.set((self.core.len() + j) as u32, object)?;
    }
    for message in input.messages {
      self.core.push(message);
    }
    Ok(saturate(self.core.len()))
  }

  /// Replaces every message with `messages`: for a history that changed other than by
  /// appending (older turns replaced by a summary kept from then on, a message taken out or
  /// replaced, a saved conversation resumed), not to apply a trim's result, whose drops would
  /// then be lost for every later turn. Read and checked first, as by `append`; the format is
  /// detected afresh unless given.
  #[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[]")]
  pub fn reset(&mut self, env: &Env, messages: Unknown) -> Result<()> {
    let input = read::read_messages_in(env, messages, self.given_format)?;
    let mut held = self.held_array(env)?;
    held.set_named_property("length", 0)?;
    for (j, object) in input.objects()?.iter().enumerate() {
      held.set(j as u32, object)?;
    }
    let format = input.format;
    self.format_shown = input.messages.iter().any(|c| !c.signals.is_empty());
    self.core.reset(input.messages, format);
    Ok(())
  }

  /// Removes every message.
  #[napi(catch_unwind)]
  pub fn clear(&mut self, env: &Env) -> Result<()> {
    self.held_array(env)?.set_named_property("length", 0)?;
    self.format_shown = false;
    self.core.reset(Vec::new(), self.given_format.unwrap_or_default());
    Ok(())
  }

  /// The number of messages.
  #[napi(getter, catch_unwind)]
  pub fn length(&self) -> u32 {
    saturate(self.core.len())
  }

  /// The tokens of every message as one request (reply priming included), kept as a running
  /// sum.
  #[napi(getter, catch_unwind)]
  pub fn total_tokens(&self) -> u32 {
    saturate(self.core.total_tokens())
  }

  /// The number of steps (assistant messages with tool calls).
  #[napi(getter, catch_unwind)]
  pub fn current_step(&self) -> u32 {
    saturate(self.core.current_step())
  }

  /// The format the messages are read in (given, or detected; `'openai'` until a message shows
  /// another).
  #[napi(getter, catch_unwind, ts_return_type = "Exclude<MessageFormat, 'auto'>")]
  pub fn format(&self) -> &'static str {
    self.core.format().as_str()
  }

  /// The encoding of every count.
  #[napi(getter, catch_unwind, ts_return_type = "TokenEncoding")]
  pub fn encoding(&self) -> &'static str {
    self.core.encoding().as_str()
  }

  /// The options the window counts and reads with, resolved: `new ContextWindow(window.options)`
  /// is an empty window that counts and reads as this one.
  #[napi(getter, catch_unwind)]
  pub fn options(&self) -> ResolvedTokenOptions {
    ResolvedTokenOptions::new(self.core.encoding(), Some(self.given_format))
  }

  /// Every message, in order (your own objects).
  #[napi(catch_unwind, ts_return_type = "AnyMessage[]")]
  pub fn messages<'env>(&self, env: &'env Env) -> Result<Array<'env>> {
    let all: Vec<u32> = (0..self.core.len() as u32).collect();
    Objects::Array(&self.held_array(env)?).pick(env, &all)
  }

  /// {@link trimByPriority} on the window's messages. `model`, `encoding` and `format`, if
  /// given, must name the window's encoding and format. The messages come back as the
  /// window's message type (`new ContextWindow<AnthropicMessage>()`), or as the type named
  /// here: `window.trim<AnthropicMessage>({ … })`.
  #[napi(
    catch_unwind,
    ts_generic_types = "M extends AnyMessageInput = W",
    ts_args_type = "options: TrimOptions",
    ts_return_type = "TrimResultOf<M>"
  )]
  pub fn trim<'env>(&self, env: &'env Env, options: Unknown<'env>) -> Result<Unknown<'env>> {
    let op = trim_op(env, options, Strategy::ByPriority, false, Some(self.fixed()))?.0;
    self.run(env, op)
  }

  /// {@link trimWithPlaceholders} on the window's messages. `model`, `encoding` and `format`,
  /// if given, must name the window's encoding and format; the messages come back typed as
  /// `trim`'s do.
  #[napi(
    catch_unwind,
    ts_generic_types = "M extends AnyMessageInput = W",
    ts_args_type = "options: TrimOptions",
    ts_return_type = "TrimResultOf<M>"
  )]
  pub fn trim_with_placeholders<'env>(
    &self,
    env: &'env Env,
    options: Unknown<'env>,
  ) -> Result<Unknown<'env>> {
    let op = trim_op(env, options, Strategy::WithPlaceholders, false, Some(self.fixed()))?.0;
    self.run(env, op)
  }

  /// {@link truncateOldToolOutputs} on the window's messages. `model`, `encoding` and
  /// `format`, if given, must name the window's encoding and format.
  #[napi(catch_unwind, ts_args_type = "config?: TruncationConfig", ts_return_type = "AnyMessage[]")]
  pub fn truncate<'env>(
    &self,
    env: &'env Env,
    config: Option<Unknown<'env>>,
  ) -> Result<Unknown<'env>> {
    let op = truncate_op(env, config, Some(self.fixed()))?.0;
    self.run(env, op)
  }
}

impl ContextWindow {
  /// The format of the held messages and `input` together, in time proportional to `input`:
  /// the held messages' format is known, and whether one of them showed it. An error when
  /// `input` shows another format than the held messages.
  fn detect(&mut self, env: &Env, input: &JsMessages<'_>) -> Result<Format> {
    let held = self.core.format();
    if input.messages.iter().all(|c| c.signals.is_empty()) {
      return Ok(held);
    }
    if !self.format_shown {
      // `input` was read in its own detected format, which refused mixed shapes.
      self.format_shown = true;
      return Ok(input.format);
    }
    let other = input.messages.iter().enumerate().find_map(|(i, c)| {
      let seen = Format::ALL.into_iter().find(|&f| f != held && c.signals.shows(f).is_some())?;
      Some((i, seen, c.signals.shows(seen).unwrap_or("")))
    });
    match other {
      None => Ok(held),
      Some((i, seen, why)) => Err(error::throw(
        env,
        CoreError::option(
          "format",
          format!(
            "messages[{i}] looks like {} ({why}) but the window holds {} messages; append messages of one format, or create one window per format",
            seen.as_str(),
            held.as_str()
          ),
        ),
      )),
    }
  }

  /// The held array (the window's own; never handed out).
  fn held_array<'env>(&self, env: &'env Env) -> Result<Array<'env>> {
    let object = self.held.get_value(env)?;
    // SAFETY: `held` was created as an array and is never replaced.
    unsafe { Array::from_napi_value(env.raw(), object.raw()) }
  }

  /// The encoding and format the window's messages are read in.
  fn fixed(&self) -> (Encoding, Format) {
    (self.core.encoding(), self.core.format())
  }

  /// Runs `op` on the kept conversation and builds its result from the held objects.
  fn run<'env, O: OnConversation>(&self, env: &'env Env, mut op: O) -> Result<Unknown<'env>> {
    let output = self.core.analysed(|conv| op.compute_on(conv));
    op.to_js(env, output, Objects::Array(&self.held_array(env)?), self.core.format())
  }
}
