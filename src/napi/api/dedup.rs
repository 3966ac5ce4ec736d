//! `deduplicateToolResults` (+Async): superseded tool results (seed 003) for JavaScript.

use std::collections::BTreeMap;

use napi::bindgen_prelude::*;

use crate::napi::base::write::Objects;
use napi::Env;
use napi_derive::napi;

use crate::analysis::supersession::ToolNames;
use crate::error::{Error as CoreError, Result as CoreResult};
use crate::model::format::Format;
use crate::model::message::Message;
use crate::model::tokens::Encoding;
use crate::strategy::dedup::{self, Dedup, DedupOptions};

use crate::napi::base::options::{integer_option, parse_format, read_options};
use crate::napi::base::{error, read, saturate, task, write};

/// Options of {@link deduplicateToolResults}. A list given replaces its default.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct DeduplicationOptions {
  /// The model's context window, in tokens. Required unless `deduplicationThreshold` is 0.
  pub context_window: Option<f64>,
  /// The fraction of `contextWindow` the request must reach before history is rewritten (0 to
  /// 1). Below it the messages come back unchanged: rewriting history busts the provider's
  /// prompt cache, which only pays once the conversation is big. 0 deduplicates at any size.
  /// @default 0.75
  pub deduplication_threshold: Option<f64>,
  /// Which deduplicators run: `io-content` (files read, written, edited) and
  /// `survey-directory` (directory listings).
  /// @default ['io-content', 'survey-directory']
  #[napi(ts_type = "Array<'io-content' | 'survey-directory'>")]
  pub deduplicators: Option<Vec<String>>,
  /// Tools that read a file (the whole file, or the range their arguments give), besides the
  /// built-in detection (`read_file`, `str_replace_editor view`, `open`… see
  /// docs/deduplication.md).
  /// @default []
  pub read_tools: Option<Vec<String>>,
  /// Tools that write a whole file, besides the built-in detection.
  /// @default []
  pub write_tools: Option<Vec<String>>,
  /// Tools that change part of a file, besides the built-in detection.
  /// @default []
  pub edit_tools: Option<Vec<String>>,
  /// Argument keys naming the file of `readTools`, `writeTools` and `editTools`.
  /// @default ['path', 'file_path', 'filePath', 'file', 'filename']
  pub path_keys: Option<Vec<String>>,
  /// Tools that run shell commands: their `ls` and `cat` commands are recognised when simple.
  /// @default ['bash', 'Bash', 'execute_bash', 'terminal', 'shell', 'exec_command', 'run_shell_command', 'run_terminal_cmd', 'execute_command']
  pub shell_tools: Option<Vec<String>>,
  /// Argument keys holding a shell tool's command line.
  /// @default ['command', 'cmd']
  pub shell_command_keys: Option<Vec<String>>,
  /// Tools that list a directory.
  /// @default ['list_dir', 'list_directory', 'list_files', 'listDir', 'listDirectory', 'listFiles', 'ls', 'LS']
  pub list_tools: Option<Vec<String>>,
  /// Argument keys naming a listing's directory (absent: `.`).
  /// @default ['path', 'directory', 'dir', 'dir_path', 'directory_path', 'target_directory', 'relative_workspace_path']
  pub list_path_keys: Option<Vec<String>>,
  /// Boolean argument keys that make a listing recursive.
  /// @default ['recursive']
  pub recursive_keys: Option<Vec<String>>,
  /// Numeric argument keys limiting a listing's depth.
  /// @default ['depth', 'max_depth', 'maxDepth']
  pub depth_keys: Option<Vec<String>>,
  /// Argument keys holding a listing's exclusion filters (a string or an array of strings).
  /// @default ['ignore', 'exclude', 'excludes', 'ignore_patterns', 'ignore_globs', 'exclude_patterns']
  pub exclude_keys: Option<Vec<String>>,
  /// A model name that picks the encoding (see {@link TokenOptions.model}).
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

