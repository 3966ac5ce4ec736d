//! Rolling context for JavaScript: `truncateOldToolOutputs`, `DEFAULT_CONFIG` and the
//! `RollingContext` class behind the `/rolling-context` command.

use napi::bindgen_prelude::*;
use napi::{Env, ValueType};
use napi_derive::napi;

use crate::error::{Error as CoreError, ErrorKind};
use crate::model::format::Format;
use crate::model::tokens::Encoding;
use crate::strategy::rolling::{
  self, DEFAULT_MAX_AGE, DEFAULT_MAX_TOKENS_PER_OUTPUT, DEFAULT_MIN_QUOTED_CHARS,
  DEFAULT_PLACEHOLDER, DEFAULT_SMALL_OUTPUT_TOKENS,
};

use crate::napi::base::options::{parse_format, read_nested_options, read_options, Nested};
use crate::napi::base::options::{ResolvedTruncationConfig, TruncationConfig};
use crate::napi::base::trim::{truncate_op, TruncateOp};
use crate::napi::base::{error, read, task, write};

/// The defaults of {@link TruncationConfig}, as the rolling-context design names them:
/// `{ maxAge: 5, maxTokensPerOutput: 2000, placeholder: '[content truncated - {age} steps ago]',
/// smallOutputTokens: 100, minQuotedChars: 40, stablePlaceholders: false, preserveErrors: true }`.
/// A copy: changing it changes no default.
#[napi]
pub const DEFAULT_CONFIG: ResolvedTruncationConfig<'static> = ResolvedTruncationConfig {
  max_age: DEFAULT_MAX_AGE as u32,
  max_tokens_per_output: DEFAULT_MAX_TOKENS_PER_OUTPUT as u32,
  placeholder: DEFAULT_PLACEHOLDER,
  small_output_tokens: DEFAULT_SMALL_OUTPUT_TOKENS as u32,
  min_quoted_chars: DEFAULT_MIN_QUOTED_CHARS as u32,
  stable_placeholders: false,
  preserve_errors: true,
  encoding: None,
  framing: None,
  format: None,
};

/// Replaces tool outputs older than `maxAge` steps with a placeholder, and cuts younger ones
/// longer than `maxTokensPerOutput` tokens to their head and tail. Errors, small outputs, and
/// outputs that a later user message quotes or a recent tool call consumes are kept whole.
///
/// Returns a new array: kept messages are your own objects, a truncated one is a copy with
/// every field kept, `content` replaced and `_originalLength` (the original content's length
/// in UTF-16 code units) plus `_truncatedAt` (its age in steps) or `_cutTokens` (the tokens
/// cut) added. Nothing is dropped or moved, so every tool call keeps its result. The input is
/// never modified.
///
/// ```ts
/// const sent = truncateOldToolOutputs(messages, { maxAge: 3 })
/// ```
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], config?: TruncationConfig",
  ts_return_type = "M[]"
)]
pub fn truncate_old_tool_outputs<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  config: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare_truncation(env, messages, config)?;
  task::run_sync(env, input, op)
}

/// {@link truncateOldToolOutputs} on the libuv thread pool, for large histories: the Promise
/// resolves to the same messages the sync call returns.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], config?: TruncationConfig",
  ts_return_type = "Promise<M[]>"
)]
pub fn truncate_old_tool_outputs_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  config: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(env, prepare_truncation(env, messages, config))
}

fn prepare_truncation<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  config: Option<Unknown<'env>>,
) -> Result<(read::JsMessages<'env>, TruncateOp)> {
  let (mut op, format) = truncate_op(env, config, None)?;
  let input = read::read_messages_in(env, messages, format)?;
  op.format = input.format;
  Ok((input, op))
}

/// The description of the `/rolling-context` command (nanocoder's).
const COMMAND_DESCRIPTION: &str = "Toggle rolling context management (prevents context overflow)";

