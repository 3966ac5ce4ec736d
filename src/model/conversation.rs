//! The shared model of a conversation: messages with their token counts, steps and tool-call
//! units, computed once and used by every strategy.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;

use crate::model::format::Format;
use crate::model::message::{Message, Shape};
use crate::model::tokens::{message_tokens, reply_priming, Encoding};

/// A set of messages that must be kept or removed together: an assistant message with tool
/// calls plus every message answering one of its calls, or a single message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
  /// Message indices, ascending. The first is the calling message for a tool-call unit.
  pub members: Members,
}

impl Unit {
  /// The index of the first message of the unit.
  pub fn first(&self) -> usize {
    self.members[0]
  }
}

/// The message indices of a [`Unit`], read as a slice: up to [`Members::INLINE`] of them held in
/// the unit itself (a message alone, a call and its result or two), more on the heap. The
/// strategies go through every unit's members on every call, and a long history's units are
/// mostly small: held inline, they are read where the unit is, not a pointer away.
#[derive(Clone, PartialEq, Eq)]
pub struct Members(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
  /// `len` indices, the rest of the array unused.
  Inline { len: u8, indices: [usize; Members::INLINE] },
  /// More than [`Members::INLINE`] indices.
  Heap(Vec<usize>),
}

impl Members {
  /// How many indices are held inline.
  pub const INLINE: usize = 3;

  /// No member yet.
  pub fn new() -> Self {
    Members(Repr::Inline { len: 0, indices: [0; Members::INLINE] })
  }

  /// Adds `i` after the members (indices come in ascending order).
  pub fn push(&mut self, i: usize) {
    match &mut self.0 {
      Repr::Inline { len, indices } if usize::from(*len) < Members::INLINE => {
        indices[usize::from(*len)] = i;
        *len += 1;
      }
      Repr::Inline { indices, .. } => {
        let mut heap = indices.to_vec();
        heap.push(i);
        self.0 = Repr::Heap(heap);
      }
      Repr::Heap(heap) => heap.push(i),
    }
  }
}

impl Default for Members {
  fn default() -> Self {
    Members::new()
  }
}

impl std::ops::Deref for Members {
  type Target = [usize];

  fn deref(&self) -> &[usize] {
    match &self.0 {
      Repr::Inline { len, indices } => &indices[..usize::from(*len)],
      Repr::Heap(heap) => heap,
    }
  }
}

impl std::fmt::Debug for Members {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    f.debug_list().entries(self.iter()).finish()
  }
}

impl PartialEq<Vec<usize>> for Members {
  fn eq(&self, other: &Vec<usize>) -> bool {
    **self == other[..]
  }
}

impl<'m> IntoIterator for &'m Members {
  type Item = &'m usize;
  type IntoIter = std::slice::Iter<'m, usize>;

  fn into_iter(self) -> Self::IntoIter {
    self.iter()
  }
}

/// A conversation analysed once: per-message tokens, steps and units.
///
/// A *step* is one assistant message with tool calls; a message's step is the number of such
/// messages up to and including it, except that a tool result belongs to the step of the call it
/// answers. The *current step* is the number of steps in the conversation, so a message's age is
/// `current_step - step` (0 for the latest step).
#[derive(Debug, Clone)]
pub struct Conversation<'a> {
  messages: Vec<&'a Message>,
  encoding: Encoding,
  format: Format,
  layout: Cow<'a, Layout>,
  /// What a later layer found of exactly these messages and lends with them, when a caller kept
  /// it up to date ([`Conversation::with_analysed`]).
  analysed: Option<&'a (dyn Any + Send + Sync)>,
}

/// What a conversation's structure is, apart from its messages: per-message tokens, steps,
/// tool-call units and the call each result answers. Built in one pass
/// ([`Layout::build`]) or one message at a time ([`Layout::push`], as
/// the analysis's `ContextWindow` does), with the same result.
#[derive(Debug, Clone, Default)]
pub struct Layout {
  tokens: Vec<usize>,
  /// The sum of `tokens`.
  sum: usize,
  /// Each message's [`Shape`].
  shapes: Vec<Shape>,
  steps: Vec<usize>,
  current_step: usize,
  units: Vec<Unit>,
  unit_of: Vec<usize>,
  /// For each message answering a call: (index of the calling message, index of the call).
  answered_call: Vec<Option<(usize, usize)>>,
  /// The calls made, in order: the call ids, see [`Calls`].
  calls: Calls,
  /// AI SDK approval id -> the message that requested it (see [`crate::model::message::Part::Approval`]).
  approvals: HashMap<String, usize>,
  groups: Groups,
}

