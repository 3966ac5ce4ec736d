//! Summaries for JavaScript: the summary options shared by the trimming functions, and the
//! bridge that hands the extractive draft to an app's summarizer callback on the async API.
//!
//! # The summarizer bridge
//!
//! The strategy and the draft are computed on a libuv worker. Back on the JS thread, the
//! result is not built at once: a small JavaScript helper (compiled once per environment, see
//! `instance.rs`) calls `summarizer(dropped, draft)`, races it against a `setTimeout` of
//! `summarizerTimeoutMs`, and calls a native `finish` function exactly once with the outcome:
//! the callback's text, or the reason to fall back to the draft. `finish` builds the result
//! (the summary text swapped in, the figures summed up again), and the helper's Promise, which
//! the async function's Promise adopts, resolves to it. A callback that throws, rejects,
//! resolves to something other than a non-empty string, or does not settle in time leaves the
//! draft in place; the result says which (`summarySource`, `summaryError`).

use std::cell::RefCell;

use napi::bindgen_prelude::*;

use super::write::Objects;
use napi::{Env, ValueType};
use napi_derive::napi;

use super::options::is_nullish;

use crate::error::{Error as CoreError, Result as CoreResult};
use crate::strategy::summarized::SummaryOptions;
use crate::strategy::summary::{DEFAULT_MAX_SUMMARY_TOKENS, MIN_SUMMARY_TOKENS};

use super::read;

/// The default of `summarizerTimeoutMs`.
pub(crate) const DEFAULT_SUMMARIZER_TIMEOUT_MS: u32 = 10_000;
/// The longest delay `setTimeout` honours (a longer one fires at once).
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// Where a returned summary comes from.
#[napi(string_enum = "kebab-case")]
pub enum SummarySource {
  /// The extractive summary (no summarizer was given).
  Extractive,
  /// The summarizer callback's text.
  Callback,
  /// The extractive draft, because the summarizer threw, rejected or resolved to something
  /// other than a non-empty string (see `summaryError`).
  FallbackError,
  /// The extractive draft, because the summarizer did not settle within
  /// `summarizerTimeoutMs` (see `summaryError`).
  FallbackTimeout,
}

impl SummarySource {
  fn parse(name: &str) -> Option<SummarySource> {
    match name {
      "callback" => Some(SummarySource::Callback),
      "fallback-error" => Some(SummarySource::FallbackError),
      "fallback-timeout" => Some(SummarySource::FallbackTimeout),
      _ => None,
    }
  }
}

/// The summary options as a trimming function received them.
pub(crate) struct SummaryFields<'env> {
  pub summarize_dropped: Option<bool>,
  /// `None` for a function that always inserts (`trimConversation`).
  pub insert_summary: Option<Option<bool>>,
  pub max_summary_tokens: Option<Unknown<'env>>,
  pub summarizer: Option<Unknown<'env>>,
  pub summarizer_timeout_ms: Option<Unknown<'env>>,
}

