//! The one output of every strategy: a keep / replace / drop decision per message.
//!
//! Strategies decide; the plan keeps the rules that make the result a valid conversation:
//! removals happen by whole [`Unit`](crate::model::conversation::Unit)s, so a tool call never loses its
//! result nor a result its call, and order is never changed.
//!
//! A plan may also insert new messages ([`Plan::insert_before`]), such as the summary of what
//! was dropped: an [`Inserted`] message sits before a given input message (or at the end), is
//! counted in [`Plan::total_tokens`], and is built by the binding in the format's shape.

use std::sync::Arc;

use crate::model::conversation::Conversation;
use crate::model::message::{Content, Message, Part, Role};
use crate::model::tokens::{
  count_tokens, message_content_tokens, message_tokens, part_tokens, Encoding,
};

/// A value of a metadata field added to a replaced message (e.g. `_truncated: true`).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
  /// A boolean.
  Bool(bool),
  /// A number.
  Number(f64),
  /// A string.
  Text(String),
}

/// The new texts of a message whose tool results are replaced one by one: per result, in the
/// order of its results, the new text, or `None` for a result kept as it is.
pub type ResultTexts = Arc<[Option<Arc<str>>]>;

/// What a replaced message becomes: new text content plus metadata fields, every other field of
/// the original message kept.
#[derive(Debug, Clone)]
pub struct Replacement {
  /// The new content (a placeholder, or a shortened text), shared: a plan copied, or a cut
  /// memoised and used again, does not copy the text. Empty when [`Replacement::results`] is
  /// set.
  pub content: Arc<str>,
  /// For a message whose tool results are replaced one by one
  /// ([`Message::has_results_apart`]: parallel results in one Anthropic or AI SDK message, or a
  /// result beside a text block): each result's new text, or `None` where it is kept. `None`:
  /// every result of the message, or its whole content, becomes [`Replacement::content`].
  pub results: Option<ResultTexts>,
  /// Metadata fields set on the returned copy, in this order.
  pub meta: Vec<(&'static str, MetaValue)>,
  /// The tokens of the replaced message, overhead included.
  pub tokens: usize,
  /// [`Replacement::fingerprint`], once asked (kept when a plan is copied).
  fingerprint: std::sync::OnceLock<u64>,
}

/// Equal texts, metadata and tokens (whether the fingerprint was asked for does not count).
impl PartialEq for Replacement {
  fn eq(&self, other: &Self) -> bool {
    self.same_texts(other) && self.meta == other.meta && self.tokens == other.tokens
  }
}

impl Replacement {
  /// `content` with `meta`, the replaced message then taking `tokens`.
  pub fn new(content: Arc<str>, meta: Vec<(&'static str, MetaValue)>, tokens: usize) -> Self {
    Replacement { content, results: None, meta, tokens, fingerprint: std::sync::OnceLock::new() }
  }

  /// A replacement of a message's tool results one by one (see [`Replacement::results`]), with
  /// `meta`, the replaced message then taking `tokens`.
  pub fn of_results(
    results: ResultTexts,
    meta: Vec<(&'static str, MetaValue)>,
    tokens: usize,
  ) -> Self {
    Replacement {
      content: Arc::from(""),
      results: Some(results),
      meta,
      tokens,
      fingerprint: std::sync::OnceLock::new(),
    }
  }

  /// The new text of the message's tool result `k` (its `k`-th, in order), or `None` when that
  /// result is kept as it is.
  pub fn result_text(&self, k: usize) -> Option<&str> {
    match &self.results {
      None => Some(&self.content),
      Some(results) => results.get(k).and_then(|t| t.as_deref()),
    }
  }

  /// This replacement, made on the message `earlier` returns, as one of the original message
  /// (for a strategy run on another's output): the results it keeps keep `earlier`'s texts;
  /// its tokens and metadata are its own. A replacement of the whole content needs nothing of
  /// `earlier`.
  pub fn after(&self, earlier: &Replacement) -> Replacement {
    let Some(results) = &self.results else { return self.clone() };
    let earlier_text = |k: usize| match &earlier.results {
      None => Some(Arc::clone(&earlier.content)),
      Some(texts) => texts.get(k).cloned().flatten(),
    };
    let merged: ResultTexts = results
      .iter()
      .enumerate()
      .map(|(k, text)| text.clone().or_else(|| earlier_text(k)))
      .collect();
    Replacement::of_results(merged, self.meta.clone(), self.tokens)
  }

  /// Whether `self` and `other` give a message the same texts (content and results).
  pub fn same_texts(&self, other: &Replacement) -> bool {
    self.content == other.content && self.results == other.results
  }

  /// A hash of what the replacement gives the copy (content and metadata), equal for
  /// replacements that serialise alike; SipHash with fixed keys, computed once. The simulator's
  /// key of a sent copy: a plan carried from turn to turn hashes its placeholders once.
  pub fn fingerprint(&self) -> u64 {
    *self.fingerprint.get_or_init(|| {
      use std::hash::{Hash, Hasher};
      let mut h = std::hash::DefaultHasher::new();
      self.content.hash(&mut h);
      if let Some(results) = &self.results {
        results.hash(&mut h);
      }
      for (name, value) in &self.meta {
        name.hash(&mut h);
        match value {
          MetaValue::Bool(b) => b.hash(&mut h),
          MetaValue::Number(n) => n.to_bits().hash(&mut h),
          MetaValue::Text(t) => t.hash(&mut h),
        }
      }
      h.finish()
    })
  }

  /// Whether this is a cut to head and tail (it carries `_cutTokens`), not a placeholder.
  pub fn is_cut(&self) -> bool {
    self.meta.iter().any(|(k, _)| *k == "_cutTokens")
  }
}

/// The decision for one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
  /// Returned as it is (the caller's own object).
  Keep,
  /// Returned as a copy with its content replaced (boxed: a plan holds an action per message,
  /// mostly kept or dropped, and strategies go through them all on every call; boxed, an
  /// action takes 16 bytes, not 48).
  Replace(Box<Replacement>),
  /// Not returned.
  Drop,
}

/// A message the plan adds: a role, text content and metadata fields (e.g. `_summary: true`).
#[derive(Debug, Clone, PartialEq)]
pub struct Inserted {
  /// The role.
  pub role: Role,
  /// The text content.
  pub content: String,
  /// Metadata fields set on the new message, in this order.
  pub meta: Vec<(&'static str, MetaValue)>,
  /// The message's tokens, overhead included (see [`Inserted::new`]).
  pub tokens: usize,
}

impl Inserted {
  /// A message of `role` with `content` and `meta`, its tokens counted in `encoding` as any
  /// message with that role and text (metadata fields are not sent, so not counted).
  pub fn new(
    role: Role,
    content: String,
    meta: Vec<(&'static str, MetaValue)>,
    encoding: Encoding,
  ) -> Self {
    let tokens = message_tokens(&Message::text(role, content.as_str()), encoding);
    Inserted { role, content, meta, tokens }
  }

  /// The core message this insertion returns (for validation).
  pub fn message(&self) -> Message {
    Message::text(self.role, self.content.as_str())
  }
}

/// A decision for every message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
  actions: Vec<Action>,
  /// New messages and the index of the input message each goes before (`len` = at the end),
  /// ascending by position; equal positions keep the order they were inserted in.
  inserted: Vec<(usize, Inserted)>,
}

impl Plan {
  /// A plan keeping all `n` messages.
  pub fn keep_all(n: usize) -> Self {
    Plan { actions: vec![Action::Keep; n], inserted: Vec::new() }
  }

