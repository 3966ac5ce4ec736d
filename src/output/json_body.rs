//! Request bodies written back as JSON text from a [`Plan`]: a kept message is its original
//! bytes, a shortened one is rewritten in its format's shape, and every byte of the body outside
//! the messages array is kept (the body itself is read by [`crate::model::json_body`]).

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::model::format::Format;
use crate::model::json_body::{lone_surrogates_replaced, push_json_string, Body, Entries, LoneAs};
use crate::plan::{Action, Plan, Replacement, Step};

impl Body<'_> {
  /// The body with the plan applied to its messages (messages read in `format`): kept
  /// messages are their original bytes; a replaced message is rewritten with the
  /// replacement's content in its format's shape (see [`rewrite`]); an inserted message is
  /// `{"role":…,"content":…}`. Everything around the messages array is kept as it was.
  ///
  /// # Errors
  ///
  /// Never for a body [`Body::parse`] accepted; an error names the message otherwise.
  pub fn write(&self, plan: &Plan, format: Format) -> Result<String> {
    let mut out = String::new();
    self.write_with(&mut out, plan, |out, i, raw, r| {
      out.push_str(&rewrite(raw, r, format, i)?);
      Ok(())
    })?;
    Ok(out)
  }

  /// [`Body::write`] into `out` (emptied first: a buffer kept from call to call), with each
  /// replaced message written by `replaced(out, index, raw, r)`, which appends [`rewrite`]'s
  /// text to `out` (or the same text kept from an earlier call).
  ///
  /// # Errors
  ///
  /// The first error of `replaced`.
  pub fn write_with(
    &self,
    out: &mut String,
    plan: &Plan,
    replaced: impl FnMut(&mut String, usize, &str, &Replacement) -> Result<()>,
  ) -> Result<()> {
    self.write_traced(out, plan, replaced, None)
  }

  /// [`Body::write_with`], also listing in `copies`, when given (emptied first), every run of
  /// `out` copied from the body's text, in order: the text before the messages array, each
  /// kept message, the text after the array. What is not in a run (brackets, commas, rewritten
  /// and inserted messages) is new. See [`written_units`].
  ///
  /// # Errors
  ///
  /// The first error of `replaced`.
  pub fn write_with_copies(
    &self,
    out: &mut String,
    plan: &Plan,
    replaced: impl FnMut(&mut String, usize, &str, &Replacement) -> Result<()>,
    mut copies: Option<&mut Vec<Copied>>,
  ) -> Result<()> {
    if let Some(copies) = copies.as_deref_mut() {
      copies.clear();
    }
    self.write_traced(out, plan, replaced, copies)
  }

  fn write_traced(
    &self,
    out: &mut String,
    plan: &Plan,
    mut replaced: impl FnMut(&mut String, usize, &str, &Replacement) -> Result<()>,
    mut copies: Option<&mut Vec<Copied>>,
  ) -> Result<()> {
    let mut copy = |out: &mut String, text: std::ops::Range<usize>| {
      if let Some(copies) = copies.as_deref_mut() {
        copies.push(Copied { out: out.len()..out.len() + text.len(), text: text.clone() });
      }
      out.push_str(&self.text[text]);
    };
    out.clear();
    out.reserve(self.text.len());
    copy(out, 0..self.array.start);
    out.push('[');
    let mut first = true;
    let mut failed = None;
    let indexed: Vec<(usize, &str)> = self.messages.iter().copied().enumerate().collect();
    plan.walk(&indexed, |step| {
      if matches!(step, Step::Input(_, Action::Drop)) || failed.is_some() {
        return;
      }
      if !first {
        out.push(',');
      }
      first = false;
      match step {
        Step::Input(_, Action::Drop) => {}
        Step::Input((i, raw), Action::Keep) => {
          debug_assert_eq!(&self.text[self.spans[*i].clone()], *raw);
          copy(out, self.spans[*i].clone());
        }
        Step::Input((i, raw), Action::Replace(r)) => {
          if let Err(e) = replaced(out, *i, raw, r) {
            failed = Some(e);
          }
        }
        Step::Inserted(m) => {
          out.push_str("{\"role\":");
          push_json_string(out, m.role.as_str());
          out.push_str(",\"content\":");
          push_json_string(out, &m.content);
          out.push('}');
        }
      }
    });
    if let Some(e) = failed {
      return Err(e);
    }
    out.push(']');
    copy(out, self.array.end..self.text.len());
    Ok(())
  }
}