/// Builds the command object around a `RollingContext`: the handler runs `handleCommand` with
/// its first word (of an array of words, or of a string split on whitespace) and replies with
/// one of the two words given.
const COMMAND: &str = r#"(function rollingContextCommand(context, description, enabled, disabled) {
  return {
    name: 'rolling-context',
    description,
    handler: async (args) => {
      const words = typeof args === 'string' ? args.trim().split(/\s+/) : args;
      context.handleCommand(words == null ? undefined : words[0]);
      return context.enabled ? enabled : disabled;
    },
  };
})"#;

/// Options of a {@link RollingContext}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct RollingContextOptions {
  /// Whether `prepare` truncates.
  /// @default false
  pub enabled: Option<bool>,
  /// How it truncates; missing fields come from {@link DEFAULT_CONFIG}.
  pub config: Option<TruncationConfig>,
}

/// The options of a {@link RollingContext}, resolved: `new RollingContext(rolling.options)`
/// truncates (or not) as `rolling` does.
#[napi(object, object_from_js = false)]
pub struct ResolvedRollingContextOptions<'a> {
  /// Whether `prepare` truncates.
  pub enabled: bool,
  /// How it truncates and counts.
  #[napi(ts_type = "ResolvedTruncationConfig")]
  pub config: ResolvedTruncationConfig<'a>,
}

/// The rolling-context toggle of a chat app: whether tool outputs are truncated before each
/// model call, and how. Off by default.
///
/// ```ts
/// const rolling = new RollingContext()
/// rolling.handleCommand('on') // the `/rolling-context on` slash command
/// const response = await client.chat(rolling.prepare(messages), tools)
/// ```
#[napi]
pub struct RollingContext {
  inner: rolling::RollingContext,
  encoding: Encoding,
  /// The format given (`None`: detect).
  format: Option<Format>,
}

