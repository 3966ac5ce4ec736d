//! The Context Pruner for JavaScript (seed 001): the `ContextPruner` class.

use std::path::Path;

use napi::bindgen_prelude::*;
use napi::{Env, JsDate, ValueType};
use napi_derive::napi;

use crate::error::{js_number, Error as CoreError, Result as CoreResult};
use crate::model::conversation::Conversation;
use crate::model::tokens::Encoding;
use crate::strategy::archive::{self, iso8601};
use crate::strategy::pruner::{
  self, archive_markdown, archived_items, kept_items, reconstruction_note, write_archive,
  ConfigValue, PrunerConfig, Stamp,
};

use crate::napi::base::clock::Clock;
use crate::napi::base::options::{
  integer_option, is_nullish, parse_format, read_options, ResolvedTokenOptions,
};
use crate::napi::base::summary::{summary_request, SummaryFields};
use crate::napi::base::{error, read, saturate, write};

/// Options of a {@link ContextPruner}: the settings of `context-pruner.config.json`, plus the
/// clock and the tokenizer.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct ContextPrunerOptions<'env> {
  /// {@link ContextPruner.shouldPrune} is true from this percentage of the window (0–100).
  /// @default 80
  #[napi(ts_type = "number")]
  pub threshold: Option<Unknown<'env>>,
  /// From this percentage (0–100, at least `threshold`) a prune is an emergency and goes down
  /// to `emergencyTargetPercentage`.
  /// @default 90
  #[napi(ts_type = "number")]
  pub emergency_threshold: Option<Unknown<'env>>,
  /// How many of the last messages a prune always keeps (extended so that no tool call is
  /// separated from its results).
  /// @default 10
  #[napi(ts_type = "number")]
  pub keep_recent_messages: Option<Unknown<'env>>,
  /// The markdown archive; the archived messages go to the same path with `.jsonl` instead of
  /// `.md`. Relative paths are relative to the working directory.
  /// @default 'context-archive.md'
  #[napi(ts_type = "string")]
  pub archive_path: Option<Unknown<'env>>,
  /// Whether {@link ContextPruner.prune} returns the files to read again and a note for the
  /// agent saying so (`reconstruction`, `reconstructionNote`). The archive lists them anyway.
  /// @default true
  #[napi(ts_type = "boolean")]
  pub auto_reconstruct: Option<Unknown<'env>>,
  /// The context window in tokens, when the metrics do not give one.
  /// @default 128000
  #[napi(ts_type = "number")]
  pub max_tokens: Option<Unknown<'env>>,
  /// A prune brings the request down to this percentage of the window (0–100, at most
  /// `threshold`).
  /// @default 50
  #[napi(ts_type = "number")]
  pub target_percentage: Option<Unknown<'env>>,
  /// An emergency prune brings the request down to this percentage of the window (0–100, at
  /// most `targetPercentage`).
  /// @default 30
  #[napi(ts_type = "number")]
  pub emergency_target_percentage: Option<Unknown<'env>>,
  /// The clock that stamps prunes: milliseconds since the epoch, or a `Date`. Pass a fixed
  /// clock for archives that are the same on every run.
  /// @default Date.now
  #[napi(ts_type = "() => number | Date")]
  pub now: Option<Unknown<'env>>,
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
}

/// Options of one {@link ContextPruner.prune}: a summary of what is archived.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct PruneOptions<'env> {
  /// Return `summary`: a deterministic extractive summary of the archived messages (files,
  /// commands, errors, requests, decisions; see docs/summaries.md), also written to the
  /// markdown archive as its "Conversation Summary".
  /// @default false
  pub summarize_dropped: Option<bool>,
  /// Insert the summary into the returned messages (a `user` message flagged `_summary: true`,
  /// before the first returned message that is not an instruction); its tokens count towards
  /// the target. Needs `summarizeDropped`.
  /// @default false
  pub insert_summary: Option<bool>,
  /// The bound of the summary, in tokens (at least 64).
  /// @default 500
  #[napi(ts_type = "number")]
  pub max_summary_tokens: Option<Unknown<'env>>,
  /// The message format (see {@link TokenOptions.format}). Give it for Anthropic
  /// conversations without tool blocks, which read as OpenAI otherwise.
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// Options of {@link ContextPruner.fromConfigFile}: what a configuration file cannot hold.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct ContextPrunerFileOptions<'env> {
  /// The clock (see {@link ContextPrunerOptions.now}).
  /// @default Date.now
  #[napi(ts_type = "() => number | Date")]
  pub now: Option<Unknown<'env>>,
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
}

