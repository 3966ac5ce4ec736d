//! What the strategies read of each message that depends only on the messages up to it (its
//! file operation, the results it supersedes), kept for a conversation that grows: found once
//! per message, then handed to every later analysis of the same messages instead of searched
//! for again. The simulator, the binding's kept layouts and `ContextWindow` keep one, and lend
//! it with a conversation of the same messages ([`GrowingAnalysis::give`]).

use crate::analysis::file_ops::FileOperations;
use crate::analysis::supersession::{SplitView, Supersessions, ToolNames};
use crate::model::conversation::Conversation;

/// The file operations and supersessions (with the default tool names) of a growing
/// conversation's messages.
#[derive(Debug)]
pub struct GrowingAnalysis {
  operations: FileOperations,
  supersessions: Supersessions,
  /// The messages read result by result, kept from the first message of several results on
  /// (the classification reads supersession there).
  split: Option<SplitView>,
}

impl Default for GrowingAnalysis {
  fn default() -> Self {
    GrowingAnalysis {
      operations: FileOperations::default(),
      supersessions: Supersessions::new(ToolNames::default()),
      split: None,
    }
  }
}

/// A copy starts afresh: it is found again on its first use (it is a cache of what the
/// messages say).
impl Clone for GrowingAnalysis {
  fn clone(&self) -> Self {
    GrowingAnalysis::default()
  }
}

impl GrowingAnalysis {
  /// Analyses the messages of `conv` after the ones already analysed (the messages before must
  /// be the same).
  pub fn extend(&mut self, conv: &Conversation<'_>) {
    self.operations.extend(conv);
    while self.supersessions.len() < conv.len() {
      self.supersessions.push(conv);
    }
    if self.split.is_none() && !self.operations.answering_several().is_empty() {
      self.split = Some(SplitView::default());
    }
    if let Some(split) = &mut self.split {
      split.grow(conv, &self.operations);
    }
  }

  /// `conv` reading the kept analysis: `conv`'s messages must be the ones analysed, no more.
  ///
  /// # Panics
  ///
  /// Never on input data; the analysis must have read exactly `conv`'s messages (a caller bug
  /// otherwise, caught in debug builds).
  pub fn give<'a>(&'a self, conv: Conversation<'a>) -> Conversation<'a> {
    debug_assert_eq!(self.operations.len(), conv.len());
    debug_assert_eq!(self.supersessions.len(), conv.len());
    debug_assert!(self.split.as_ref().is_none_or(|split| split.len() == conv.len()));
    conv.with_analysed(self)
  }

  /// The analysis lent with `conv` ([`GrowingAnalysis::give`]).
  pub fn given<'a>(conv: &Conversation<'a>) -> Option<&'a GrowingAnalysis> {
    conv.analysed::<GrowingAnalysis>()
  }

  /// The supersessions lent with `conv`: the classification and
  /// [`crate::strategy::dedup::deduplicate`] read them instead of analysing every message again.
  pub fn supersessions<'a>(conv: &Conversation<'a>) -> Option<&'a Supersessions> {
    Self::given(conv).map(|g| &g.supersessions)
  }

  /// The file operations lent with `conv` ([`crate::analysis::file_ops::file_operations`] reads
  /// them instead of finding them again: a message's operation depends on it and the call it
  /// answers alone, which a growing layout never changes).
  pub fn file_operations<'a>(conv: &Conversation<'a>) -> Option<&'a FileOperations> {
    Self::given(conv).map(|g| &g.operations)
  }

  /// The messages of `conv` read result by result, lent with it
  /// ([`crate::analysis::supersession::superseded_by_result`]): a message of several results is
  /// not split and read again on every call.
  pub fn split_view<'a>(conv: &Conversation<'a>) -> Option<&'a SplitView> {
    Self::given(conv).and_then(|g| g.split.as_ref())
  }

  /// How many messages are analysed.
  pub fn len(&self) -> usize {
    self.operations.len().min(self.supersessions.len())
  }

  /// Whether no message is analysed.
  pub fn is_empty(&self) -> bool {
    self.len() == 0
  }
}