/// The tool calls of a layout's messages, in order, and the call each id names. A repeated id
/// pairs with its latest call; the validator reports the duplicate.
///
/// A result usually answers a call of the latest message that made calls: that message's calls
/// are searched first, and the map of every id is built (up to date) only when an id is not
/// among them. The ids are held in one string, so recording a call allocates nothing of its own.
#[derive(Debug, Clone, Default)]
struct Calls {
  /// Every call id, one after another.
  ids: String,
  /// Per call in order: its id's end in `ids` (it starts where the previous one ends), calling
  /// message and call index.
  list: Vec<(usize, usize, usize)>,
  /// Where the calls of the latest message that made calls start in `list`.
  latest: usize,
  /// Call id -> (calling message, call index), for the first `indexed` calls of `list`.
  by_id: HashMap<String, (usize, usize)>,
  indexed: usize,
}

impl Calls {
  /// The id of call `k` of `list`.
  fn id(&self, k: usize) -> &str {
    let start = if k == 0 { 0 } else { self.list[k - 1].0 };
    &self.ids[start..self.list[k].0]
  }

  /// Records the calls of message `i`, after every earlier message's.
  fn push(&mut self, i: usize, m: &Message) {
    self.latest = self.list.len();
    for (c, call) in m.tool_calls.iter().enumerate() {
      self.ids.push_str(&call.id);
      self.list.push((self.ids.len(), i, c));
    }
  }

  /// The latest call named `id`: (calling message, call index).
  fn get(&mut self, id: &str) -> Option<(usize, usize)> {
    if let Some(k) = (self.latest..self.list.len()).rev().find(|&k| self.id(k) == id) {
      let (_, caller, c) = self.list[k];
      return Some((caller, c));
    }
    for k in self.indexed..self.list.len() {
      let (_, caller, c) = self.list[k];
      self.by_id.insert(self.id(k).to_string(), (caller, c));
    }
    self.indexed = self.list.len();
    self.by_id.get(id).copied()
  }
}

impl Layout {
  /// The layout of `messages`, whose tokens are `tokens` (one per message).
  ///
  /// # Panics
  ///
  /// Never on input data; `tokens` must have one entry per message (a caller bug otherwise,
  /// caught in debug builds).
  pub fn build(messages: &[&Message], tokens: Vec<usize>) -> Layout {
    debug_assert_eq!(tokens.len(), messages.len());
    let n = messages.len();
    let mut layout = Layout {
      tokens: Vec::with_capacity(n),
      shapes: Vec::with_capacity(n),
      steps: Vec::with_capacity(n),
      unit_of: Vec::with_capacity(n),
      answered_call: Vec::with_capacity(n),
      calls: Calls { list: Vec::with_capacity(n), ..Calls::default() },
      groups: Groups { parent: Vec::with_capacity(n) },
      ..Layout::default()
    };
    for (m, t) in messages.iter().zip(tokens) {
      layout.link(m, t);
    }
    layout.number_units();
    layout
  }

  /// Appends a message whose tokens are `tokens`. Costs O(its tool calls and results), except
  /// when the message ties together units that were apart (it answers calls of two different
  /// messages, which no provider accepts): then the units are numbered again, O(messages).
  pub fn push(&mut self, message: &Message, tokens: usize) {
    let i = self.tokens.len();
    let joined = self.link(message, tokens);
    match joined {
      Joined::Nothing => {
        self.unit_of.push(self.units.len());
        let mut members = Members::new();
        members.push(i);
        self.units.push(Unit { members });
      }
      Joined::One(u) => {
        self.unit_of.push(u);
        self.units[u].members.push(i);
      }
      Joined::Several => self.number_units(),
    }
  }