/// An app's summarizer callback, held until the worker is done.
pub(crate) struct Summarizer {
  function: FunctionRef<FnArgs<(Unknown<'static>,)>, Unknown<'static>>,
  timeout_ms: u32,
}

/// What to summarise and how.
pub(crate) struct SummaryRequest {
  /// The core options.
  pub options: SummaryOptions,
  /// The callback, on the async API.
  pub summarizer: Option<Summarizer>,
}

/// Reads the summary options; `asynchronous` says whether the function may call a summarizer.
/// `None` when no summary is asked for.
pub(crate) fn summary_request(
  fields: SummaryFields<'_>,
  asynchronous: bool,
) -> CoreResult<Option<SummaryRequest>> {
  let max_tokens = match fields.max_summary_tokens.filter(|v| !is_nullish(v)) {
    None => DEFAULT_MAX_SUMMARY_TOKENS,
    Some(v) => {
      let n = super::options::number(&v, "maxSummaryTokens")?;
      super::options::integer_option("maxSummaryTokens", n, MIN_SUMMARY_TOKENS as f64)?
    }
  };
  let timeout_ms = match fields.summarizer_timeout_ms.filter(|v| !is_nullish(v)) {
    None => DEFAULT_SUMMARIZER_TIMEOUT_MS,
    Some(v) => {
      let n = super::options::number(&v, "summarizerTimeoutMs")?;
      let ms = super::options::integer_option("summarizerTimeoutMs", n, 1.0)?;
      if n > MAX_TIMEOUT_MS {
        return Err(CoreError::option(
          "summarizerTimeoutMs",
          format!("must be at most 2147483647 (the longest setTimeout delay), got {ms}"),
        ));
      }
      ms as u32
    }
  };
  let summarize = fields.summarize_dropped.unwrap_or(false);
  let insert = match fields.insert_summary {
    Some(insert) => insert.unwrap_or(false),
    None => summarize,
  };
  if insert && !summarize {
    return Err(CoreError::option("insertSummary", "needs summarizeDropped: true"));
  }
  let summarizer = match fields.summarizer.filter(|v| !is_nullish(v)) {
    None => None,
    Some(_) if !asynchronous => {
      return Err(CoreError::option(
        "summarizer",
        "is only called by the async functions (trimByPriorityAsync, trimWithPlaceholdersAsync, trimConversationAsync); a sync function never calls it",
      ))
    }
    Some(v) if v.get_type().ok() != Some(ValueType::Function) => {
      return Err(CoreError::option(
        "summarizer",
        format!("must be a function, got {}", read::js_type_name(&v)),
      ))
    }
    Some(_) if !summarize => {
      return Err(CoreError::option("summarizer", "needs summarizeDropped: true"))
    }
    Some(v) => {
      let f: Function<FnArgs<(Unknown<'static>,)>, Unknown<'static>> = Function::from_unknown(v)
        .map_err(|e| CoreError::option("summarizer", e.reason))?;
      let function = f.create_ref().map_err(|e| CoreError::option("summarizer", e.reason))?;
      Some(Summarizer { function, timeout_ms })
    }
  };
  if !summarize {
    return Ok(None);
  }
  let options = SummaryOptions { max_tokens, insert, reserve_max: insert && summarizer.is_some() };
  Ok(Some(SummaryRequest { options, summarizer }))
}

/// How the summarizer's call ended, as `finish` receives it.
pub(crate) struct Settled {
  /// Where the summary comes from.
  pub source: SummarySource,
  /// The callback's text, when it is the source.
  pub text: Option<String>,
  /// Why the draft was kept.
  pub error: Option<String>,
}

/// Builds the result once the summarizer has settled: given the caller's objects and how the
/// call ended, returns the JavaScript result.
pub(crate) type Finish =
  Box<dyn for<'a> FnOnce(&'a Env, Objects<'_, 'a>, Settled) -> Result<napi::sys::napi_value>>;

/// The helper: `(summarizer, dropped, draft, timeoutMs, objects, finish) => Promise`.
pub(crate) const SUMMARIZE: &str = r#"(function contextTrimSummarize(summarizer, dropped, draft, timeoutMs, objects, finish) {
  const describe = (e) => (e instanceof Error ? e.message : String(e));
  return new Promise((resolve, reject) => {
    let settled = false;
    let timer;
    const settle = (source, text, error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        resolve(finish(objects, source, text, error));
      } catch (e) {
        reject(e);
      }
    };
    timer = setTimeout(() => settle('fallback-timeout', undefined, `summarizer did not settle within ${timeoutMs} ms`), timeoutMs);
    let pending;
    try {
      pending = Promise.resolve(summarizer(dropped, draft));
    } catch (e) {
      settle('fallback-error', undefined, describe(e));
      return;
    }
    pending.then(
      (text) => {
        if (typeof text === 'string' && text.trim() !== '') settle('callback', text);
        else settle('fallback-error', undefined, `summarizer must resolve to a non-empty string, got ${text === null ? 'null' : typeof text === 'string' ? 'an empty string' : typeof text}`);
      },
      (e) => settle('fallback-error', undefined, describe(e)),
    );
  });
})"#;

/// The helper's arguments.
pub(crate) type SummarizeArgs<'env> =
  FnArgs<(Unknown<'env>, Array<'env>, String, u32, Array<'env>, Unknown<'env>)>;
/// The helper.
pub(crate) type SummarizeFn<'env> = Function<'env, SummarizeArgs<'env>, Unknown<'env>>;

/// Calls `summarizer` with the `dropped` objects (indices into `objects`) and `draft`, and
/// returns the Promise of what `finish` makes of it.
pub(crate) fn ask<'env>(
  env: &'env Env,
  summarizer: &Summarizer,
  objects: Objects<'_, 'env>,
  dropped: &[usize],
  draft: &str,
  finish: Finish,
) -> Result<Unknown<'env>> {
  let dropped: Vec<u32> =
    dropped.iter().filter(|&&i| i < objects.len()).map(|&i| i as u32).collect();
  let dropped_array = objects.pick(env, &dropped)?;
  let all = objects.array(env)?;
  let finish = RefCell::new(Some(finish));
  let finish_fn = env.create_function_from_closure::<(), napi::sys::napi_value, _>(
    "contextTrimFinish",
    move |ctx: FunctionCallContext| {
      let Some(finish) = finish.borrow_mut().take() else {
        return Err(Error::new(Status::GenericFailure, "context-trim: summary finished twice"));
      };
      let env: &Env = ctx.env;
      let objects: Array = ctx.get(0)?;
      let source: String = ctx.get(1)?;
      let source = SummarySource::parse(&source).unwrap_or(SummarySource::FallbackError);
      let text = optional_string(ctx.get::<Unknown>(2)?);
      let error = optional_string(ctx.get::<Unknown>(3)?);
      finish(env, Objects::Array(&objects), Settled { source, text, error })
    },
  )?;
  let helper = super::instance::instance(env)?.summarize.borrow_back(env)?;
  let callback = summarizer.function.borrow_back(env)?;
  // SAFETY: both handles belong to the current call's scope.
  let callback = unsafe { Unknown::from_raw_unchecked(env.raw(), callback.raw()) };
  let finish_fn = unsafe { Unknown::from_raw_unchecked(env.raw(), finish_fn.raw()) };
  helper.call(FnArgs::from((
    callback,
    dropped_array,
    draft.to_string(),
    summarizer.timeout_ms,
    all,
    finish_fn,
  )))
}

fn optional_string(value: Unknown<'_>) -> Option<String> {
  match value.get_type() {
    Ok(ValueType::String) => String::from_unknown(value).ok(),
    _ => None,
  }
}
