//! Running a strategy synchronously or on the libuv thread pool.
//!
//! Every strategy binding is written once as an [`Operation`]: what it computes from the parsed
//! messages (on any thread) and how it turns that into a JavaScript value (on the JS thread).
//! `run_sync` calls both in turn; `spawn` computes in an `AsyncTask`, so trimming a large
//! history does not block the event loop, and resolves a `Promise`. Messages are read on the
//! JS thread in both cases (reading JS objects elsewhere is impossible); unchanged messages
//! come from the message cache, so that part is short.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi::{check_status, sys, Env, Task};

use super::cache::Cached;
pub(crate) use super::cache::Kept;
use super::read::JsMessages;
use super::write::Objects;
use crate::model::format::Format;
use crate::model::message::Message;

/// A strategy as the binding runs it.
pub(crate) trait Operation: Send + 'static {
  /// What `compute` produces.
  type Output: Send + 'static;

  /// Computes the result from the parsed messages. Runs on the JS thread or on a worker.
  /// `layout` is theirs in [`Operation::counts_in`]'s encoding when [`run_sync`] kept it from an
  /// earlier call (see [`conversation`]); `None` otherwise.
  fn compute(&mut self, messages: &[&Message], kept: Option<Kept<'_>>) -> Self::Output;

  /// The encoding the operation analyses the messages in, as they come: then [`run_sync`]
  /// hands [`Operation::compute`] the layout it keeps from call to call. `None` (the default)
  /// for the others, which get none.
  fn counts_in(&self) -> Option<crate::model::tokens::Encoding> {
    None
  }

  /// Builds the JavaScript result on the JS thread: `objects` are the caller's messages.
  fn to_js<'env>(
    &mut self,
    env: &'env Env,
    output: Self::Output,
    objects: Objects<'_, 'env>,
    format: Format,
  ) -> Result<Unknown<'env>>;
}

/// An [`Operation`] that can also run on a conversation analysed elsewhere (a `ContextWindow`'s
/// kept layout), so that nothing is analysed again.
pub(crate) trait OnConversation: Operation {
  /// [`Operation::compute`] on `conv`.
  fn compute_on(&mut self, conv: &crate::model::conversation::Conversation<'_>) -> Self::Output;
}

/// The conversation of `messages` counted in `encoding`: on what was kept for them (layout, file
/// operations, supersessions: see [`Operation::compute`]), else analysed anew.
pub(crate) fn conversation<'a>(
  messages: &[&'a Message],
  encoding: crate::model::tokens::Encoding,
  kept: Option<Kept<'a>>,
) -> crate::model::conversation::Conversation<'a> {
  use crate::model::conversation::Conversation;
  match kept {
    Some(kept) => {
      kept.analysis.give(Conversation::with_layout(messages.to_vec(), encoding, kept.layout))
    }
    None => Conversation::from_refs(messages.to_vec(), encoding),
  }
}

/// `f` of the conversation of `input` counted in `encoding`, on the layout the instance keeps
/// for these messages (`instance::LayoutMemo`): a history analysed on an earlier call is
/// extended by its new messages, not paired and grouped again. The layout is the instance's
/// only while `f` runs.
pub(crate) fn on_kept_conversation<R>(
  env: &Env,
  input: &JsMessages<'_>,
  encoding: crate::model::tokens::Encoding,
  f: impl FnOnce(&crate::model::conversation::Conversation<'_>) -> R,
) -> Result<R> {
  let refs: Vec<&Message> = input.messages.iter().map(|c| &c.message).collect();
  let kept = super::instance::instance(env)?.layout.analysed(&input.messages, encoding);
  let conv = conversation(&refs, encoding, Some(kept)).with_format(input.format);
  Ok(f(&conv))
}

/// Runs `op` now, on the JS thread.
pub(crate) fn run_sync<'env, O: Operation>(
  env: &'env Env,
  input: JsMessages<'env>,
  mut op: O,
) -> Result<Unknown<'env>> {
  let refs: Vec<&Message> = input.messages.iter().map(|c| &c.message).collect();
  let kept = match op.counts_in() {
    Some(encoding) => {
      Some(super::instance::instance(env)?.layout.analysed(&input.messages, encoding))
    }
    None => None,
  };
  let output = op.compute(&refs, kept);
  op.to_js(env, output, input.view(), input.format)
}

/// Runs `op` on the libuv thread pool and returns a `Promise` of its result.
pub(crate) fn spawn<O: Operation>(input: JsMessages<'_>, op: O) -> Result<AsyncTask<PlanTask<O>>> {
  let mut objects = Vec::with_capacity(input.len());
  for object in input.objects()? {
    objects.push(object.create_ref::<false>()?);
  }
  Ok(AsyncTask::new(PlanTask { op, messages: input.messages, objects, format: input.format }))
}