impl DeduplicationOptions {
  fn normalize(self) -> CoreResult<(DedupOptions, Encoding)> {
    let window =
      self.context_window.map(|w| integer_option("contextWindow", w, 1.0)).transpose()?;
    let threshold_tokens = DedupOptions::threshold_from(window, self.deduplication_threshold)?;
    let (mut io_content, mut survey_directory) = (true, true);
    if let Some(names) = &self.deduplicators {
      (io_content, survey_directory) = (false, false);
      for (k, name) in names.iter().enumerate() {
        match name.as_str() {
          "io-content" => io_content = true,
          "survey-directory" => survey_directory = true,
          other => {
            return Err(CoreError::option(
              format!("deduplicators[{k}]"),
              format!("must be one of io-content, survey-directory, got {other:?}"),
            ))
          }
        }
      }
    }
    let d = ToolNames::default();
    let tools = ToolNames {
      read: self.read_tools.unwrap_or(d.read),
      write: self.write_tools.unwrap_or(d.write),
      edit: self.edit_tools.unwrap_or(d.edit),
      path_keys: self.path_keys.unwrap_or(d.path_keys),
      shell: self.shell_tools.unwrap_or(d.shell),
      shell_command_keys: self.shell_command_keys.unwrap_or(d.shell_command_keys),
      list: self.list_tools.unwrap_or(d.list),
      list_path_keys: self.list_path_keys.unwrap_or(d.list_path_keys),
      recursive_keys: self.recursive_keys.unwrap_or(d.recursive_keys),
      depth_keys: self.depth_keys.unwrap_or(d.depth_keys),
      exclude_keys: self.exclude_keys.unwrap_or(d.exclude_keys),
    };
    let encoding = Encoding::resolve(self.model.as_deref(), self.encoding.as_deref())?
      .with_framing(self.framing);
    Ok((DedupOptions { threshold_tokens, io_content, survey_directory, tools }, encoding))
  }
}

/// A tool result that was replaced because a newer one supersedes it. Of a message of several
/// results (parallel calls answered in one message), each replaced result is an entry of its
/// own, with the message's index.
#[napi(object, object_from_js = false)]
pub struct SupersededResult {
  /// Its index (the same in the input and the output: nothing is removed).
  pub index: u32,
  /// The id of the tool call it answers.
  pub tool_call_id: Option<String>,
  /// The index of the first later result that supersedes it, the one its placeholder names (a
  /// still later result may supersede that one in turn: it is then listed too).
  pub superseded_by: u32,
  /// The id of the tool call the superseding result answers.
  pub superseded_by_tool_call_id: Option<String>,
  /// The file or directory both are about.
  pub path: String,
  /// What the superseding result is.
  #[napi(ts_type = "'read' | 'write' | 'edit' | 'listing'")]
  pub kind: String,
  /// The step of the superseding result.
  pub step: u32,
  /// Tokens the placeholder saves.
  pub saved_tokens: u32,
}

/// A kept tool result and the older results it supersedes (seed 003's `supersedes`).
#[napi(object, object_from_js = false)]
pub struct SupersedingResult {
  /// Its index.
  pub index: u32,
  /// The id of the tool call it answers (of a message of several results, that of its first
  /// result that supersedes one).
  pub tool_call_id: Option<String>,
  /// The indices of the messages whose results it supersedes, ascending.
  pub supersedes: Vec<u32>,
  /// The ids of their tool calls (the seed's `supersedes: list[str]`), in the same order: one
  /// per superseded result, so a message of several results may give several.
  pub supersedes_tool_call_ids: Vec<String>,
}

/// The result of {@link deduplicateToolResults}.
#[napi(object, object_from_js = false)]
pub struct DeduplicationResult<'env> {
  /// The messages: your own objects, except each superseded tool result, which is a copy with
  /// `content` = `[superseded by a newer read of src/a.ts at step 12]`, `_superseded: true`,
  /// `_supersededBy` (the index of the result that supersedes it) and `_originalTokens`.
  #[napi(ts_type = "AnyMessage[]")]
  pub messages: Array<'env>,
  /// Whether the request reached the threshold; when false, nothing was changed.
  pub deduplicated: bool,
  /// The request's tokens before minus after.
  pub saved_tokens: u32,
  /// The request's tokens after.
  pub total_tokens: u32,
  /// The token count from which history is rewritten (`deduplicationThreshold` ×
  /// `contextWindow`, rounded up); absent when deduplicating at any size.
  pub threshold_tokens: Option<u32>,
  /// The replaced results, by index.
  pub superseded: Vec<SupersededResult>,
  /// The kept results that supersede others, by index.
  pub supersedes: Vec<SupersedingResult>,
}