/// A pruner's configuration, every setting filled in.
#[napi(object, object_from_js = false)]
pub struct ResolvedPrunerConfig {
  /// Percentage of the window from which to prune.
  pub threshold: f64,
  /// Percentage of the window from which a prune is an emergency.
  pub emergency_threshold: f64,
  /// How many of the last messages a prune keeps.
  pub keep_recent_messages: u32,
  /// The markdown archive.
  pub archive_path: String,
  /// Whether prunes return the files to read again.
  pub auto_reconstruct: bool,
  /// The context window, when the metrics do not give one.
  pub max_tokens: u32,
  /// Percentage of the window a prune goes down to.
  pub target_percentage: f64,
  /// Percentage of the window an emergency prune goes down to.
  pub emergency_target_percentage: f64,
}

/// How full the context window is (the seed's `ContextMetrics`). Give `percentage`, or
/// `currentTokens` (and `maxTokens`, else the pruner's `maxTokens`).
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct ContextMetrics<'env> {
  /// The request's tokens (e.g. the provider's `usage.prompt_tokens`).
  pub current_tokens: Option<f64>,
  /// The context window; the pruner's own `maxTokens` when absent.
  pub max_tokens: Option<f64>,
  /// `currentTokens` as a percentage of `maxTokens`; wins over them when given.
  pub percentage: Option<f64>,
  /// Accepted for compatibility with the seed; not used.
  #[napi(ts_type = "Date | null")]
  #[allow(dead_code, reason = "part of the seed's ContextMetrics shape; the pruner keeps its own")]
  pub last_prune_time: Option<Unknown<'env>>,
}

/// How full the context window is, as {@link ContextPruner.measure} counts it. It can be passed
/// back as metrics.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct ContextUsage<'env> {
  /// The request's tokens, as {@link estimateTokens} counts them.
  pub current_tokens: u32,
  /// The pruner's context window.
  pub max_tokens: u32,
  /// `currentTokens` as a percentage of `maxTokens`.
  pub percentage: f64,
  /// When this pruner last pruned, if it did.
  #[napi(ts_type = "Date | null")]
  pub last_prune_time: Option<JsDate<'env>>,
}

/// A file to read again after a prune.
#[napi(object, object_from_js = false)]
pub struct FileToReread {
  /// The file's path.
  pub path: String,
  /// Whether the session modified it.
  pub modified: bool,
}

/// What {@link ContextPruner.prune} did (the seed's `PruneResult`, plus the messages).
#[napi(object, object_from_js = false)]
pub struct PruneResult<'env> {
  /// The summary of the archived messages, with `summarizeDropped`.
  pub summary: Option<String>,
  /// When the prune ran, from the pruner's clock.
  #[napi(ts_type = "Date")]
  pub timestamp: JsDate<'env>,
  /// The request's tokens before (as {@link estimateTokens} counts them).
  pub before_tokens: u32,
  /// The request's tokens after.
  pub after_tokens: u32,
  /// One line per archived message, e.g. `messages[12] read of src/a.ts (1,234 tokens)`.
  pub archived_items: Vec<String>,
  /// One line per kept message with why it was kept, e.g. `messages[0] system (120 tokens,
  /// kept: system): You are…`.
  pub kept_items: Vec<String>,
  /// `(beforeTokens - afterTokens) / beforeTokens` in percent, to one decimal.
  pub reduction: f64,
  /// The pruned messages: your own objects, in order, tool calls with their results.
  #[napi(ts_type = "AnyMessage[]")]
  pub messages: Array<'env>,
  /// The indices of the archived messages.
  pub archived_indices: Vec<u32>,
  /// Whether the metrics were at or above `emergencyThreshold` (the lower target was used).
  pub emergency: bool,
  /// The target in tokens: `targetPercentage` (or `emergencyTargetPercentage`) of the window.
  pub target_tokens: u32,
  /// Whether `afterTokens` is still above the target: what is always kept exceeds it.
  pub over_budget: bool,
  /// The markdown archive written to.
  pub archive_path: String,
  /// The JSONL file holding the archived messages.
  pub archive_data_path: String,
  /// The prune's number in the archive; absent when nothing was archived (nothing is written).
  pub prune: Option<u32>,
  /// With `autoReconstruct`: the files whose content was archived and is not shown by a kept
  /// message, modified files first, then the most recently accessed. Empty otherwise.
  pub reconstruction: Vec<FileToReread>,
  /// With `autoReconstruct` and something archived: a note for the agent naming the archive
  /// and the files to read again, to add to the conversation as you see fit.
  pub reconstruction_note: Option<String>,
}