/// A run of a written body copied from the body's text ([`Body::write_with_copies`]): its bytes
/// in the written body and in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
  /// Where the run is in the written body.
  pub out: std::ops::Range<usize>,
  /// Where it was copied from in the body's text.
  pub text: std::ops::Range<usize>,
}

/// The written body `written` as UTF-16 code units, each run copied from the body's text
/// (`copies`, from [`Body::write_with_copies`]) taken from `text_units`, the code units `text`
/// was read from, instead of from its UTF-8: a body given as a JavaScript string with a lone
/// surrogate in it (which its UTF-8 holds as U+FFFD) keeps it where it is kept, in a kept
/// message or outside the messages array. New text (a rewritten or inserted message) has
/// U+FFFD for it. `text` must be `text_units` read with each lone surrogate as U+FFFD (one
/// character for one unit, as [`crate::model::utf16::utf16_to_string`] reads it).
pub fn written_units(written: &str, text: &str, text_units: &[u16], copies: &[Copied]) -> Vec<u16> {
  let mut units = Vec::with_capacity(text_units.len());
  let mut at = 0;
  // Where in `text` and `text_units` the last run ended; the runs are in the text's order.
  let (mut byte, mut unit) = (0, 0);
  for c in copies {
    units.extend(written[at..c.out.start].encode_utf16());
    if c.text.start < byte {
      (byte, unit) = (0, 0);
    }
    unit += text[byte..c.text.start].encode_utf16().count();
    let len = text[c.text.clone()].encode_utf16().count();
    units.extend_from_slice(&text_units[unit..unit + len]);
    (byte, unit) = (c.text.end, unit + len);
    at = c.out.end;
  }
  units.extend(written[at..].encode_utf16());
  units
}

/// Message `index` rewritten with a replacement, as the binding's copy of an object message
/// is: the whole `content` of an OpenAI message; the `content` of each `tool_result` block of
/// an Anthropic message; the `output` of each `tool-result` part of an AI SDK message (as
/// `{"type":"text","value":…}`). The other fields keep their bytes and order; a `content` the
/// message lacked is added last. Metadata (`_truncated`, …) is not written: in the object API
/// it is hidden from `JSON.stringify` too.
///
/// # Errors
///
/// When `raw` is not a JSON object (never for a message the reader accepted).
pub fn rewrite(raw: &str, r: &Replacement, format: Format, index: usize) -> Result<String> {
  let Entries(entries) = match serde_json::from_str(raw) {
    Ok(entries) => entries,
    // A key spelled with a lone surrogate: the message is rewritten with U+FFFD for it.
    Err(e) => match lone_surrogates_replaced(raw, LoneAs::Replacement) {
      Some(repaired) => return rewrite(&repaired, r, format, index),
      None => return Err(Error::message(index, "", format!("could not be rewritten: {e}"))),
    },
  };
  let json = |text: &str| {
    let mut json = String::with_capacity(text.len() + 2);
    push_json_string(&mut json, text);
    json
  };
  let text = json(&r.content);
  // Result `k`'s new text as JSON, `None` when it is kept.
  let result = |k: usize| match &r.results {
    None => Some(Cow::Borrowed(text.as_str())),
    Some(_) => r.result_text(k).map(|t| Cow::Owned(json(t))),
  };
  let content = entries.iter().find(|(k, _)| k == "content").map(|(_, v)| v.get());
  let parts = content.filter(|c| c.starts_with('[')).and_then(|c| match format {
    Format::Anthropic => rewrite_parts(c, "tool_result", "content", |k, old| {
      result(k).map(|text| result_content(old, &text))
    }),
    Format::AiSdk => {
      rewrite_parts(c, "tool-result", "output", |k, old| result(k).map(|t| output_of(old, &t)))
    }
    Format::OpenAi => None,
  });
  // Results replaced one by one are only ever those of a content array.
  let new_content = match (parts, content) {
    (Some(parts), _) => parts,
    (None, Some(content)) if r.results.is_some() => content.to_string(),
    (None, _) => text,
  };
  let mut out = String::with_capacity(raw.len());
  out.push('{');
  let mut replaced = false;
  for (j, (key, value)) in entries.iter().enumerate() {
    if j > 0 {
      out.push(',');
    }
    push_json_string(&mut out, key);
    out.push(':');
    if key == "content" {
      out.push_str(&new_content);
      replaced = true;
    } else {
      out.push_str(value.get());
    }
  }
  if !replaced {
    if !entries.is_empty() {
      out.push(',');
    }
    out.push_str("\"content\":");
    out.push_str(&new_content);
  }
  out.push('}');
  Ok(out)
}