  /// Extends the plan to `n` messages, the new ones kept (for a conversation that grew).
  pub fn extend_kept(&mut self, n: usize) {
    if n > self.actions.len() {
      self.actions.resize(n, Action::Keep);
    }
  }

  /// Adds `message` before input message `i` (after every message before `i` that is
  /// returned), or at the end when `i` is the number of messages or more. A message inserted
  /// before a dropped message stays: it goes where that message would have been.
  pub fn insert_before(&mut self, i: usize, message: Inserted) {
    let at = i.min(self.actions.len());
    let k = self.inserted.partition_point(|(p, _)| *p <= at);
    self.inserted.insert(k, (at, message));
  }

  /// The inserted messages with the index of the input message each goes before, in order.
  pub fn insertions(&self) -> &[(usize, Inserted)] {
    &self.inserted
  }

  /// Removes and returns every insertion (e.g. to replace one with a new text).
  pub fn take_insertions(&mut self) -> Vec<(usize, Inserted)> {
    std::mem::take(&mut self.inserted)
  }

  /// The decisions, one per message.
  pub fn actions(&self) -> &[Action] {
    &self.actions
  }

  /// The decision for message `i`.
  pub fn action(&self, i: usize) -> &Action {
    &self.actions[i]
  }

  /// Whether message `i` is dropped.
  pub fn is_dropped(&self, i: usize) -> bool {
    matches!(self.actions[i], Action::Drop)
  }

