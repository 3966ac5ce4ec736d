//! Writing results: a core [`Plan`] applied to the caller's own objects.
//!
//! Kept messages are returned as the very same objects; a replaced message is a shallow copy
//! made with object spread (`{...original, content, ...meta}`), so every field the caller had,
//! symbol keys included, survives, and an own `__proto__` key is copied as data, never as a
//! prototype. The caller's objects are never modified.

use napi::bindgen_prelude::*;
use napi::Env;

use crate::plan::{Action, MetaValue, Plan, Replacement};

const SPREAD: &str = "(function contextTrimSpread(o, p) { return { ...o, ...p }; })";

type Spread<'env> = Function<'env, FnArgs<(Object<'env>, Object<'env>)>, Object<'env>>;

/// Builds the returned array of messages from the caller's objects and a plan.
pub(crate) fn apply_plan<'env>(
  env: &'env Env,
  objects: &[Object<'env>],
  plan: &Plan,
) -> Result<Array<'env>> {
  let spread = spread_fn(env)?;
  let kept = plan.actions().iter().filter(|a| !matches!(a, Action::Drop)).count();
  let mut out = env.create_array(kept as u32)?;
  let mut j = 0;
  for (object, action) in objects.iter().zip(plan.actions()) {
    match action {
      Action::Keep => out.set(j, object)?,
      Action::Replace(r) => out.set(j, replaced(env, &spread, object, r)?)?,
      Action::Drop => continue,
    }
    j += 1;
  }
  Ok(out)
}

/// A copy of `object` with the replacement's content and metadata.
pub(crate) fn replaced<'env>(
  env: &'env Env,
  spread: &Spread<'env>,
  object: &Object<'env>,
  r: &Replacement,
) -> Result<Object<'env>> {
  let mut patch = Object::new(env)?;
  patch.set("content", r.content.as_str())?;
  for (key, value) in &r.meta {
    match value {
      MetaValue::Bool(b) => patch.set(key, *b)?,
      MetaValue::Number(n) => patch.set(key, *n)?,
      MetaValue::Text(t) => patch.set(key, t.as_str())?,
    }
  }
  // A second handle to the caller's object, of the type the helper takes.
  let original = Object::from_raw(env.raw(), object.raw());
  spread.call(FnArgs::from((original, patch)))
}

/// The spread helper, compiled once per JavaScript environment (main thread or worker).
pub(crate) fn spread_fn(env: &Env) -> Result<Spread<'_>> {
  if let Some(cached) = env.get_instance_data::<SpreadRef>()? {
    return cached.0.borrow_back(env);
  }
  let f: Spread = env.run_script(SPREAD)?;
  let reference = f.create_ref()?;
  env.set_instance_data(SpreadRef(reference), (), |_| {})?;
  match env.get_instance_data::<SpreadRef>()? {
    Some(cached) => cached.0.borrow_back(env),
    None => Err(Error::new(Status::GenericFailure, "the spread helper could not be cached")),
  }
}

struct SpreadRef(FunctionRef<FnArgs<(Object<'static>, Object<'static>)>, Object<'static>>);