/// A tool result's new `content` (`text`, JSON text): the text, in a text block that keeps the
/// prompt-cache breakpoint when the result's own blocks had one (the last one's
/// `cache_control`), as the binding's writer makes it.
fn result_content(old: Option<&RawValue>, text: &str) -> String {
  let blocks = old.and_then(|old| serde_json::from_str::<Vec<&RawValue>>(old.get()).ok());
  let breakpoint = blocks.iter().flatten().rev().find_map(|block| {
    let Entries(entries) = serde_json::from_str(block.get()).ok()?;
    entries.into_iter().find(|(k, _)| k == "cache_control").map(|(_, v)| v)
  });
  match breakpoint {
    Some(b) => format!("[{{\"type\":\"text\",\"text\":{text},\"cache_control\":{}}}]", b.get()),
    None => text.to_string(),
  }
}

/// An AI SDK tool result's new `output` (`text`, JSON text): text, still flagged an error when
/// it was one, as the binding's writer makes it.
fn output_of(old: Option<&RawValue>, text: &str) -> String {
  let error = old
    .and_then(|old| serde_json::from_str::<Entries>(old.get()).ok())
    .and_then(|Entries(entries)| entries.into_iter().find(|(k, _)| k == "type"))
    .and_then(|(_, kind)| serde_json::from_str::<String>(kind.get()).ok())
    .is_some_and(|kind| kind.starts_with("error"));
  let kind = if error { "error-text" } else { "text" };
  format!("{{\"type\":\"{kind}\",\"value\":{text}}}")
}

/// A content array with `key` of every part of type `kind` set to `value(k, old)` (JSON text,
/// from the part's place `k` among the parts of that type and its old value under `key`; the
/// part kept as it is when that is `None`), or `None` when no part is of that type.
fn rewrite_parts(
  content: &str,
  kind: &str,
  key: &str,
  mut value: impl FnMut(usize, Option<&RawValue>) -> Option<String>,
) -> Option<String> {
  let parts: Vec<&RawValue> = serde_json::from_str(content).ok()?;
  let mut any = false;
  let mut found = 0;
  let mut out = String::with_capacity(content.len());
  out.push('[');
  for (i, part) in parts.iter().enumerate() {
    if i > 0 {
      out.push(',');
    }
    let entries = match serde_json::from_str::<Entries>(part.get()) {
      Ok(Entries(entries)) if part_type(&entries) == Some(kind) => entries,
      _ => {
        out.push_str(part.get());
        continue;
      }
    };
    any = true;
    let old = entries.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
    let Some(value) = value(found, old) else {
      found += 1;
      out.push_str(part.get());
      continue;
    };
    found += 1;
    out.push('{');
    for (j, (k, v)) in entries.iter().enumerate() {
      if j > 0 {
        out.push(',');
      }
      push_json_string(&mut out, k);
      out.push(':');
      out.push_str(if k == key { &value } else { v.get() });
    }
    if old.is_none() {
      if !entries.is_empty() {
        out.push(',');
      }
      push_json_string(&mut out, key);
      out.push(':');
      out.push_str(&value);
    }
    out.push('}');
  }
  out.push(']');
  any.then_some(out)
}