  /// Records message `i` = the next one: tokens, step, the calls it answers and makes, its
  /// group. Leaves `units` and `unit_of` to the caller; says which units it joined.
  fn link(&mut self, m: &Message, tokens: usize) -> Joined {
    let i = self.tokens.len();
    self.tokens.push(tokens);
    self.sum += tokens;
    self.shapes.push(Shape::of(m));
    self.groups.parent.push(i);
    self.answered_call.push(None);
    // Each message is tied to the callers of every call it answers: a unit is a connected
    // group. In a valid conversation that is one caller and its results; a message that both
    // answers and calls (or answers several callers) chains their units into one, so that no
    // removal can ever separate a call from its result.
    let mut joined = Joined::Nothing;
    for id in &m.answers {
      if let Some((caller, c)) = self.calls.get(id) {
        self.answered_call[i].get_or_insert((caller, c));
        joined = joined.with(self.unit_of.get(caller).copied());
        self.groups.join(caller, i);
      }
    }
    // An AI SDK approval response goes with the message that asked for the approval (the SDK
    // looks the request up by its id when it runs the approved call): the same unit.
    for id in m.approval_responses() {
      if let Some(&asker) = self.approvals.get(id) {
        joined = joined.with(self.unit_of.get(asker).copied());
        self.groups.join(asker, i);
      }
    }
    for (id, _) in m.approval_requests() {
      self.approvals.insert(id.to_string(), i);
    }
    if m.has_tool_calls() {
      self.current_step += 1;
      self.calls.push(i, m);
      self.steps.push(self.current_step);
    } else {
      // A result belongs to the step of the (first known) call it answers.
      let step = self.answered_call[i].map_or(self.current_step, |(caller, _)| self.steps[caller]);
      self.steps.push(step);
    }
    joined
  }

  /// Numbers the units by their first message, members ascending, from the groups.
  fn number_units(&mut self) {
    let n = self.tokens.len();
    self.units.clear();
    self.unit_of.clear();
    let mut unit_of_root = vec![usize::MAX; n];
    for i in 0..n {
      let root = self.groups.root(i);
      if unit_of_root[root] == usize::MAX {
        unit_of_root[root] = self.units.len();
        self.units.push(Unit { members: Members::new() });
      }
      self.unit_of.push(unit_of_root[root]);
      self.units[unit_of_root[root]].members.push(i);
    }
  }

  /// The number of messages.
  pub fn len(&self) -> usize {
    self.tokens.len()
  }

  /// Whether there are no messages.
  pub fn is_empty(&self) -> bool {
    self.tokens.is_empty()
  }

  /// The tokens of the whole request counted in `encoding`, reply priming included (0 without
  /// messages).
  pub fn total_tokens(&self, encoding: Encoding) -> usize {
    if self.tokens.is_empty() {
      0
    } else {
      self.sum + reply_priming(encoding)
    }
  }

  /// The number of steps (assistant messages with tool calls).
  pub fn current_step(&self) -> usize {
    self.current_step
  }
}

/// Which existing units a pushed message was tied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joined {
  Nothing,
  One(usize),
  Several,
}

impl Joined {
  /// What is joined once the message is also tied to `unit` (`None`: units not numbered yet).
  fn with(self, unit: Option<usize>) -> Joined {
    match (self, unit) {
      (Joined::Nothing, Some(u)) => Joined::One(u),
      (Joined::One(a), Some(u)) if a == u => Joined::One(a),
      _ => Joined::Several,
    }
  }
}

impl<'a> Conversation<'a> {
  /// Analyses `messages`, counting tokens in `encoding`.
  pub fn new(messages: &'a [Message], encoding: Encoding) -> Self {
    Self::from_refs(messages.iter().collect(), encoding)
  }

  /// Analyses messages held elsewhere (e.g. in the binding's message cache), counting tokens in
  /// `encoding`. Counts are memoised in each message, so an unchanged message is counted once.
  pub fn from_refs(messages: Vec<&'a Message>, encoding: Encoding) -> Self {
    let tokens = messages.iter().map(|m| message_tokens(m, encoding)).collect();
    Self::with_tokens(messages, encoding, tokens)
  }

  /// Analyses `messages` with token counts already known (one per message).
  ///
  /// # Panics
  ///
  /// Never on input data; `tokens` must have one entry per message (a caller bug otherwise,
  /// caught in debug builds).
  pub fn with_tokens(messages: Vec<&'a Message>, encoding: Encoding, tokens: Vec<usize>) -> Self {
    let layout = Layout::build(&messages, tokens);
    Conversation {
      messages,
      encoding,
      format: Format::default(),
      layout: Cow::Owned(layout),
      analysed: None,
    }
  }

