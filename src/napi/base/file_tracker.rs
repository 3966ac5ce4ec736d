//! The {@link FileTracker} class, and the `fileTracker` option that hands one to a trimming call:
//! in the base floor because `trimByPriority`, `trimWithPlaceholders` and `trimConversation` read
//! it (napi-derive wants a class's methods with its struct).

use napi::bindgen_prelude::*;
use napi::Env;
use napi_derive::napi;

use crate::analysis::file_ops::FileOpKind;
use crate::analysis::file_tracker::{FileReference as CoreReference, FileTracker as CoreTracker};
use crate::error::{Error as CoreError, ErrorKind, Result as CoreResult};
use crate::model::conversation::Conversation;
use crate::model::tokens::Encoding;

use super::classified::FileOperation;
use super::clock::Clock;
use super::options::{integer_argument, is_nullish, parse_format, read_options};
use super::{error, read, saturate};

/// The files a session read, created, edited or deleted, by path, with the step of their last
/// access. Build one from a conversation with {@link FileTracker.fromMessages}, or fill it with
/// {@link FileTracker.trackAccess}; pass it to {@link trimByPriority} as `fileTracker` to decide
/// which files count as modified.
#[napi]
pub struct FileTracker {
  pub(crate) inner: CoreTracker,
  clock: Clock,
}

/// The `fileTracker` option: absent, or a {@link FileTracker} (its state as of this call).
pub(crate) fn file_tracker_option(value: Option<Unknown<'_>>) -> CoreResult<Option<CoreTracker>> {
  match value.filter(|v| !is_nullish(v)) {
    None => Ok(None),
    Some(v) => {
      let got = read::js_type_name(&v);
      let instance = ClassInstance::<FileTracker>::from_unknown(v).map_err(|_| {
        CoreError::option("fileTracker", format!("must be a FileTracker, got {got}"))
      })?;
      Ok(Some(instance.inner.clone()))
    }
  }
}

/// Options of {@link FileTracker}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct FileTrackerOptions<'env> {
  /// The clock that stamps `lastAccessTime`: milliseconds since the epoch, or a `Date`. Pass a
  /// fixed clock (`() => 0`) for results that are the same on every run.
  /// @default Date.now
  #[napi(ts_type = "() => number | Date")]
  pub now: Option<Unknown<'env>>,
}

/// Options of {@link FileTracker.fromMessages}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct FromMessagesOptions<'env> {
  /// The clock (see {@link FileTrackerOptions.now}).
  /// @default Date.now
  #[napi(ts_type = "() => number | Date")]
  pub now: Option<Unknown<'env>>,
  /// The message format (see {@link TokenOptions.format}).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// What a {@link FileTracker} knows about one file.
#[napi(object, object_from_js = false, js_name = "FileReference")]
pub struct JsFileReference {
  /// The file's path.
  pub path: String,
  /// The step of the last access.
  pub last_access_step: u32,
  /// The time of the last access, from the tracker's clock.
  pub last_access_time: f64,
  /// Whether any access created, edited or deleted it.
  pub was_modified: bool,
  /// The last operation.
  pub operation: FileOperation,
  /// The first 200 characters of the last access's content.
  pub content_preview: Option<String>,
  /// The number of lines of the last access's content.
  pub line_count: Option<u32>,
}

impl From<&CoreReference> for JsFileReference {
  fn from(r: &CoreReference) -> Self {
    JsFileReference {
      path: r.path.clone(),
      last_access_step: saturate(r.last_access_step),
      last_access_time: r.last_access_time,
      was_modified: r.was_modified,
      operation: r.operation.into(),
      content_preview: r.content_preview.clone(),
      line_count: r.line_count.map(saturate),
    }
  }
}

#[napi]
impl FileTracker {
  /// An empty tracker.
  #[napi(constructor, catch_unwind, ts_args_type = "options?: FileTrackerOptions")]
  pub fn new(env: &Env, options: Option<Unknown>) -> Result<Self> {
    Ok(FileTracker { inner: CoreTracker::new(), clock: clock(env, options)? })
  }