  /// Drops every message of unit `u`.
  pub fn drop_unit(&mut self, conv: &Conversation<'_>, u: usize) {
    for &i in &conv.units()[u].members {
      self.actions[i] = Action::Drop;
    }
  }

  /// Drops message `i` alone, even if that splits its unit. Only for repairing input that is
  /// already broken (an orphan or duplicate result, see [`crate::output::repair`]): strategies remove
  /// whole units with [`Plan::drop_unit`].
  pub fn drop_message(&mut self, i: usize) {
    if let Some(a) = self.actions.get_mut(i) {
      *a = Action::Drop;
    }
  }

  /// Keeps message `i` as it is (e.g. a dropped one whose unit comes back).
  pub fn keep(&mut self, i: usize) {
    self.actions[i] = Action::Keep;
  }

  /// Keeps every message of unit `u` as it is.
  pub fn keep_unit(&mut self, conv: &Conversation<'_>, u: usize) {
    for &i in &conv.units()[u].members {
      self.actions[i] = Action::Keep;
    }
  }

  /// Replaces message `i`'s content. A replacement never breaks a pair, so it is allowed on any
  /// message whose unit is kept.
  pub fn replace(&mut self, i: usize, replacement: Replacement) {
    self.actions[i] = Action::Replace(Box::new(replacement));
  }

  /// The tokens of message `i` under this plan (0 when dropped).
  pub fn tokens_of(&self, conv: &Conversation<'_>, i: usize) -> usize {
    match &self.actions[i] {
      Action::Keep => conv.tokens(i),
      Action::Replace(r) => r.tokens,
      Action::Drop => 0,
    }
  }

  /// The tokens of the request this plan returns (inserted messages included), reply priming
  /// included.
  pub fn total_tokens(&self, conv: &Conversation<'_>) -> usize {
    let mut any = !self.inserted.is_empty();
    let mut sum: usize = self.inserted.iter().map(|(_, m)| m.tokens).sum();
    for i in 0..self.actions.len() {
      if !self.is_dropped(i) {
        any = true;
        sum += self.tokens_of(conv, i);
      }
    }
    if any {
      sum + crate::model::tokens::reply_priming(conv.encoding())
    } else {
      0
    }
  }

  /// The indices of the dropped messages, ascending.
  pub fn dropped(&self) -> Vec<usize> {
    (0..self.actions.len()).filter(|&i| self.is_dropped(i)).collect()
  }

  /// The indices of the replaced messages, ascending.
  pub fn replaced(&self) -> Vec<usize> {
    (0..self.actions.len()).filter(|&i| matches!(self.actions[i], Action::Replace(_))).collect()
  }

  /// Whether the plan changes nothing.
  pub fn is_identity(&self) -> bool {
    self.inserted.is_empty() && self.actions.iter().all(|a| matches!(a, Action::Keep))
  }