  /// `messages` with their layout already made (e.g. kept up to date by a
  /// the analysis's `ContextWindow`): nothing is analysed again.
  ///
  /// # Panics
  ///
  /// Never on input data; `layout` must be the layout of `messages` (a caller bug otherwise,
  /// caught in debug builds).
  pub fn with_layout(messages: Vec<&'a Message>, encoding: Encoding, layout: &'a Layout) -> Self {
    debug_assert_eq!(messages.len(), layout.len());
    Conversation {
      messages,
      encoding,
      format: Format::default(),
      layout: Cow::Borrowed(layout),
      analysed: None,
    }
  }

  /// The same conversation, read in `format`: strategies' plans are made to follow its
  /// provider's rules (see [`crate::Plan::conform`]).
  pub fn with_format(mut self, format: Format) -> Self {
    self.format = format;
    self
  }

  /// The same conversation lending what a later layer already found of exactly these messages
  /// (the analysis's `GrowingAnalysis`: file operations, supersessions and split view, found
  /// once per message as the conversation grew, as the simulator does), read back with
  /// [`Conversation::analysed`] instead of found again. The model keeps it without knowing its
  /// type.
  pub fn with_analysed(mut self, analysed: &'a (dyn Any + Send + Sync)) -> Self {
    self.analysed = Some(analysed);
    self
  }

  /// What was lent with [`Conversation::with_analysed`], if it is a `T`.
  pub fn analysed<T: Any>(&self) -> Option<&'a T> {
    self.analysed.and_then(|a| a.downcast_ref::<T>())
  }

  /// The format the messages were read in (OpenAI unless set with [`Conversation::with_format`]).
  pub fn format(&self) -> Format {
    self.format
  }

  /// The messages.
  pub fn messages(&self) -> &[&'a Message] {
    &self.messages
  }

  /// Message `i`.
  pub fn message(&self, i: usize) -> &'a Message {
    self.messages[i]
  }

  /// The number of messages.
  pub fn len(&self) -> usize {
    self.messages.len()
  }

  /// Whether there are no messages.
  pub fn is_empty(&self) -> bool {
    self.messages.is_empty()
  }

  /// The encoding the counts are in.
  pub fn encoding(&self) -> Encoding {
    self.encoding
  }

  /// The tokens of message `i` (with its framing overhead).
  pub fn tokens(&self, i: usize) -> usize {
    self.layout.tokens[i]
  }

  /// The [`Shape`] of message `i`: what [`Message::role`], [`Message::is_tool_result`] and the
  /// like say of it, without reading the message.
  pub fn shape(&self, i: usize) -> Shape {
    self.layout.shapes[i]
  }

  /// Every message's tokens.
  pub fn all_tokens(&self) -> &[usize] {
    &self.layout.tokens
  }

  /// The tokens of the whole request, reply priming included.
  pub fn total_tokens(&self) -> usize {
    self.layout.total_tokens(self.encoding)
  }

  /// The step of message `i`.
  pub fn step(&self, i: usize) -> usize {
    self.layout.steps[i]
  }

  /// Every message's step.
  pub fn steps(&self) -> &[usize] {
    &self.layout.steps
  }

  /// The number of steps (assistant messages with tool calls).
  pub fn current_step(&self) -> usize {
    self.layout.current_step
  }

  /// The age of message `i` in steps.
  pub fn age(&self, i: usize) -> usize {
    self.layout.current_step - self.layout.steps[i]
  }

  /// The units, ordered by their first message.
  pub fn units(&self) -> &[Unit] {
    &self.layout.units
  }

  /// The index of the unit of message `i`.
  pub fn unit_of(&self, i: usize) -> usize {
    self.layout.unit_of[i]
  }

  /// For a message that answers a known call: the calling message and the call's index in it.
  pub fn answered_call(&self, i: usize) -> Option<(usize, usize)> {
    self.layout.answered_call[i]
  }

  /// The call that the result answering `call_id` in message `i` answers: (calling message,
  /// call index), among the calls of the message whose call `i` answers first (a message's
  /// results answer one message's calls in any conversation a provider accepts).
  pub fn result_call(&self, i: usize, call_id: &str) -> Option<(usize, usize)> {
    let (caller, _) = self.layout.answered_call[i]?;
    let c = self.messages[caller].tool_calls.iter().position(|call| call.id == call_id)?;
    Some((caller, c))
  }

  /// The name of the tool whose result message `i` is, from its call (or its `name` field).
  pub fn tool_name(&self, i: usize) -> Option<&'a str> {
    match self.layout.answered_call[i] {
      Some((caller, c)) => Some(self.messages[caller].tool_calls[c].name.as_str()),
      None => self.messages[i].name.as_deref(),
    }
  }

  /// The arguments (JSON text) of the call that message `i` answers.
  pub fn call_arguments(&self, i: usize) -> Option<&'a str> {
    self.layout.answered_call[i]
      .map(|(caller, c)| self.messages[caller].tool_calls[c].arguments.as_str())
  }

  /// The index of the current task: the last user message that opens the current turn.
  ///
  /// A user message (not a tool result) opens a turn when the nearest message before it that is
  /// not a user message is absent, a system or developer message, or an assistant message
  /// without tool calls (the agent handed the turn back). A user message in the middle of an
  /// agent's tool loop, such as a tool error an agent framework reports as a user message, does
  /// not. When no user message opens a turn, the last user message is the task.
  ///
  /// Found from the end, so a turn costs what lies after its task, not the whole history.
  pub fn current_task(&self) -> Option<usize> {
    let shapes = &self.layout.shapes[..self.messages.len()];
    let mut last_user = None;
    let mut i = shapes.len();
    while let Some(at) = i.checked_sub(1) {
      if !shapes[at].is_user_turn() {
        i = at;
        continue;
      }
      // A run of user messages ends at `at`: they all open a turn or none does.
      let mut start = at;
      while start > 0 && shapes[start - 1].is_user_turn() {
        start -= 1;
      }
      last_user.get_or_insert(at);
      if start.checked_sub(1).is_none_or(|before| opens_turn_after(shapes[before])) {
        return Some(at);
      }
      i = start;
    }
    last_user
  }

  /// For every message, whether it is a user message (not a tool result) that opens a turn, as
  /// [`Conversation::current_task`] defines it.
  pub fn turn_openers(&self) -> Vec<bool> {
    let mut opens = true;
    self.layout.shapes[..self.messages.len()]
      .iter()
      .map(|&m| {
        if m.is_user_turn() {
          opens
        } else {
          opens = opens_turn_after(m);
          false
        }
      })
      .collect()
  }
}