#[napi]
impl RollingContext {
  /// A toggle, off unless `options.enabled` is true, with `options.config` merged into
  /// {@link DEFAULT_CONFIG}.
  #[napi(constructor, catch_unwind, ts_args_type = "options?: RollingContextOptions")]
  pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
    let nested = &[Nested { name: "config", fields: &[] }];
    let options: RollingContextOptions = read_nested_options(env, options, "options", nested)?;
    let given = options.config.unwrap_or_default();
    let format = parse_format(given.format.as_deref()).map_err(|e| error::throw(env, e))?;
    crate::napi::base::model_warning::warn_unknown_model(
      env,
      given.model.as_deref(),
      given.encoding.as_deref(),
    )?;
    let (config, encoding) = given.normalize().map_err(|e| error::throw(env, e))?;
    let inner = rolling::RollingContext { enabled: options.enabled.unwrap_or(false), config };
    Ok(RollingContext { inner, encoding, format })
  }

  /// Whether `prepare` truncates.
  #[napi(getter, catch_unwind)]
  pub fn enabled(&self) -> bool {
    self.inner.enabled
  }

  /// Turns truncation on or off.
  #[napi(setter, catch_unwind, ts_args_type = "value: boolean")]
  pub fn set_enabled(&mut self, env: &Env, value: Unknown) -> Result<()> {
    if value.get_type()? != ValueType::Boolean {
      return Err(error::throw(
        env,
        CoreError::new(
          ErrorKind::InvalidArgument,
          "enabled",
          format!("must be a boolean, got {}", read::js_type_name(&value)),
        ),
      ));
    }
    self.inner.enabled = value.coerce_to_bool()?;
    Ok(())
  }

  /// The configuration in use, every field filled in, with the counting and the format
  /// (`encoding`, `framing`, `format`): `rolling.config = rolling.config` changes nothing.
  #[napi(getter, catch_unwind, ts_return_type = "ResolvedTruncationConfig")]
  pub fn config(&self) -> ResolvedTruncationConfig<'_> {
    ResolvedTruncationConfig {
      encoding: Some(self.encoding.as_str()),
      framing: Some(self.encoding.framed()),
      format: Some(self.format.map_or("auto", Format::as_str)),
      ..ResolvedTruncationConfig::from(&self.inner.config)
    }
  }

  /// The options in use, resolved: `new RollingContext(rolling.options)` is a toggle in the
  /// same state with the same configuration.
  #[napi(getter, catch_unwind, ts_return_type = "ResolvedRollingContextOptions")]
  pub fn options(&self) -> ResolvedRollingContextOptions<'_> {
    ResolvedRollingContextOptions { enabled: self.inner.enabled, config: self.config() }
  }

  /// Replaces the configuration: the fields given, the others from {@link DEFAULT_CONFIG}.
  #[napi(setter, catch_unwind, ts_args_type = "value: TruncationConfig | undefined")]
  pub fn set_config(&mut self, env: &Env, value: Option<Unknown>) -> Result<()> {
    let config: TruncationConfig = read_options(env, value, "config")?;
    let format = parse_format(config.format.as_deref()).map_err(|e| error::throw(env, e))?;
    crate::napi::base::model_warning::warn_unknown_model(
      env,
      config.model.as_deref(),
      config.encoding.as_deref(),
    )?;
    let (config, encoding) = config.normalize().map_err(|e| error::throw(env, e))?;
    self.inner.config = config;
    self.encoding = encoding;
    self.format = format;
    Ok(())
  }

  /// The messages to send: the very array given when disabled (it is still checked, so that a
  /// bad message fails the same way whether the toggle is on or off), the result of
  /// {@link truncateOldToolOutputs} when enabled.
  #[napi(
    catch_unwind,
    ts_generic_types = "M extends AnyMessageInput",
    ts_args_type = "messages: M[]",
    ts_return_type = "M[]"
  )]
  pub fn prepare<'env>(&self, env: &'env Env, messages: Unknown<'env>) -> Result<Unknown<'env>> {
    let input = read::read_messages_in(env, messages, self.format)?;
    if !self.inner.enabled {
      return Ok(messages);
    }
    let inner = &self.inner;
    let plan = crate::napi::base::task::on_kept_conversation(env, &input, self.encoding, |conv| {
      inner.prepare(conv)
    })?;
    let out = write::apply_plan(env, &input, &plan)?;
    Ok(out.to_unknown())
  }

  /// Runs the `/rolling-context` slash command: `'on'`, `'off'`, `'status'`, or nothing to
  /// toggle (case and surrounding spaces ignored). Returns the status line for the UI, e.g.
  /// `Rolling context: off (tool outputs are sent in full)`. Throws a `TypeError` with code
  /// `INVALID_ARGUMENT` for any other argument, changing nothing.
  #[napi(catch_unwind, ts_args_type = "arg?: string | null")]
  pub fn handle_command(&mut self, env: &Env, arg: Option<Unknown>) -> Result<String> {
    let arg = match arg {
      None => None,
      Some(v) if matches!(v.get_type()?, ValueType::Undefined | ValueType::Null) => None,
      Some(v) => Some(read::string_argument(&v, "arg").map_err(|e| error::throw(env, e))?),
    };
    self.inner.handle_command(arg.as_deref()).map_err(|e| error::throw(env, e))
  }

  /// The `/rolling-context` command for a chat app's command registry (nanocoder's
  /// `rollingContextCommand`): `{ name: 'rolling-context', description, handler(args) }`.
  /// `handler(['on'])` (or `handler('on')`: a string is split on whitespace) runs
  /// {@link RollingContext.handleCommand} with the first word and
  /// resolves to `Rolling context enabled.` or `Rolling context disabled.`; it rejects with the
  /// same `INVALID_ARGUMENT` error for a word it does not know, changing nothing.
  #[napi(getter, catch_unwind, ts_return_type = "RollingContextCommand")]
  pub fn command<'env>(&self, env: &'env Env, this: This<'env>) -> Result<Unknown<'env>> {
    let make: Function<FnArgs<(Object, &str, &str, &str)>, Unknown> = env.run_script(COMMAND)?;
    let enabled = rolling::RollingContext { enabled: true, ..Default::default() };
    let disabled = rolling::RollingContext::default();
    make.call(
      (this.object, COMMAND_DESCRIPTION, enabled.command_reply(), disabled.command_reply()).into(),
    )
  }

  /// The status line `handleCommand` returns, without changing anything.
  #[napi(catch_unwind)]
  pub fn status(&self) -> String {
    self.inner.status_line()
  }
}