/// An archived message as the archive holds it.
#[napi(object, object_from_js = false)]
pub struct ArchiveRecord<'env> {
  /// The number of the prune that archived it (1 for the first).
  pub prune: u32,
  /// When that prune ran (ISO 8601).
  pub timestamp: String,
  /// Its index in the messages given to that prune.
  pub index: u32,
  /// The message: `JSON.stringify(message)` is exactly the string `JSON.stringify` gave for
  /// your original.
  #[napi(ts_type = "AnyMessage")]
  pub message: Unknown<'env>,
}

/// Watches the context window and, when it fills up, prunes the conversation: what matters
/// least goes to an archive (markdown for reading, JSONL with every archived message), what
/// matters most stays. See docs/context-pruner.md.
///
/// ```ts
/// const pruner = ContextPruner.fromConfigFile() // context-pruner.config.json, or the defaults
/// const metrics = pruner.measure(messages)
/// if (pruner.shouldPrune(metrics)) {
///   const result = pruner.prune(messages, metrics)
///   messages = result.messages
/// }
/// ```
#[napi]
pub struct ContextPruner {
  config: PrunerConfig,
  encoding: Encoding,
  clock: Clock,
  last_prune: Option<f64>,
}

#[napi]
impl ContextPruner {
  /// A pruner with the settings given, the defaults for the others.
  #[napi(constructor, catch_unwind, ts_args_type = "options?: ContextPrunerOptions")]
  pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
    let o: ContextPrunerOptions = read_options(env, options, "options")?;
    let mut entries = Vec::new();
    for (key, value) in [
      ("threshold", o.threshold),
      ("emergencyThreshold", o.emergency_threshold),
      ("keepRecentMessages", o.keep_recent_messages),
      ("archivePath", o.archive_path),
      ("autoReconstruct", o.auto_reconstruct),
      ("maxTokens", o.max_tokens),
      ("targetPercentage", o.target_percentage),
      ("emergencyTargetPercentage", o.emergency_target_percentage),
    ] {
      if let Some(v) = value.map(config_value).transpose()?.flatten() {
        entries.push((key.to_string(), v));
      }
    }
    let config =
      PrunerConfig::from_entries(&entries, &|key, detail| CoreError::option(key, detail))
        .map_err(|e| error::throw(env, e))?;
    Self::with(env, config, o.now, o.model, o.encoding, o.framing)
  }

  /// A pruner configured by the JSON file at `path` (relative to the working directory): the
  /// settings it has, the defaults for the others. A missing file gives the defaults; a file
  /// that is not JSON, not an object, or has an unknown, mistyped or out-of-range setting throws
  /// `INVALID_CONFIG` naming the file and the setting; an unreadable file throws `IO_ERROR`.
  #[napi(factory, catch_unwind, ts_args_type = "path?: string, options?: ContextPrunerFileOptions")]
  pub fn from_config_file(
    env: &Env,
    path: Option<Unknown>,
    options: Option<Unknown>,
  ) -> Result<Self> {
    let options: ContextPrunerFileOptions = read_options(env, options, "options")?;
    let path = match path.filter(|p| !is_nullish(p)) {
      Some(p) => read::string_argument(&p, "path").map_err(|e| error::throw(env, e))?,
      None => pruner::DEFAULT_CONFIG_FILE.to_string(),
    };
    let config = PrunerConfig::load(Path::new(&path)).map_err(|e| error::throw(env, e))?;
    Self::with(env, config, options.now, options.model, options.encoding, options.framing)
  }

  fn with(
    env: &Env,
    config: PrunerConfig,
    now: Option<Unknown>,
    model: Option<String>,
    encoding: Option<String>,
    framing: Option<bool>,
  ) -> Result<Self> {
    crate::napi::base::model_warning::warn_unknown_model(
      env,
      model.as_deref(),
      encoding.as_deref(),
    )?;
    let encoding = Encoding::resolve(model.as_deref(), encoding.as_deref())
      .map(|e| e.with_framing(framing))
      .map_err(|e| error::throw(env, e))?;
    Ok(ContextPruner { config, encoding, clock: Clock::from_option(env, now)?, last_prune: None })
  }

  /// The configuration in use, every setting filled in.
  #[napi(getter, catch_unwind)]
  pub fn config(&self) -> ResolvedPrunerConfig {
    let c = &self.config;
    ResolvedPrunerConfig {
      threshold: c.threshold,
      emergency_threshold: c.emergency_threshold,
      keep_recent_messages: saturate(c.keep_recent_messages),
      archive_path: c.archive_path.clone(),
      auto_reconstruct: c.auto_reconstruct,
      max_tokens: saturate(c.max_tokens),
      target_percentage: c.target_percentage,
      emergency_target_percentage: c.emergency_target_percentage,
    }
  }

  /// The options in use, resolved: the settings of `config`, the counting (`encoding`,
  /// `framing`) and the clock (`now`, when one was given). `new ContextPruner(pruner.options)`
  /// prunes as this one (with no prune made yet).
  #[napi(
    getter,
    catch_unwind,
    ts_return_type = "ResolvedPrunerConfig & Omit<ResolvedTokenOptions, 'format'> & { now?: () => number | Date }"
  )]
  pub fn options<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
    // SAFETY: `to_napi_value` returns a live object handle of the current call.
    let mut options = unsafe {
      Object::from_napi_value(
        env.raw(),
        ResolvedPrunerConfig::to_napi_value(env.raw(), self.config())?,
      )
    }?;
    let counting = ResolvedTokenOptions::new(self.encoding, None);
    options.set_named_property("encoding", counting.encoding)?;
    options.set_named_property("framing", counting.framing)?;
    if let Some(now) = self.clock.function(env)? {
      options.set_named_property("now", now)?;
    }
    Ok(options)
  }

  /// The JSONL file that holds the archived messages (`archivePath` with `.jsonl`).
  #[napi(getter, catch_unwind)]
  pub fn archive_data_path(&self) -> String {
    self.config.sidecar_path()
  }

  /// Whether the window is full enough to prune: `percentage >= threshold`.
  #[napi(catch_unwind, ts_args_type = "metrics: ContextMetrics")]
  pub fn should_prune(&self, env: &Env, metrics: Unknown) -> Result<bool> {
    let (_, percentage) = self.metrics(env, Some(metrics), None)?;
    Ok(self.config.should_prune(percentage))
  }

  /// Whether the window is full enough for an emergency prune: `percentage >=
  /// emergencyThreshold`.
  #[napi(catch_unwind, ts_args_type = "metrics: ContextMetrics")]
  pub fn is_emergency(&self, env: &Env, metrics: Unknown) -> Result<bool> {
    let (_, percentage) = self.metrics(env, Some(metrics), None)?;
    Ok(self.config.is_emergency(percentage))
  }

  /// How full the window (`maxTokens`) is with `messages`, and when this pruner last pruned.
  #[napi(catch_unwind, ts_args_type = "messages: AnyMessageInput[]")]
  pub fn measure<'env>(
    &self,
    env: &'env Env,
    messages: Unknown<'env>,
  ) -> Result<ContextUsage<'env>> {
    let input = read::read_messages(env, messages)?;
    let tokens = input.conversation(self.encoding).total_tokens();
    let max = self.config.max_tokens;
    Ok(ContextUsage {
      current_tokens: saturate(tokens),
      max_tokens: saturate(max),
      percentage: tokens as f64 * 100.0 / max as f64,
      last_prune_time: self.last_prune.map(|t| env.create_date(t)).transpose()?,
    })
  }

  /// Prunes `messages` down to `targetPercentage` of the window (`emergencyTargetPercentage`
  /// when the metrics are at or above `emergencyThreshold`; without metrics, the messages'
  /// own count against `maxTokens` decides). Keeps system and developer messages, agent
  /// instructions, the current task, the latest content of each modified file (`MODIFIED_FILES`), the last
  /// `keepRecentMessages` messages with their tool pairs, and whatever fits the target after
  /// the lowest-priority units are gone. Archives the rest: appended to the JSONL file
  /// verbatim (`JSON.stringify` of your objects) and described in the markdown archive, each
  /// in one locked append (several pruners may share an archive). Nothing is written when
  /// nothing is archived. The input is never modified.
  #[napi(
    catch_unwind,
    ts_generic_types = "M extends AnyMessageInput",
    ts_args_type = "messages: M[], metrics?: ContextMetrics | null, options?: PruneOptions",
    ts_return_type = "Omit<PruneResult, 'messages'> & { messages: M[] }"
  )]
  pub fn prune<'env>(
    &mut self,
    env: &'env Env,
    messages: Unknown<'env>,
    metrics: Option<Unknown<'env>>,
    options: Option<Unknown<'env>>,
  ) -> Result<PruneResult<'env>> {
    let throw = |e: CoreError| error::throw(env, e);
    let options: PruneOptions = read_options(env, options, "options")?;
    let fields = SummaryFields {
      summarize_dropped: options.summarize_dropped,
      insert_summary: Some(options.insert_summary),
      max_summary_tokens: options.max_summary_tokens,
      summarizer: None,
      summarizer_timeout_ms: None,
    };
    let summary = summary_request(fields, false).map_err(throw)?.map(|r| r.options);
    let format = parse_format(options.format.as_deref()).map_err(throw)?;
    let input = read::read_messages_in(env, messages, format)?;
    let conv = input.conversation(self.encoding);
    let (window, percentage) = self.metrics(env, metrics, Some(&conv))?;
    let emergency = self.config.is_emergency(percentage);
    let pruning =
      pruner::prune_summarized(&conv, &self.config, window, emergency, summary.as_ref());
    let time = self.clock.now(env)?;
    let timestamp = iso8601(time).ok_or_else(|| {
      throw(CoreError::option(
        "now",
        format!("must return a time within the range of a Date, got {}", js_number(time)),
      ))
    })?;
    let data_path = self.config.sidecar_path();
    let mut prune = None;
    if !pruning.archived.is_empty() {
      let mut records = Vec::with_capacity(pruning.archived.len());
      for &i in &pruning.archived {
        let Some(object) = input.object(i)? else { continue };
        let json = read::json_stringify(env, object.to_unknown(), i).map_err(throw)?;
        records.push((i, json));
      }
      let config = &self.config;
      let written = write_archive(config, &timestamp, &records, |number| {
        let stamp = Stamp { timestamp: &timestamp, prune: number, window, data_path: &data_path };
        archive_markdown(&conv, &pruning, config, &stamp)
      })
      .map_err(throw)?;
      prune = Some(saturate(written.prune as usize));
    }
    self.last_prune = Some(time);
    let auto = self.config.auto_reconstruct;
    Ok(PruneResult {
      timestamp: env.create_date(time)?,
      before_tokens: saturate(pruning.before_tokens),
      after_tokens: saturate(pruning.after_tokens),
      archived_items: archived_items(&conv, &pruning),
      kept_items: kept_items(&conv, &pruning),
      reduction: pruning.reduction(),
      summary: pruning.summary.as_ref().map(|s| s.text.clone()),
      messages: write::apply_plan(env, &input, &pruning.plan)?,
      archived_indices: pruning.archived.iter().map(|&i| saturate(i)).collect(),
      emergency,
      target_tokens: saturate(pruning.target_tokens),
      over_budget: pruning.over_budget,
      archive_path: self.config.archive_path.clone(),
      archive_data_path: data_path,
      prune,
      reconstruction: if auto {
        let files = pruning.reconstruction.iter();
        files.map(|r| FileToReread { path: r.path.clone(), modified: r.modified }).collect()
      } else {
        Vec::new()
      },
      reconstruction_note: (auto && !pruning.archived.is_empty())
        .then(|| reconstruction_note(&pruning, &self.config.archive_path)),
    })
  }

  /// Every message archived so far, in the order archived, with the prune that archived it.
  /// An archive never written gives `[]`.
  #[napi(catch_unwind)]
  pub fn read_archive<'env>(&self, env: &'env Env) -> Result<Vec<ArchiveRecord<'env>>> {
    let records = archive::read_records(Path::new(&self.config.sidecar_path()))
      .map_err(|e| error::throw(env, e))?;
    let parse = json_parse(env)?;
    let mut out = Vec::with_capacity(records.len());
    for r in records {
      out.push(ArchiveRecord {
        prune: saturate(r.prune as usize),
        timestamp: r.timestamp,
        index: saturate(r.index),
        message: parse.call(r.json)?,
      });
    }
    Ok(out)
  }

  /// Every archived message, in the order archived: what was pruned, byte for byte
  /// (`JSON.stringify` of each equals that of your original). Name your message type to get
  /// them typed: `pruner.reconstruct<ChatCompletionMessageParam>()`.
  #[napi(
    catch_unwind,
    ts_generic_types = "M extends AnyMessageInput = AnyMessage",
    ts_return_type = "M[]"
  )]
  pub fn reconstruct<'env>(&self, env: &'env Env) -> Result<Vec<Unknown<'env>>> {
    Ok(self.read_archive(env)?.into_iter().map(|r| r.message).collect())
  }

  /// The window size and fill percentage of `metrics`; without metrics, `conv`'s tokens against
  /// the configured window.
  fn metrics(
    &self,
    env: &Env,
    metrics: Option<Unknown>,
    conv: Option<&Conversation<'_>>,
  ) -> Result<(usize, f64)> {
    let given: Option<ContextMetrics> = match metrics.filter(|m| !is_nullish(m)) {
      Some(m) => Some(read_options(env, Some(m), "metrics")?),
      None => None,
    };
    let own = conv.map(|c| c.total_tokens());
    read_metrics(given, self.config.max_tokens, own).map_err(|e| error::throw(env, e))
  }
}