/// The Promise of an `…Async` function: the task of `prepared` on the libuv thread pool, or,
/// when reading the arguments failed, a Promise already rejected with the error the sync
/// variant throws (the same `TypeError` and `code`). A function that returns a Promise reports
/// every failure through it, as Node's own `fs.promises` do, so that `f(x).catch(…)` sees it.
pub(crate) fn spawn_or_reject<'env, O: Operation>(
  env: &'env Env,
  prepared: Result<(JsMessages<'env>, O)>,
) -> Result<Unknown<'env>> {
  match prepared.and_then(|(input, op)| spawn(input, op)) {
    Ok(task) => {
      // SAFETY: `env` is the live env of the current call.
      let raw = unsafe { AsyncTask::to_napi_value(env.raw(), task)? };
      // SAFETY: `raw` was just created in this env's current handle scope.
      Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) })
    }
    Err(err) => rejected(env, err),
  }
}

/// A Promise rejected with the pending exception (what `err` threw), or with `err` itself.
fn rejected<'env>(env: &'env Env, err: Error) -> Result<Unknown<'env>> {
  let raw_env = env.raw();
  let mut pending = false;
  // SAFETY: `raw_env` is the live env of the current call; `pending` is a valid out pointer.
  check_status!(unsafe { sys::napi_is_exception_pending(raw_env, &mut pending) })?;
  let mut reason = std::ptr::null_mut();
  if pending {
    // SAFETY: an exception is pending; `reason` is a valid out pointer.
    check_status!(unsafe { sys::napi_get_and_clear_last_exception(raw_env, &mut reason) })?;
  } else {
    // SAFETY: `raw_env` is live; a null result means it could not build the error.
    reason = unsafe { JsError::from(err).into_value(raw_env) };
    if reason.is_null() {
      return Err(Error::new(Status::GenericFailure, "context-trim: could not create an error"));
    }
  }
  let (mut deferred, mut promise) = (std::ptr::null_mut(), std::ptr::null_mut());
  // SAFETY: live env, valid out pointers; `reason` is a value of this env.
  check_status!(unsafe { sys::napi_create_promise(raw_env, &mut deferred, &mut promise) })?;
  // SAFETY: `deferred` was just created and is settled exactly once, here.
  check_status!(unsafe { sys::napi_reject_deferred(raw_env, deferred, reason) })?;
  // SAFETY: `promise` was just created in this env's current handle scope.
  Ok(unsafe { Unknown::from_raw_unchecked(raw_env, promise) })
}

/// An [`Operation`] in flight: the parsed messages travel to the worker, references to the
/// caller's objects stay for the resolution.
pub(crate) struct PlanTask<O: Operation> {
  op: O,
  messages: Vec<Arc<Cached>>,
  objects: Vec<ObjectRef<false>>,
  format: Format,
}

impl<O: Operation> Task for PlanTask<O> {
  type Output = O::Output;
  type JsValue = Unknown<'static>;

  fn compute(&mut self) -> Result<Self::Output> {
    let refs: Vec<&Message> = self.messages.iter().map(|c| &c.message).collect();
    // A panic here would take down a libuv worker: turn it into a rejection instead.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.op.compute(&refs, None))).map_err(
      |_| {
        Error::new(
          Status::GenericFailure,
          "context-trim: internal error while trimming (a panic); please report it",
        )
      },
    )
  }

  fn resolve(&mut self, env: Env, output: Self::Output) -> Result<Self::JsValue> {
    let mut objects = Vec::with_capacity(self.objects.len());
    for r in &self.objects {
      objects.push(r.get_value(&env)?);
    }
    let value = self.op.to_js(&env, output, Objects::Handles(&objects), self.format)?;
    // SAFETY: the value is returned straight to napi-rs, which hands it to the Promise while
    // `env`'s handle scope is still open; the 'static lifetime never escapes that call.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), value.raw()) })
  }

  fn finally(self, env: Env) -> Result<()> {
    for r in self.objects {
      r.unref(&env)?;
    }
    Ok(())
  }
}

/// The common case: a strategy that only returns messages. `plan` runs on the conversation
/// analysed in `encoding`; the result is the array of returned messages.
pub(crate) struct PlanOnly<F> {
  /// The encoding to count in.
  pub encoding: crate::model::tokens::Encoding,
  /// The format the messages were read in.
  pub format: Format,
  /// The strategy.
  pub plan: F,
}

impl<F> Operation for PlanOnly<F>
where
  F: FnMut(&crate::model::conversation::Conversation<'_>) -> crate::plan::Plan + Send + 'static,
{
  type Output = crate::plan::Plan;

  fn compute(&mut self, messages: &[&Message], kept: Option<Kept<'_>>) -> crate::plan::Plan {
    let conv = conversation(messages, self.encoding, kept).with_format(self.format);
    self.compute_on(&conv)
  }

  fn counts_in(&self) -> Option<crate::model::tokens::Encoding> {
    Some(self.encoding)
  }

  fn to_js<'env>(
    &mut self,
    env: &'env Env,
    plan: crate::plan::Plan,
    objects: Objects<'_, 'env>,
    format: Format,
  ) -> Result<Unknown<'env>> {
    super::write::apply_plan_to(env, objects, format, &plan)?.into_unknown(env)
  }
}

impl<F> OnConversation for PlanOnly<F>
where
  F: FnMut(&crate::model::conversation::Conversation<'_>) -> crate::plan::Plan + Send + 'static,
{
  fn compute_on(
    &mut self,
    conv: &crate::model::conversation::Conversation<'_>,
  ) -> crate::plan::Plan {
    let mut plan = (self.plan)(conv);
    plan.conform(conv);
    plan
  }
}