  /// Makes the plan follow the provider rules of the conversation's format that removals can
  /// break. Today that is Anthropic's "the first message after the instructions is a user
  /// message": when a strategy dropped the opening user message, the latest user message
  /// before the first returned one is kept again (so the request may exceed the strategy's
  /// budget by that message, which a strategy's result reports). Nothing else changes; when
  /// the input itself starts with another role, or an inserted user message comes first,
  /// nothing is done. When only instructions are returned, the latest user message is kept
  /// again too: the instructions travel apart, and a request needs a message besides them.
  ///
  /// In every format a request needs a message: a plan that returns nothing of a non-empty
  /// conversation (and inserts nothing) keeps the last message's unit again.
  pub fn conform(&mut self, conv: &Conversation<'_>) {
    let n = conv.len().min(self.actions.len());
    if n > 0 && self.inserted.is_empty() && (0..n).all(|i| self.is_dropped(i)) {
      self.keep_unit(conv, conv.unit_of(n - 1));
    }
    if !conv.format().rules().first_must_be_user {
      return;
    }
    let is_turn = |i: usize| conv.shape(i).is_user_turn();
    let first = (0..conv.len()).find(|&i| !self.is_dropped(i) && !conv.shape(i).is_instruction());
    let Some(first) = first else {
      // Nothing but instructions returned: where they travel apart (Anthropic's `system`
      // parameter) the request would have no message, so the latest user message comes back.
      let inserted_user =
        self.inserted.iter().any(|(_, m)| m.role == crate::model::message::Role::User);
      if conv.format().rules().instructions_apart && !inserted_user {
        if let Some(user) = (0..conv.len()).rev().find(|&i| is_turn(i)) {
          self.keep_unit(conv, conv.unit_of(user));
        }
      }
      return;
    };
    if is_turn(first) {
      return;
    }
    // A message inserted before it comes first (after the instructions): a user one conforms.
    if let Some((_, m)) = self.inserted.iter().find(|(p, _)| *p <= first) {
      if m.role == crate::model::message::Role::User {
        return;
      }
    }
    if let Some(user) = (0..first).rev().find(|&i| is_turn(i)) {
      self.keep_unit(conv, conv.unit_of(user));
    }
  }

  /// The tokens [`Plan::conform`] would bring back to this plan: those of the opening user
  /// message's unit, when the plan dropped it and starts with another message. `opening`
  /// remembers where the scan got to, so a strategy that only adds drops asks after each one in
  /// O(1) amortised and counts the opening before deciding what else to drop.
  pub fn conform_tokens(&self, conv: &Conversation<'_>, opening: &mut Opening) -> usize {
    if !opening.active {
      return 0;
    }
    let n = conv.len().min(self.actions.len());
    while opening.first < n
      && (self.is_dropped(opening.first) || conv.shape(opening.first).is_instruction())
    {
      opening.first += 1;
    }
    let first = opening.first;
    if first >= n {
      // Only instructions are returned (see `conform`).
      let inserted_user =
        self.inserted.iter().any(|(_, m)| m.role == crate::model::message::Role::User);
      if !opening.instructions_apart || inserted_user {
        return 0;
      }
    } else if conv.shape(first).is_user_turn() {
      return 0;
    } else if let Some((_, m)) = self.inserted.iter().find(|(p, _)| *p <= first) {
      if m.role == crate::model::message::Role::User {
        return 0;
      }
    }
    match opening.candidate(first) {
      Some(u) if self.is_dropped(u) => conv.units()[conv.unit_of(u)]
        .members
        .iter()
        .filter(|&&i| self.is_dropped(i))
        .map(|&i| conv.tokens(i))
        .sum(),
      _ => 0,
    }
  }

  /// When the opening [`Plan::conform`] would bring back costs more than `room` tokens, keeps
  /// instead the latest earlier user message whose unit fits in `room` (an older, shorter turn
  /// opens the request as validly), so that `conform` has nothing left to add. Returns the
  /// tokens the plan gained: those of the kept opening, or 0 when none fits or none is needed.
  /// Call it once a strategy has dropped what it drops; O(n).
  pub fn open_within(
    &mut self,
    conv: &Conversation<'_>,
    opening: &mut Opening,
    room: usize,
  ) -> usize {
    let needed = self.conform_tokens(conv, opening);
    if needed == 0 || needed <= room {
      return 0;
    }
    let cost = |plan: &Plan, u: usize| -> usize {
      conv.units()[conv.unit_of(u)]
        .members
        .iter()
        .filter(|&&i| plan.is_dropped(i))
        .map(|&i| conv.tokens(i))
        .sum()
    };
    let mut candidate = opening.candidate(opening.first);
    while let Some(u) = candidate {
      let c = cost(self, u);
      if c <= room {
        self.keep_unit(conv, conv.unit_of(u));
        return c;
      }
      candidate = opening.latest_turn_before.get(u).copied().flatten();
    }
    0
  }