/// Checks metrics: (window, percentage).
fn read_metrics(
  metrics: Option<ContextMetrics>,
  default_window: usize,
  own_tokens: Option<usize>,
) -> CoreResult<(usize, f64)> {
  let m = metrics.unwrap_or_default();
  let window = match m.max_tokens {
    Some(w) => integer_option("metrics.maxTokens", w, 1.0)?,
    None => default_window,
  };
  if let Some(p) = m.percentage {
    if !(p.is_finite() && p >= 0.0) {
      return Err(CoreError::option(
        "metrics.percentage",
        format!("must be a non-negative number, got {}", js_number(p)),
      ));
    }
    return Ok((window, p));
  }
  let tokens = match (m.current_tokens, own_tokens) {
    (Some(t), _) => integer_option("metrics.currentTokens", t, 0.0)?,
    (None, Some(t)) => t,
    (None, None) => {
      return Err(CoreError::option(
        "metrics",
        "must give percentage, or currentTokens (with maxTokens or the pruner's maxTokens)",
      ))
    }
  };
  Ok((window, tokens as f64 * 100.0 / window as f64))
}

/// A setting as given in JavaScript: `None` for `undefined`/`null` (not given).
fn config_value(value: Unknown<'_>) -> Result<Option<ConfigValue>> {
  Ok(Some(match value.get_type()? {
    ValueType::Undefined | ValueType::Null => return Ok(None),
    ValueType::Number => ConfigValue::Number(value.coerce_to_number()?.get_double()?),
    ValueType::String => ConfigValue::Text(String::from_unknown(value)?),
    ValueType::Boolean => ConfigValue::Bool(value.coerce_to_bool()?),
    _ => {
      let name = read::js_type_name(&value);
      let article = if matches!(name, "array" | "object") { "an" } else { "a" };
      ConfigValue::Other(format!("{article} {name}"))
    }
  }))
}

fn json_parse(env: &Env) -> Result<Function<'_, String, Unknown<'_>>> {
  let json: Object = env.get_global()?.get_named_property("JSON")?;
  json.get_named_property("parse")
}
