//! Per-environment state of the addon (the main thread and each worker have their own): the
//! JavaScript helpers compiled once, the message cache ([`super::cache`]), the kept layouts and
//! the JSON entry points' buffers.

use napi::bindgen_prelude::*;
use napi::Env;

use super::cache::helpers::{ConfigureArgs, HelperLists, RememberArgs, ScanArgs, CACHE_HELPERS};
use super::cache::{
  LayoutMemo, MessageCache, DEFAULT_MESSAGE_CACHE_BYTES, DEFAULT_MESSAGE_CACHE_CAPACITY,
};
use crate::model::json_body::{MAX_DEPTH, MESSAGE_FIELDS, NESTED_FIELDS, SERIALISED_FIELDS};

/// The addon's state in one environment.
pub(crate) struct Instance {
  /// The result builder (see `write.rs`).
  pub build: FunctionRef<super::write::BuildArgs<'static>, Array<'static>>,
  /// `scan(messages) -> [Float64Array, Array | null]`: the cache ids (0 = read afresh) and a
  /// plain array of the elements (null when reading one threw).
  pub scan: FunctionRef<ScanArgs<'static>, Array<'static>>,
  /// `remember(objects, ids, indices, again)`.
  pub remember: FunctionRef<RememberArgs<'static>, Unknown<'static>>,
  /// `configure(bytes)`: the content index's bound.
  pub configure: FunctionRef<ConfigureArgs, Unknown<'static>>,
  /// `pick(source, indices)` (see `write.rs`).
  pub pick: FunctionRef<super::write::PickArgs<'static>, Array<'static>>,
  /// The `ClassifiedMessage` builder (see `classified.rs`).
  pub classified: FunctionRef<super::classified::ClassifiedArgs<'static>, Array<'static>>,
  /// The summarizer bridge (see `summary.rs`).
  pub summarize: FunctionRef<super::summary::SummarizeArgs<'static>, Unknown<'static>>,
  /// The unknown-option check's `watch(options, type)` (see `options.rs`).
  pub option_keys: FunctionRef<super::options::WatchArgs<'static>, Unknown<'static>>,
  /// The parsed messages.
  pub cache: MessageCache,
  /// Buffers of the JSON entry points, kept from call to call.
  pub scratch: Scratch,
  /// The layouts of the last conversations the synchronous strategies analysed.
  pub layout: LayoutMemo,
  /// The unknown `model` names warned about (see `model_warning.rs`).
  pub warned_models: std::collections::HashSet<String>,
}

/// The buffers a JSON body is read into and written to, kept from call to call: a fresh one
/// the size of a body costs its pages afresh (the allocator hands large blocks back to the
/// system), more than the copy itself.
#[derive(Default)]
pub(crate) struct Scratch {
  /// A string body as UTF-8.
  pub input: Vec<u8>,
  /// The trimmed body.
  pub output: String,
  /// A string body's UTF-16 code units, read or written.
  pub units: Vec<u16>,
}

/// The largest buffer [`Scratch`] keeps, in bytes.
const SCRATCH_BYTES: usize = 32 << 20;

impl Scratch {
  /// Keeps `bytes`' allocation for the next string body, unless it is over [`SCRATCH_BYTES`].
  pub fn keep_input(&mut self, bytes: Vec<u8>) {
    if bytes.capacity() <= SCRATCH_BYTES {
      self.input = bytes;
    }
  }

  /// Keeps `text`'s allocation for the next trimmed body, unless it is over [`SCRATCH_BYTES`].
  pub fn keep_output(&mut self, text: String) {
    if text.capacity() <= SCRATCH_BYTES {
      self.output = text;
    }
  }

  /// Frees the UTF-16 buffer if it is over [`SCRATCH_BYTES`].
  pub fn bound_units(&mut self) {
    if self.units.capacity() * std::mem::size_of::<u16>() > SCRATCH_BYTES {
      self.units = Vec::new();
    }
  }
}

impl Instance {
  /// Sets the message cache's bounds and empties it, with its JavaScript content index, whose
  /// bound is a quarter of the byte bound per generation (so at most half of it in all), 0 when
  /// the cache is disabled.
  pub fn reset_cache(&mut self, env: &Env, capacity: usize, max_bytes: usize) -> Result<()> {
    self.cache.reset(capacity, max_bytes);
    self.layout.clear();
    let bound = if capacity == 0 { 0.0 } else { (max_bytes / 4) as f64 };
    self.configure.borrow_back(env)?.call(FnArgs::from((bound,)))?;
    Ok(())
  }
}

/// The addon's state in `env`, created on first use.
pub(crate) fn instance(env: &Env) -> Result<&'static mut Instance> {
  if env.get_instance_data::<Instance>()?.is_none() {
    let build: super::write::BuildFn = env.run_script(super::write::BUILD)?;
    let factory: Function<HelperLists, Object> = env.run_script(CACHE_HELPERS)?;
    let helpers = factory.call(FnArgs::from((
      MESSAGE_FIELDS.to_vec(),
      NESTED_FIELDS.to_vec(),
      SERIALISED_FIELDS.to_vec(),
      MAX_DEPTH as u32,
      crate::model::format::KNOWN_PART_TYPES.to_vec(),
    )))?;
    let scan: Function<ScanArgs, Array> = helpers.get_named_property("scan")?;
    let remember: Function<RememberArgs, Unknown> = helpers.get_named_property("remember")?;
    let summarize: super::summary::SummarizeFn = env.run_script(super::summary::SUMMARIZE)?;
    let pick: Function<super::write::PickArgs, Array> = env.run_script(super::write::PICK)?;
    let classified: Function<super::classified::ClassifiedArgs, Array> =
      env.run_script(super::classified::CLASSIFIED)?;
    let option_keys: Function<super::options::WatchArgs, Unknown> =
      env.run_script(super::options::OPTION_KEYS)?;
    let configure: Function<ConfigureArgs, Unknown> = helpers.get_named_property("configure")?;
    let mut state = Instance {
      option_keys: option_keys.create_ref()?,
      build: build.create_ref()?,
      scan: scan.create_ref()?,
      remember: remember.create_ref()?,
      configure: configure.create_ref()?,
      summarize: summarize.create_ref()?,
      classified: classified.create_ref()?,
      pick: pick.create_ref()?,
      cache: MessageCache::new(),
      scratch: Scratch::default(),
      layout: LayoutMemo::default(),
      warned_models: std::collections::HashSet::new(),
    };
    state.reset_cache(env, DEFAULT_MESSAGE_CACHE_CAPACITY, DEFAULT_MESSAGE_CACHE_BYTES)?;
    env.set_instance_data(state, (), |_| {})?;
  }
  match env.get_instance_data::<Instance>()? {
    Some(state) => Ok(state),
    None => Err(Error::new(Status::GenericFailure, "the addon's state could not be created")),
  }
}