  /// Checks that no unit is split: every unit is either wholly dropped or wholly returned.
  ///
  /// # Errors
  ///
  /// A sentence naming the first split unit.
  pub fn check_units(&self, conv: &Conversation<'_>) -> std::result::Result<(), String> {
    for u in conv.units() {
      let dropped = u.members.iter().filter(|&&i| self.is_dropped(i)).count();
      if dropped != 0 && dropped != u.members.len() {
        return Err(format!(
          "unit {:?} is split: {dropped} of {} dropped",
          u.members,
          u.members.len()
        ));
      }
    }
    Ok(())
  }

  /// Applies the plan to the caller's items: kept items are cloned, replaced ones built by
  /// `replace`, dropped ones left out, inserted ones built by `insert` in their place, order
  /// kept.
  pub fn apply<T: Clone>(
    &self,
    items: &[T],
    mut replace: impl FnMut(&T, &Replacement) -> T,
    mut insert: impl FnMut(&Inserted) -> T,
  ) -> Vec<T> {
    let mut out = Vec::with_capacity(items.len() + self.inserted.len());
    self.walk(items, |step| match step {
      Step::Input(item, Action::Keep) => out.push(item.clone()),
      Step::Input(item, Action::Replace(r)) => out.push(replace(item, r)),
      Step::Input(_, Action::Drop) => {}
      Step::Inserted(m) => out.push(insert(m)),
    });
    out
  }

