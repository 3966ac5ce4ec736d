//! A conversation that grows one message at a time, for apps that own the agent loop.
//!
//! Each appended message is counted once and linked into the [`Layout`] (its step, the call it
//! answers, its tool-call unit) in time proportional to its own calls and results; the request's
//! total is a running sum. A strategy run on [`ContextWindow::conversation`] then costs
//! O(messages): no text is read or tokenised again, and nothing is re-analysed. It is of the
//! analysis, not the model, because it carries its messages' analysis ([`GrowingAnalysis`]) from
//! one strategy to the next.

use std::cell::RefCell;

use crate::analysis::growing::GrowingAnalysis;
use crate::model::conversation::{Conversation, Layout};
use crate::model::format::Format;
use crate::model::message::Message;
use crate::model::tokens::{message_tokens, Encoding};

/// A growing conversation of `M`s (messages, or anything holding one), with its layout kept up
/// to date.
#[derive(Debug, Clone)]
pub struct ContextWindow<M> {
  items: Vec<M>,
  encoding: Encoding,
  format: Format,
  layout: Layout,
  /// The messages' file operations and supersessions, found for the messages appended since
  /// the last strategy that read them ([`ContextWindow::analysed`]).
  analysis: RefCell<GrowingAnalysis>,
}

impl<M: AsRef<Message>> ContextWindow<M> {
  /// An empty window counting in `encoding`, whose messages are in `format`.
  pub fn new(encoding: Encoding, format: Format) -> Self {
    ContextWindow {
      items: Vec::new(),
      encoding,
      format,
      layout: Layout::default(),
      analysis: RefCell::default(),
    }
  }

  /// Appends a message: counts its tokens (memoised in the message) and links it.
  pub fn push(&mut self, item: M) {
    let tokens = message_tokens(item.as_ref(), self.encoding);
    self.layout.push(item.as_ref(), tokens);
    self.items.push(item);
  }

  /// Replaces every message with `items`, in the window's format (which may change).
  pub fn reset(&mut self, items: Vec<M>, format: Format) {
    self.format = format;
    let refs: Vec<&Message> = items.iter().map(AsRef::as_ref).collect();
    let tokens = refs.iter().map(|m| message_tokens(m, self.encoding)).collect();
    self.layout = Layout::build(&refs, tokens);
    self.items = items;
    self.analysis = RefCell::default();
  }

  /// The messages, in order.
  pub fn items(&self) -> &[M] {
    &self.items
  }

  /// The number of messages.
  pub fn len(&self) -> usize {
    self.items.len()
  }

  /// Whether there are no messages.
  pub fn is_empty(&self) -> bool {
    self.items.is_empty()
  }

  /// The encoding the counts are in.
  pub fn encoding(&self) -> Encoding {
    self.encoding
  }

  /// The format of the messages.
  pub fn format(&self) -> Format {
    self.format
  }

  /// The tokens of the whole request, reply priming included: O(1).
  pub fn total_tokens(&self) -> usize {
    self.layout.total_tokens(self.encoding)
  }

  /// The number of steps (assistant messages with tool calls): O(1).
  pub fn current_step(&self) -> usize {
    self.layout.current_step()
  }