/// Whether a user message right after `m` (a message that is not a user turn) opens a turn: `m`
/// is a system or developer message, or an assistant message without tool calls.
fn opens_turn_after(m: Shape) -> bool {
  m.is_instruction() || (m.is_assistant() && !m.has_tool_calls())
}

/// Disjoint groups of message indices (union-find with path halving), to build the units.
#[derive(Debug, Clone, Default)]
struct Groups {
  parent: Vec<usize>,
}

impl Groups {
  /// The representative of `i`'s group.
  fn root(&mut self, mut i: usize) -> usize {
    while self.parent[i] != i {
      self.parent[i] = self.parent[self.parent[i]];
      i = self.parent[i];
    }
    i
  }

  /// Puts `a` and `b` in one group.
  fn join(&mut self, a: usize, b: usize) {
    let (ra, rb) = (self.root(a), self.root(b));
    // The smaller index represents the group, so roots are the groups' first messages.
    let (keep, merge) = if ra < rb { (ra, rb) } else { (rb, ra) };
    self.parent[merge] = keep;
  }
}

#[cfg(test)]
pub(crate) mod tests {
  use super::*;
  use crate::model::message::{Content, Role, ToolCall};

  pub(crate) fn call(ids: &[&str]) -> Message {
    let mut m = Message::text(Role::Assistant, "");
    m.content = Content::Empty;
    m.tool_calls = ids
      .iter()
      .map(|id| ToolCall { id: id.to_string(), name: "read_file".into(), arguments: "{}".into() })
      .collect();
    m
  }

