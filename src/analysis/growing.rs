//! What the strategies read of each message that depends only on the messages up to it (its
//! file operation, the results it supersedes), kept for a conversation that grows: found once
//! per message, then handed to every later analysis of the same messages instead of searched
//! for again. The simulator, the binding's kept layouts and `ContextWindow` keep one.

use crate::analysis::file_ops::FileOperations;
use crate::analysis::supersession::{SplitView, Supersessions};
use crate::model::conversation::Conversation;
use crate::strategy::dedup::DedupOptions;

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
      supersessions: Supersessions::new(DedupOptions::default().tools),
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
  pub fn give<'a>(&'a self, conv: Conversation<'a>) -> Conversation<'a> {
    let conv = conv.with_file_operations(&self.operations).with_supersessions(&self.supersessions);
    match &self.split {
      Some(split) => conv.with_split_view(split),
      None => conv,
    }
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
