//! Writing results: a core [`Plan`] applied to the caller's own objects.
//!
//! Kept messages are returned as the very same objects. A replaced message is a shallow copy made
//! with object spread, so every field the caller had (symbol keys included) survives and an own
//! `__proto__` key is copied as data, never as a prototype; the caller's objects are never
//! modified. What is replaced keeps each format's shape: the whole `content` of an OpenAI
//! message; the `content` of each `tool_result` block of an Anthropic message; the `output` of
//! each `tool-result` part of an AI SDK message (as `{type: 'text', value}`).

use napi::bindgen_prelude::*;
use napi::Env;

use super::read::JsMessages;
use crate::format::Format;
use crate::plan::{Action, MetaValue, Plan, Replacement};

/// The copy-with-replacement helper, compiled once per JavaScript environment.
pub(crate) const REPLACE: &str = r#"(function contextTrimReplace(o, text, meta, format) {
  let content = text;
  if (Array.isArray(o.content)) {
    if (format === 'anthropic' && o.content.some((b) => b && b.type === 'tool_result')) {
      content = o.content.map((b) => (b && b.type === 'tool_result' ? { ...b, content: text } : b));
    } else if (format === 'ai-sdk' && o.content.some((p) => p && p.type === 'tool-result')) {
      content = o.content.map((p) => (p && p.type === 'tool-result' ? { ...p, output: { type: 'text', value: text } } : p));
    }
  }
  return { ...o, content, ...meta };
})"#;

pub(crate) type ReplaceArgs<'env> = FnArgs<(Object<'env>, String, Object<'env>, &'static str)>;
pub(crate) type ReplaceFn<'env> = Function<'env, ReplaceArgs<'env>, Object<'env>>;

/// Builds the returned array of messages from the caller's objects and a plan.
pub(crate) fn apply_plan<'env>(
  env: &'env Env,
  input: &JsMessages<'env>,
  plan: &Plan,
) -> Result<Array<'env>> {
  apply_plan_to(env, &input.objects, input.format, plan)
}

/// [`apply_plan`] on objects read in `format`.
pub(crate) fn apply_plan_to<'env>(
  env: &'env Env,
  objects: &[Object<'env>],
  format: Format,
  plan: &Plan,
) -> Result<Array<'env>> {
  let kept = plan.actions().iter().filter(|a| !matches!(a, Action::Drop)).count();
  let mut out = env.create_array(kept as u32)?;
  let mut replacer = None;
  let mut j = 0;
  for (object, action) in objects.iter().zip(plan.actions()) {
    match action {
      Action::Keep => out.set(j, object)?,
      Action::Replace(r) => {
        let f = match &replacer {
          Some(f) => f,
          None => replacer.insert(replace_fn(env)?),
        };
        out.set(j, replaced(env, f, object, r, format)?)?
      }
      Action::Drop => continue,
    }
    j += 1;
  }
  Ok(out)
}

/// A copy of `object` with the replacement's content and metadata.
fn replaced<'env>(
  env: &'env Env,
  f: &ReplaceFn<'env>,
  object: &Object<'env>,
  r: &Replacement,
  format: Format,
) -> Result<Object<'env>> {
  let mut meta = Object::new(env)?;
  for (key, value) in &r.meta {
    match value {
      MetaValue::Bool(b) => meta.set(key, *b)?,
      MetaValue::Number(n) => meta.set(key, *n)?,
      MetaValue::Text(t) => meta.set(key, t.as_str())?,
    }
  }
  // A second handle to the caller's object, of the type the helper takes.
  let original = Object::from_raw(env.raw(), object.raw());
  f.call(FnArgs::from((original, r.content.clone(), meta, format.as_str())))
}

fn replace_fn(env: &Env) -> Result<ReplaceFn<'_>> {
  super::instance::instance(env)?.replace.borrow_back(env)
}