  pub(crate) fn result(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Tool, text);
    m.answers = vec![id.to_string()];
    m
  }

  #[test]
  fn a_result_pairs_with_the_latest_call_of_its_id_in_any_earlier_message() {
    // Results of the latest calling message are found among its calls; any other goes through
    // the map of every id, which must hold the calls made since it was last brought up to date.
    let msgs = vec![
      call(&["a", "b", "a"]),
      call(&["c"]),
      result("a", "A"),
      result("c", "C"),
      call(&["d"]),
      result("b", "B"),
      call(&["c", "e"]),
      result("d", "D"),
      result("c", "C2"),
      result("e", "E"),
      result("zzz", "orphan"),
    ];
    let c = Conversation::new(&msgs, Encoding::O200kBase);
    let paired: Vec<Option<(usize, usize)>> = (0..msgs.len()).map(|i| c.answered_call(i)).collect();
    assert_eq!(
      paired,
      vec![
        None,
        None,
        Some((0, 2)),
        Some((1, 0)),
        None,
        Some((0, 1)),
        None,
        Some((4, 0)),
        Some((6, 0)),
        Some((6, 1)),
        None
      ]
    );
    // Built one message at a time, the same.
    let mut layout = Layout::default();
    for m in &msgs {
      layout.push(m, 1);
    }
    assert_eq!(layout.answered_call, paired);
  }

  #[test]
  fn steps_and_units_follow_calls() {
    let msgs = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::User, "task"),
      call(&["a", "b"]),
      result("a", "A"),
      result("b", "B"),
      Message::text(Role::Assistant, "thinking"),
      call(&["c"]),
      result("c", "C"),
      result("zzz", "orphan"),
    ];
    let c = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(c.steps(), &[0, 0, 1, 1, 1, 1, 2, 2, 2]);
    assert_eq!(c.current_step(), 2);
    assert_eq!(c.age(3), 1);
    assert_eq!(c.units()[c.unit_of(2)].members, vec![2, 3, 4]);
    assert_eq!(c.units()[c.unit_of(6)].members, vec![6, 7]);
    assert_eq!(c.units()[c.unit_of(8)].members, vec![8]);
    assert_eq!(c.answered_call(4), Some((2, 1)));
    assert_eq!(c.tool_name(7), Some("read_file"));
    assert_eq!(c.current_task(), Some(1));
    assert_eq!(
      c.total_tokens(),
      c.all_tokens().iter().sum::<usize>() + crate::model::tokens::REPLY_PRIMING
    );
  }

  #[test]
  fn a_message_that_answers_and_calls_chains_both_units() {
    // Found by the fuzzer: a tool message that also carries tool_calls was a unit of its own,
    // so dropping the call it answers left it an orphan.
    let mut both = result("a", "A");
    both.tool_calls = call(&["b"]).tool_calls;
    let msgs = vec![Message::text(Role::User, "u"), call(&["a"]), both, result("b", "B")];
    let c = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(c.units().len(), 2);
    assert_eq!(c.units()[c.unit_of(1)].members, vec![1, 2, 3]);
    assert_eq!(c.answered_call(2), Some((1, 0)));
    assert_eq!(c.answered_call(3), Some((2, 0)));
    assert_eq!(c.steps(), &[0, 1, 2, 2]);
    // A message answering calls of two messages joins both.
    let mut two = result("x", "X");
    two.answers.push("y".into());
    let msgs = vec![call(&["x"]), call(&["y"]), two, Message::text(Role::User, "u")];
    let c = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(
      c.units().iter().map(|u| u.members.to_vec()).collect::<Vec<_>>(),
      vec![vec![0, 1, 2], vec![3]]
    );
    assert_eq!(c.steps(), &[1, 2, 1, 2]);
  }

  #[test]
  fn the_current_task_is_the_user_message_that_opens_the_turn() {
    let user = |t: &str| Message::text(Role::User, t);
    let answer = Message::text(Role::Assistant, "done");
    // A user message after a tool result (a framework's error report) does not open a turn.
    let loop_error = vec![
      Message::text(Role::System, "s"),
      user("task"),
      call(&["a"]),
      result("a", "A"),
      user("bad"),
    ];
    assert_eq!(Conversation::new(&loop_error, Encoding::O200kBase).current_task(), Some(1));
    // After the agent hands the turn back, the next user message is the task.
    let next_turn = vec![user("first"), call(&["a"]), result("a", "A"), answer, user("second")];
    assert_eq!(Conversation::new(&next_turn, Encoding::O200kBase).current_task(), Some(4));
    // Of a run of user messages opening the turn, the last.
    let run = vec![user("instructions"), user("task"), call(&["a"]), result("a", "A")];
    assert_eq!(Conversation::new(&run, Encoding::O200kBase).current_task(), Some(1));
    // No user message opens a turn: the last user message.
    let none = vec![call(&["a"]), result("a", "A"), user("late")];
    assert_eq!(Conversation::new(&none, Encoding::O200kBase).current_task(), Some(2));
    assert_eq!(Conversation::new(&[call(&["a"])], Encoding::O200kBase).current_task(), None);
    let c = Conversation::new(&loop_error, Encoding::O200kBase);
    assert_eq!(c.turn_openers(), vec![false, true, false, false, false]);
  }

  #[test]
  fn the_current_task_found_from_the_end_is_the_last_turn_opener_of_every_prefix() {
    // The definition, read forward: the last turn opener, else the last user message.
    let by_openers = |c: &Conversation<'_>| {
      let opens = c.turn_openers();
      opens.iter().rposition(|&o| o).or_else(|| c.messages().iter().rposition(|m| m.is_user_turn()))
    };
    let mut checked = 0;
    for (name, messages) in crate::testing::transcripts() {
      let refs: Vec<&Message> = messages.iter().collect();
      let mut layout = Layout::default();
      for (end, m) in refs.iter().enumerate() {
        layout.push(m, 1);
        let c = Conversation::with_layout(refs[..=end].to_vec(), Encoding::O200kBase, &layout);
        assert_eq!(c.current_task(), by_openers(&c), "{name}, first {} messages", end + 1);
        checked += usize::from(c.current_task().is_some());
      }
    }
    assert!(checked > 100, "only {checked} prefixes have a task");
  }

  #[test]
  fn members_read_as_the_indices_pushed_inline_or_not() {
    let mut members = Members::new();
    assert!(members.is_empty());
    for i in 0..7 {
      members.push(i * 2);
      assert_eq!(members, (0..=i).map(|k| k * 2).collect::<Vec<_>>());
    }
    assert_eq!(format!("{members:?}"), "[0, 2, 4, 6, 8, 10, 12]");
    assert_eq!((&members).into_iter().sum::<usize>(), 42);
  }

  #[test]
  fn a_shape_says_what_its_message_says() {
    let mut summary = Message::text(Role::User, "earlier");
    summary.is_summary = true;
    let messages = vec![
      Message::text(Role::System, "s"),
      Message::text(Role::Developer, "d"),
      Message::text(Role::User, "u"),
      summary,
      Message::text(Role::Assistant, "a"),
      call(&["a", "b"]),
      result("a", "A"),
      Message { answers: vec!["a".into(), "b".into()], ..Message::text(Role::User, "both") },
      Message::text(Role::Tool, "orphan"),
      Message::text(Role::User, "  # agents.md instructions"),
      Message { name: Some("AGENTS.md".into()), ..Message::text(Role::User, "be brief") },
    ];
    for m in &messages {
      let s = Shape::of(m);
      assert_eq!(s.is_instruction(), m.role.is_instruction(), "{m:?}");
      assert_eq!(s.is_user_turn(), m.is_user_turn(), "{m:?}");
      assert_eq!(s.is_tool_result(), m.is_tool_result(), "{m:?}");
      assert_eq!(s.is_single_result(), m.is_single_result(), "{m:?}");
      assert_eq!(s.is_assistant(), m.role == Role::Assistant, "{m:?}");
      assert_eq!(s.has_tool_calls(), m.has_tool_calls(), "{m:?}");
      assert_eq!(s.is_summary(), m.is_summary, "{m:?}");
      assert_eq!(s.is_agent_instruction(), m.is_agent_instruction(&[]), "{m:?}");
    }
    let agents = messages.iter().filter(|m| Shape::of(m).is_agent_instruction()).count();
    assert_eq!(agents, 2);
    let c = Conversation::new(&messages, Encoding::O200kBase);
    assert!((0..messages.len()).all(|i| c.shape(i) == Shape::of(&messages[i])));
  }

  #[test]
  fn a_result_belongs_to_the_step_of_its_call_even_when_late() {
    let msgs = vec![call(&["a"]), call(&["b"]), result("a", "A"), result("b", "B")];
    let c = Conversation::new(&msgs, Encoding::O200kBase);
    assert_eq!(c.steps(), &[1, 2, 1, 2]);
    assert_eq!(c.units()[0].members, vec![0, 2]);
  }
}