  /// The conversation as every strategy reads it, made from the kept layout: O(messages) for
  /// the list of references, nothing analysed again.
  pub fn conversation(&self) -> Conversation<'_> {
    let refs = self.items.iter().map(AsRef::as_ref).collect();
    Conversation::with_layout(refs, self.encoding, &self.layout).with_format(self.format)
  }

  /// `f` of [`ContextWindow::conversation`] with its messages' file operations and
  /// supersessions, carried from call to call (found for the messages appended since the last
  /// call: they depend only on the messages up to each one), as the strategies that classify or
  /// deduplicate read them.
  pub fn analysed<R>(&self, f: impl FnOnce(&Conversation<'_>) -> R) -> R {
    let conv = self.conversation();
    self.analysis.borrow_mut().extend(&conv);
    let analysis = self.analysis.borrow();
    f(&analysis.give(conv))
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::testing::{call, result, user};

  /// A message answering calls of two different messages ties their units together, as the
  /// one-pass analysis does, and later units are numbered after the merged one.
  #[test]
  fn a_message_tying_two_units_merges_them() {
    let mut both = result("a", "A and B");
    both.answers.push("b".into());
    let messages =
      vec![call("a", "ls", "{}"), user("between"), call("b", "ls", "{}"), both, user("after")];
    let mut window = ContextWindow::new(Encoding::O200kBase, Format::OpenAi);
    for m in &messages {
      window.push(m);
    }
    let whole = Conversation::new(&messages, Encoding::O200kBase);
    let grown = window.conversation();
    assert_eq!(grown.units(), whole.units());
    assert_eq!(grown.units()[grown.unit_of(0)].members, vec![0, 2, 3]);
    assert_eq!(grown.unit_of(1), 1);
    assert_eq!(grown.unit_of(4), 2);
    assert_eq!(window.current_step(), 2);
  }

  /// The carried file operations and supersessions give what a fresh analysis of the same
  /// messages gives, as the window grows, after a reset and in a copy.
  #[test]
  fn the_carried_analysis_is_a_fresh_one() {
    use crate::analysis::classify::{classify_conversation, ClassifyOptions};
    use crate::analysis::file_ops::file_operations;
    use crate::analysis::supersession::{superseded_results, ToolNames};
    let options = ClassifyOptions::default();
    let fresh = |messages: &[Message]| {
      let conv = Conversation::new(messages, Encoding::O200kBase);
      let superseded = superseded_results(&conv, &ToolNames::default());
      (
        classify_conversation(&conv, None, &options),
        superseded,
        file_operations(&conv).into_owned(),
      )
    };
    let carried = |window: &ContextWindow<&Message>| {
      window.analysed(|conv| {
        assert!(
          GrowingAnalysis::supersessions(conv).is_some()
            && GrowingAnalysis::file_operations(conv).is_some()
        );
        let superseded = superseded_results(conv, &ToolNames::default());
        (
          classify_conversation(conv, None, &options),
          superseded,
          file_operations(conv).into_owned(),
        )
      })
    };
    let mut superseded = 0;
    for (name, messages) in crate::testing::transcripts() {
      let mut window = ContextWindow::new(Encoding::O200kBase, Format::OpenAi);
      for (end, m) in messages.iter().enumerate() {
        window.push(m);
        if end % 7 == 0 || end + 1 == messages.len() {
          let got = carried(&window);
          superseded += got.1.len();
          assert_eq!(got, fresh(&messages[..=end]), "{name}, first {} messages", end + 1);
        }
      }
      assert_eq!(carried(&window.clone()), fresh(&messages), "{name}, a copy");
      let half = &messages[..messages.len() / 2];
      window.reset(half.iter().collect(), Format::OpenAi);
      assert_eq!(carried(&window), fresh(half), "{name}, reset to half");
    }
    assert!(superseded > 0);
  }

  #[test]
  fn reset_replaces_everything() {
    let messages = vec![user("task"), call("a", "read_file", "{}"), result("a", "text")];
    let mut window = ContextWindow::new(Encoding::Cl100kBase, Format::OpenAi);
    window.push(user("old"));
    window.reset(messages.clone(), Format::Anthropic);
    let whole = Conversation::new(&messages, Encoding::Cl100kBase);
    assert_eq!(window.len(), 3);
    assert_eq!(window.format(), Format::Anthropic);
    assert_eq!(window.total_tokens(), whole.total_tokens());
    assert_eq!(window.conversation().units(), whole.units());
    window.reset(Vec::new(), Format::OpenAi);
    assert!(window.is_empty());
    assert_eq!(window.total_tokens(), 0);
  }
}