  /// Records an access to `path` at `step`: a modification (`create`, `edit`, `delete`) marks
  /// the file modified for good; `content` gives the preview and line count.
  #[napi(
    catch_unwind,
    ts_args_type = "path: string, step: number, operation: FileOperation, content?: string"
  )]
  pub fn track_access(
    &mut self,
    env: &Env,
    path: Unknown,
    step: Unknown,
    operation: Unknown,
    content: Option<Unknown>,
  ) -> Result<()> {
    let throw = |e: CoreError| error::throw(env, e);
    let path = read::string_argument(&path, "path").map_err(throw)?;
    let step = integer_argument(&step, "step", 0.0).map_err(throw)?;
    let operation = read::string_argument(&operation, "operation").map_err(throw)?;
    let operation = FileOpKind::parse(&operation).ok_or_else(|| {
      throw(CoreError::new(
        ErrorKind::InvalidArgument,
        "operation",
        format!("must be one of read, create, edit, delete, got {operation:?}"),
      ))
    })?;
    let content = match content {
      Some(c) if !is_nullish(&c) => Some(read::string_argument(&c, "content").map_err(throw)?),
      _ => None,
    };
    let time = self.now(env)?;
    self.inner.track_access(&path, step, operation, content.as_deref(), time);
    Ok(())
  }

  /// The options given, resolved: `{ now }` when a clock was given, `{}` for the system clock.
  /// `new FileTracker(tracker.options)` is an empty tracker on the same clock.
  #[napi(getter, catch_unwind, ts_return_type = "FileTrackerOptions")]
  pub fn options<'env>(&self, env: &'env Env) -> Result<Object<'env>> {
    let mut options = Object::new(env)?;
    if let Some(now) = self.clock.function(env)? {
      options.set_named_property("now", now)?;
    }
    Ok(options)
  }

  /// Whether `path` was modified in this session.
  #[napi(catch_unwind, ts_args_type = "path: string")]
  pub fn was_modified(&self, env: &Env, path: Unknown) -> Result<bool> {
    let path = read::string_argument(&path, "path").map_err(|e| error::throw(env, e))?;
    Ok(self.inner.was_modified(&path))
  }

  /// The paths of the modified files, in the order they were first accessed.
  #[napi(catch_unwind, ts_return_type = "Set<string>")]
  pub fn get_modified_files<'env>(&self, env: &'env Env) -> Result<Unknown<'env>> {
    let paths: Vec<&str> = self.inner.modified_files();
    let set: Function<Array, Unknown> = env.get_global()?.get_named_property("Set")?;
    set.new_instance(Array::from_vec(env, paths)?)
  }

  /// Whether the last access to `path` is more than `maxAge` steps before `currentStep` (a
  /// file never accessed is stale).
  #[napi(catch_unwind, ts_args_type = "path: string, currentStep: number, maxAge: number")]
  pub fn is_stale(
    &self,
    env: &Env,
    path: Unknown,
    current_step: Unknown,
    max_age: Unknown,
  ) -> Result<bool> {
    let throw = |e: CoreError| error::throw(env, e);
    let path = read::string_argument(&path, "path").map_err(throw)?;
    let current = integer_argument(&current_step, "currentStep", 0.0).map_err(throw)?;
    let max_age = integer_argument(&max_age, "maxAge", 0.0).map_err(throw)?;
    Ok(self.inner.is_stale(&path, current, max_age))
  }

  /// The files accessed at most `maxAge` steps before `currentStep`, newest first.
  #[napi(catch_unwind, ts_args_type = "currentStep: number, maxAge: number")]
  pub fn get_recent_files(
    &self,
    env: &Env,
    current_step: Unknown,
    max_age: Unknown,
  ) -> Result<Vec<JsFileReference>> {
    let throw = |e: CoreError| error::throw(env, e);
    let current = integer_argument(&current_step, "currentStep", 0.0).map_err(throw)?;
    let max_age = integer_argument(&max_age, "maxAge", 0.0).map_err(throw)?;
    Ok(self.inner.recent_files(current, max_age).into_iter().map(JsFileReference::from).collect())
  }

  /// Builds a tracker from a conversation: every tool result about a file (as the call's
  /// arguments or the result show it) is an access at the step of its call. A modification
  /// whose result reports failure counts as a read. The clock is read once.
  #[napi(
    factory,
    catch_unwind,
    ts_args_type = "messages: AnyMessageInput[], options?: FromMessagesOptions"
  )]
  pub fn from_messages(env: &Env, messages: Unknown, options: Option<Unknown>) -> Result<Self> {
    let options: FromMessagesOptions = read_options(env, options, "options")?;
    let format = parse_format(options.format.as_deref()).map_err(|e| error::throw(env, e))?;
    let input = read::read_messages_in(env, messages, format)?;
    let clock = Clock::from_option(env, options.now)?;
    let mut tracker = FileTracker { inner: CoreTracker::new(), clock };
    let time = tracker.now(env)?;
    let conv =
      Conversation::with_tokens(input.refs(), Encoding::default(), vec![0; input.messages.len()]);
    tracker.inner = CoreTracker::from_conversation(&conv, time);
    Ok(tracker)
  }

  fn now(&self, env: &Env) -> Result<f64> {
    self.clock.now(env)
  }
}

fn clock(env: &Env, options: Option<Unknown>) -> Result<Clock> {
  let options: FileTrackerOptions = read_options(env, options, "options")?;
  Clock::from_option(env, options.now)
}