/// The `type` of a part, when it is a string.
fn part_type<'e>(entries: &'e [(String, &RawValue)]) -> Option<&'e str> {
  let (_, raw) = entries.iter().find(|(k, _)| k == "type")?;
  let raw = raw.get();
  if !raw.starts_with('"') {
    return None;
  }
  // A type spelled with escapes is rare: decode it only then.
  if !raw.contains('\\') {
    return Some(&raw[1..raw.len() - 1]);
  }
  let decoded: String = serde_json::from_str(raw).ok()?;
  ["tool_result", "tool-result"].into_iter().find(|t| *t == decoded)
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::plan::MetaValue;

  #[test]
  fn a_body_keeps_every_byte_outside_its_messages() {
    let text = r#"{"model": "m", "messages": [ {"role":"user","content":"a"} ,{"role":"user","content":"b"}], "max_tokens": 5}"#;
    let body = Body::parse(text).unwrap();
    assert_eq!(
      body.messages(),
      [r#"{"role":"user","content":"a"}"#, r#"{"role":"user","content":"b"}"#]
    );
    let mut plan = Plan::keep_all(2);
    plan.drop_message(0);
    assert_eq!(
      body.write(&plan, Format::OpenAi).unwrap(),
      r#"{"model": "m", "messages": [{"role":"user","content":"b"}], "max_tokens": 5}"#
    );
  }

  #[test]
  fn replaced_messages_keep_their_format_shape() {
    let r = Replacement::new("[cut]".into(), vec![("_truncated", MetaValue::Bool(true))], 1);
    let anthropic = r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"long"},{"type":"text","text":"hi"}]}"#;
    assert_eq!(
      rewrite(anthropic, &r, Format::Anthropic, 0).unwrap(),
      r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"[cut]"},{"type":"text","text":"hi"}]}"#
    );
    let ai = r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c","toolName":"x","output":{"type":"text","value":"long"}}]}"#;
    assert_eq!(
      rewrite(ai, &r, Format::AiSdk, 0).unwrap(),
      r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c","toolName":"x","output":{"type":"text","value":"[cut]"}}]}"#
    );
    // A result's prompt-cache breakpoint and an output's error flag stay.
    let cached = r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"long","cache_control":{"type":"ephemeral"}},{"type":"text","text":"more"}]}]}"#;
    assert_eq!(
      rewrite(cached, &r, Format::Anthropic, 0).unwrap(),
      r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"[cut]","cache_control":{"type":"ephemeral"}}]}]}"#
    );
    let error = r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c","toolName":"x","output":{"type":"error-json","value":{"code":1}}}]}"#;
    assert_eq!(
      rewrite(error, &r, Format::AiSdk, 0).unwrap(),
      r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c","toolName":"x","output":{"type":"error-text","value":"[cut]"}}]}"#
    );
    let openai = r#"{"role":"tool","tool_call_id":"c","content":"long","name":"x"}"#;
    assert_eq!(
      rewrite(openai, &r, Format::OpenAi, 0).unwrap(),
      r#"{"role":"tool","tool_call_id":"c","content":"[cut]","name":"x"}"#
    );
  }

  #[test]
  fn written_units_keep_the_texts_own_units_where_it_is_copied() {
    // `template`'s units with each `?` as the next of `lone`.
    fn with_lone(template: &str, lone: &[u16]) -> Vec<u16> {
      let mut lone = lone.iter();
      template
        .encode_utf16()
        .map(|u| if u == u16::from(b'?') { *lone.next().unwrap() } else { u })
        .collect()
    }
    // A string body with lone surrogates, and its text as read (U+FFFD for each).
    let units = with_lone(
      r#"{"s":"?","messages":[{"role":"user","content":"a?😀"},{"role":"user","content":"?"},{"role":"user","content":"b?"}],"t":"é?"}"#,
      &[0xd800, 0xdc00, 0xdbff, 0xdfff, 0xdc01],
    );
    let text = crate::model::utf16::utf16_to_string(&units, Vec::new());
    assert_eq!(text.matches('\u{FFFD}').count(), 5);
    let body = Body::parse(&text).unwrap();
    let mut plan = Plan::keep_all(3);
    plan.drop_message(1);
    plan.replace(2, Replacement::new("[cut] \u{FFFD}".into(), Vec::new(), 1));
    let (mut out, mut copies) = (String::new(), Vec::new());
    let rewritten = |out: &mut String, i, raw: &str, r: &Replacement| {
      out.push_str(&rewrite(raw, r, Format::OpenAi, i)?);
      Ok(())
    };
    body.write_with_copies(&mut out, &plan, rewritten, Some(&mut copies)).unwrap();
    assert_eq!(out, body.write(&plan, Format::OpenAi).unwrap());
    // The text before the array, the kept message, the text after it.
    assert_eq!(copies.len(), 3);
    for c in &copies {
      assert_eq!(out[c.out.clone()], text[c.text.clone()]);
    }
    // The kept parts have the body's own lone surrogates; the rewritten message, U+FFFD.
    assert_eq!(
      written_units(&out, &text, &units, &copies),
      with_lone(
        r#"{"s":"?","messages":[{"role":"user","content":"a?😀"},{"role":"user","content":"[cut] ?"}],"t":"é?"}"#,
        &[0xd800, 0xdc00, 0xfffd, 0xdc01],
      )
    );
    // Without copies, the written text itself.
    assert_eq!(written_units(&out, &text, &units, &[]), out.encode_utf16().collect::<Vec<_>>());
  }
}