  /// Visits, in output order, every input item with its action (dropped ones included) and
  /// every inserted message in its place.
  pub fn walk<'p, T>(&'p self, items: &'p [T], mut visit: impl FnMut(Step<'p, T>)) {
    let mut pending = self.inserted.iter().peekable();
    for (i, (item, action)) in items.iter().zip(&self.actions).enumerate() {
      while let Some((_, m)) = pending.next_if(|(p, _)| *p <= i) {
        visit(Step::Inserted(m));
      }
      visit(Step::Input(item, action));
    }
    for (_, m) in pending {
      visit(Step::Inserted(m));
    }
  }
}

/// One step of [`Plan::walk`].
#[derive(Debug)]
pub enum Step<'p, T> {
  /// An input item and its action.
  Input(&'p T, &'p Action),
  /// An inserted message.
  Inserted(&'p Inserted),
}

/// Builds a [`Replacement`] of message `i` with `content`, counting its tokens.
///
/// What is replaced depends on the message's shape, and is what the binding writes: a message
/// whose content holds tool-result parts (Anthropic `tool_result` blocks, AI SDK `tool-result`
/// parts) keeps its other parts and gets `content` as the text of each tool result; any other
/// message gets `content` as its whole content.
pub fn replacement(
  conv: &Conversation<'_>,
  i: usize,
  content: String,
  meta: Vec<(&'static str, MetaValue)>,
) -> Replacement {
  let new = count_tokens(&content, conv.encoding());
  replacement_counted(conv, i, content, new, meta)
}

/// [`replacement`] of a `content` whose tokens are known to be `content_tokens` (those of a
/// [`crate::model::cut::Cut`]): the same result, without counting `content` again.
pub fn replacement_counted(
  conv: &Conversation<'_>,
  i: usize,
  content: impl Into<Arc<str>>,
  content_tokens: usize,
  meta: Vec<(&'static str, MetaValue)>,
) -> Replacement {
  let content = content.into();
  let m = &conv.messages()[i];
  let encoding = conv.encoding();
  let new = content_tokens;
  debug_assert_eq!(new, count_tokens(&content, encoding));
  let (old, added) = match &m.content {
    Content::Parts(parts) if parts.iter().any(|p| matches!(p, Part::ToolResult { .. })) => {
      // A result's attachments go with its text.
      let results = parts.iter().filter(|p| matches!(p, Part::ToolResult { .. }));
      let (old, count) = results.fold((0, 0), |(t, n), p| (t + part_tokens(p, encoding), n + 1));
      (old, new * count)
    }
    // The content's count, memoised in the message: a strategy that replaces the same message
    // on every turn does not hash its whole text again to find the count.
    _ => (message_content_tokens(m, encoding), new),
  };
  let tokens = conv.tokens(i) - old.min(conv.tokens(i)) + added;
  Replacement::new(content, meta, tokens)
}

/// A replacement of message `i`'s tool results one by one ([`Message::has_results_apart`]):
/// result `k` gets `new[k]`, a text and its tokens (known, as a cut's are), or is kept when
/// that is `None`. A replaced result's attachments go with its text; the message's other parts
/// stay.
pub fn replacement_of_results(
  conv: &Conversation<'_>,
  i: usize,
  new: Vec<Option<(Arc<str>, usize)>>,
  meta: Vec<(&'static str, MetaValue)>,
) -> Replacement {
  let encoding = conv.encoding();
  let parts: &[Part] = match &conv.messages()[i].content {
    Content::Parts(parts) => parts,
    _ => &[],
  };
  let results = parts.iter().filter(|p| matches!(p, Part::ToolResult { .. }));
  let (mut old, mut added) = (0, 0);
  for (part, text) in results.zip(&new) {
    if let Some((text, tokens)) = text {
      debug_assert_eq!(*tokens, count_tokens(text, encoding));
      old += part_tokens(part, encoding);
      added += tokens;
    }
  }
  let tokens = conv.tokens(i) - old.min(conv.tokens(i)) + added;
  let texts: ResultTexts = new.into_iter().map(|t| t.map(|(text, _)| text)).collect();
  Replacement::of_results(texts, meta, tokens)
}

/// The message replacement `r` of `m` returns, as the core sees it: the tool results of a
/// message holding tool-result parts get their new texts (see [`Replacement::result_text`]; its
/// other parts stay), any other message gets `r.content` as its whole content (see
/// [`replacement`]). For a strategy that runs on the output of another, and for checks.
pub fn replaced_message(m: &Message, r: &Replacement) -> Message {
  let mut out = m.clone();
  out.content = match &m.content {
    Content::Parts(parts) if parts.iter().any(|p| matches!(p, Part::ToolResult { .. })) => {
      let mut k = 0;
      let mut part = |p: &Part| match p {
        Part::ToolResult { call_id, is_error, .. } => {
          k += 1;
          match r.result_text(k - 1) {
            Some(text) => Part::ToolResult {
              call_id: call_id.clone(),
              content: text.to_string(),
              attachment_tokens: 0,
              is_error: *is_error,
            },
            None => p.clone(),
          }
        }
        other => other.clone(),
      };
      Content::Parts(parts.iter().map(&mut part).collect())
    }
    _ => Content::Text(r.content.to_string()),
  };
  out
}

/// The state of [`Plan::conform_tokens`] for one conversation: for each message the latest user
/// turn before it, and how far the first returned message is known to be.
#[derive(Debug, Clone)]
pub struct Opening {
  /// Whether the format wants a user message first (otherwise `conform` adds nothing).
  active: bool,
  /// Whether the instructions travel apart, so that instructions alone need an opening too.
  instructions_apart: bool,
  /// For each message the latest user turn before it, and at the end the latest of all.
  latest_turn_before: Vec<Option<usize>>,
  first: usize,
}

impl Opening {
  /// The state for `conv`, before any drop. O(n) when the format wants a user message first,
  /// nothing otherwise.
  pub fn new(conv: &Conversation<'_>) -> Self {
    let active = conv.format().rules().first_must_be_user;
    let mut latest_turn_before = Vec::new();
    if active {
      latest_turn_before.reserve(conv.len() + 1);
      let mut latest = None;
      for i in 0..conv.len() {
        latest_turn_before.push(latest);
        if conv.shape(i).is_user_turn() {
          latest = Some(i);
        }
      }
      latest_turn_before.push(latest);
    }
    let instructions_apart = conv.format().rules().instructions_apart;
    Opening { active, instructions_apart, latest_turn_before, first: 0 }
  }

  /// The user message `conform` brings back when the first returned message (not an
  /// instruction) is `first` (`n` when there is none): the latest user turn before it.
  fn candidate(&self, first: usize) -> Option<usize> {
    self.latest_turn_before.get(first).copied().flatten()
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::model::tokens::REPLY_PRIMING;

  #[test]
  fn an_action_is_two_words() {
    // A plan holds one per message and every strategy goes through them on every call.
    assert!(std::mem::size_of::<Action>() <= 2 * std::mem::size_of::<usize>());
  }

  #[test]
  fn dropping_a_unit_drops_call_and_results() {
    let mut call = Message::text(Role::Assistant, "");
    call.tool_calls.push(crate::model::message::ToolCall {
      id: "a".into(),
      name: "x".into(),
      arguments: "{}".into(),
    });
    let mut res = Message::text(Role::Tool, "result");
    res.answers.push("a".into());
    let msgs = vec![Message::text(Role::User, "u"), call, res];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut plan = Plan::keep_all(3);
    plan.drop_unit(&conv, conv.unit_of(2));
    assert_eq!(plan.dropped(), vec![1, 2]);
    assert!(plan.check_units(&conv).is_ok());
    assert_eq!(plan.total_tokens(&conv), conv.tokens(0) + REPLY_PRIMING);
    let mut bad = Plan::keep_all(3);
    bad.actions[2] = Action::Drop;
    assert!(bad.check_units(&conv).is_err());
    let out = plan.apply(&[1, 2, 3], |x, _| *x, |_| 0);
    assert_eq!(out, vec![1]);
    let mut single = Plan::keep_all(3);
    single.drop_message(2);
    single.drop_message(7);
    assert_eq!(single.dropped(), vec![2]);
    assert!(single.check_units(&conv).is_err());
  }

  #[test]
  fn insertions_go_in_place_and_count() {
    let msgs = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::User, "u"),
      Message::text(Role::Assistant, "a"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut plan = Plan::keep_all(3);
    plan.drop_message(1);
    let note = |text: &str| {
      Inserted::new(
        Role::User,
        text.into(),
        vec![("_x", MetaValue::Bool(true))],
        Encoding::O200kBase,
      )
    };
    plan.insert_before(9, note("end"));
    plan.insert_before(1, note("first"));
    plan.insert_before(1, note("second"));
    let positions: Vec<usize> = plan.insertions().iter().map(|(p, _)| *p).collect();
    assert_eq!(positions, vec![1, 1, 3]);
    let out = plan.apply(
      &["s", "u", "a"],
      |x, _| x,
      |m| {
        if m.content == "first" {
          "F"
        } else if m.content == "second" {
          "S"
        } else {
          "E"
        }
      },
    );
    assert_eq!(out, vec!["s", "F", "S", "a", "E"]);
    let inserted: usize = plan.insertions().iter().map(|(_, m)| m.tokens).sum();
    assert_eq!(inserted, 3 * conv.tokens(1), "a one-token user message each");
    assert_eq!(
      plan.total_tokens(&conv),
      conv.tokens(0) + conv.tokens(2) + inserted + REPLY_PRIMING
    );
    assert!(!plan.is_identity());
    let mut all_dropped = Plan::keep_all(3);
    (0..3).for_each(|i| all_dropped.drop_message(i));
    assert_eq!(all_dropped.total_tokens(&conv), 0);
    all_dropped.insert_before(0, note("only"));
    assert_eq!(all_dropped.total_tokens(&conv), conv.tokens(1) + REPLY_PRIMING);
    assert_eq!(plan.take_insertions().len(), 3);
    assert_eq!(plan.total_tokens(&conv), conv.tokens(0) + conv.tokens(2) + REPLY_PRIMING);
  }

  #[test]
  fn replacement_tokens_swap_content() {
    let msgs = vec![Message::text(Role::Tool, "a long tool output ".repeat(20))];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let r = replacement(&conv, 0, "[cut]".into(), vec![]);
    let expected =
      Conversation::new(&[Message::text(Role::Tool, "[cut]")], Encoding::O200kBase).tokens(0);
    assert_eq!(r.tokens, expected);
  }

  #[test]
  fn conform_never_returns_nothing_of_a_conversation() {
    let mut call = Message::text(Role::Assistant, "");
    call.tool_calls.push(crate::model::message::ToolCall {
      id: "a".into(),
      name: "x".into(),
      arguments: "{}".into(),
    });
    let mut res = Message::text(Role::Tool, "r");
    res.answers.push("a".into());
    let msgs = vec![call, res];
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut plan = Plan::keep_all(2);
    plan.drop_unit(&conv, conv.unit_of(1));
    plan.conform(&conv);
    assert!(plan.is_identity(), "the last message comes back with its call");
    let empty = Conversation::new(&[], Encoding::O200kBase);
    let mut nothing = Plan::keep_all(0);
    nothing.conform(&empty);
    assert!(nothing.is_identity());
  }

  #[test]
  fn conform_brings_back_a_user_message_when_only_instructions_are_left() {
    let msgs = vec![
      Message::text(Role::User, "early"),
      Message::text(Role::User, "task"),
      Message::text(Role::System, "late instructions"),
    ];
    let conv = Conversation::new(&msgs, Encoding::O200kBase).with_format(crate::Format::Anthropic);
    let mut plan = Plan::keep_all(3);
    plan.drop_unit(&conv, conv.unit_of(0));
    plan.drop_unit(&conv, conv.unit_of(1));
    let mut opening = Opening::new(&conv);
    assert_eq!(plan.conform_tokens(&conv, &mut opening), conv.tokens(1));
    plan.conform(&conv);
    assert_eq!(plan.dropped(), vec![0]);
  }

  #[test]
  fn conform_brings_back_the_opening_user_message_in_anthropic_format_only() {
    let mut call = Message::text(Role::Assistant, "");
    call.tool_calls.push(crate::model::message::ToolCall {
      id: "a".into(),
      name: "x".into(),
      arguments: "{}".into(),
    });
    let mut res = Message::text(Role::User, "");
    res.answers.push("a".into());
    let msgs = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::User, "task"),
      call,
      res,
      Message::text(Role::User, "go on"),
    ];
    let drop_task = |conv: &Conversation<'_>| {
      let mut plan = Plan::keep_all(5);
      plan.drop_unit(conv, conv.unit_of(1));
      plan
    };
    let openai = Conversation::new(&msgs, Encoding::O200kBase);
    let mut plan = drop_task(&openai);
    plan.conform(&openai);
    assert_eq!(plan.dropped(), vec![1]);
    let anthropic =
      Conversation::new(&msgs, Encoding::O200kBase).with_format(crate::Format::Anthropic);
    let mut plan = drop_task(&anthropic);
    plan.conform(&anthropic);
    assert_eq!(plan.dropped(), Vec::<usize>::new());
    // A conversation that starts with the assistant is left as it is.
    let starts_with_call =
      Conversation::new(&msgs[2..], Encoding::O200kBase).with_format(crate::Format::Anthropic);
    let mut plan = Plan::keep_all(3);
    plan.conform(&starts_with_call);
    assert!(plan.is_identity());
    // An inserted user message before the first returned one is the opening user message; an
    // inserted assistant message is not.
    for (role, dropped) in [(Role::User, vec![1]), (Role::Assistant, vec![])] {
      let mut plan = drop_task(&anthropic);
      plan.insert_before(1, Inserted::new(role, "summary".into(), vec![], Encoding::O200kBase));
      plan.conform(&anthropic);
      assert_eq!(plan.dropped(), dropped, "{role:?}");
    }
  }
}