/// Replaces every tool result that a newer one supersedes with a short placeholder naming it,
/// e.g. `[superseded by a newer read of src/a.ts at step 12]`, once the request reaches
/// `deduplicationThreshold` of `contextWindow` (below it the messages come back unchanged).
///
/// Files (`io-content`): a newer read or whole write of the same path supersedes older reads,
/// writes and edits it covers (a read of lines 100–150 supersedes one of lines 110–120); an
/// edit supersedes only when its result shows the whole file. Listings (`survey-directory`): a
/// newer listing of the same directory supersedes an older one when it is at least as
/// inclusive. Failed operations are never touched. Nothing is dropped or moved, so every tool
/// call keeps its result. The input is never modified.
///
/// ```ts
/// const { messages, savedTokens, superseded } = deduplicateToolResults(history, { contextWindow: 128_000 })
/// ```
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], options?: DeduplicationOptions",
  ts_return_type = "Omit<DeduplicationResult, 'messages'> & { messages: M[] }"
)]
pub fn deduplicate_tool_results<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  let (input, op) = prepare(env, messages, options)?;
  task::run_sync(env, input, op)
}

/// {@link deduplicateToolResults} on the libuv thread pool: the Promise resolves to the same
/// result.
#[napi(
  catch_unwind,
  ts_generic_types = "M extends AnyMessageInput",
  ts_args_type = "messages: M[], options?: DeduplicationOptions",
  ts_return_type = "Promise<Omit<DeduplicationResult, 'messages'> & { messages: M[] }>"
)]
pub fn deduplicate_tool_results_async<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<Unknown<'env>> {
  task::spawn_or_reject(env, prepare(env, messages, options))
}

fn prepare<'env>(
  env: &'env Env,
  messages: Unknown<'env>,
  options: Option<Unknown<'env>>,
) -> Result<(read::JsMessages<'env>, DedupOp)> {
  let options: DeduplicationOptions = read_options(env, options, "options")?;
  let format = parse_format(options.format.as_deref()).map_err(|e| error::throw(env, e))?;
  let input = read::read_messages_in(env, messages, format)?;
  crate::napi::base::model_warning::warn_unknown_model(
    env,
    options.model.as_deref(),
    options.encoding.as_deref(),
  )?;
  let (options, encoding) = options.normalize().map_err(|e| error::throw(env, e))?;
  Ok((input, DedupOp { options, encoding }))
}

/// The deduplication as an [`task::Operation`].
pub(crate) struct DedupOp {
  options: DedupOptions,
  encoding: Encoding,
}

/// What [`DedupOp`] computes: the decisions and the call ids of the results involved.
pub(crate) struct DedupOutput {
  dedup: Dedup,
}

impl task::Operation for DedupOp {
  type Output = DedupOutput;

  fn compute(&mut self, messages: &[&Message], kept: Option<task::Kept<'_>>) -> DedupOutput {
    let conv = task::conversation(messages, self.encoding, kept);
    DedupOutput { dedup: dedup::deduplicate(&conv, &self.options) }
  }

  fn counts_in(&self) -> Option<Encoding> {
    Some(self.encoding)
  }

  fn to_js<'env>(
    &mut self,
    env: &'env Env,
    output: DedupOutput,
    objects: Objects<'_, 'env>,
    format: Format,
  ) -> Result<Unknown<'env>> {
    let DedupOutput { dedup } = output;
    let superseded = dedup
      .superseded
      .iter()
      .map(|s| SupersededResult {
        index: saturate(s.index),
        tool_call_id: s.call_id.clone(),
        superseded_by: saturate(s.superseded_by),
        superseded_by_tool_call_id: s.by_call_id.clone(),
        path: s.path.clone(),
        kind: s.noun.to_string(),
        step: saturate(s.step),
        saved_tokens: saturate(s.saved_tokens),
      })
      .collect();
    // Per superseding message: the call of its first superseding result, and the calls of the
    // results it supersedes, in order.
    let mut ids: BTreeMap<usize, (Option<String>, Vec<String>)> = BTreeMap::new();
    for s in &dedup.superseded {
      let (by, older) = ids.entry(s.superseded_by).or_default();
      if by.is_none() {
        by.clone_from(&s.by_call_id);
      }
      older.extend(s.call_id.clone());
    }
    let supersedes = dedup::supersedes(&dedup.superseded)
      .into_iter()
      .map(|(index, older)| {
        let (tool_call_id, supersedes_tool_call_ids) = ids.remove(&index).unwrap_or_default();
        SupersedingResult {
          index: saturate(index),
          tool_call_id,
          supersedes_tool_call_ids,
          supersedes: older.into_iter().map(saturate).collect(),
        }
      })
      .collect();
    let result = DeduplicationResult {
      messages: write::apply_plan_to(env, objects, format, &dedup.plan)?,
      deduplicated: dedup.applied,
      saved_tokens: saturate(dedup.saved_tokens),
      total_tokens: saturate(dedup.total_tokens),
      threshold_tokens: self.options.threshold_tokens.map(saturate),
      superseded,
      supersedes,
    };
    result.into_unknown(env)
  }
}
