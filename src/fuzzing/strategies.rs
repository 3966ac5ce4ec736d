//! Every strategy as the harness runs it: how its options come from the knob bits, which
//! messages it promises never to drop (an oracle written from its documentation, not from its
//! code), and which invariants it promises.

use crate::conversation::Conversation;
use crate::message::Role;
use crate::plan::Plan;
use crate::strategy::roles::{apply_max_context_tokens, MaxContextOptions};

/// What a strategy promises beyond what every strategy does (one decision per message, whole
/// units, protected messages returned, valid output for valid input, determinism).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Promises {
  /// It only drops messages, never replaces them with placeholders.
  pub drops_only: bool,
  /// Within the budget it returns the input unchanged.
  pub unchanged_within_budget: bool,
  /// Over the budget after trimming, it returns nothing but protected messages.
  pub fits_unless_protected: bool,
  /// Trimming its output again with the same budget and options changes nothing.
  pub idempotent: bool,
}

/// A strategy under test.
pub struct Strategy {
  /// Its name, as the Rust function is called.
  pub name: &'static str,
  /// Runs it on a conversation with a budget in tokens and option bits.
  pub run: fn(&Conversation<'_>, usize, u64) -> Plan,
  /// For each message, whether the strategy promises to return it (kept or replaced) whatever
  /// the budget, for the options these bits give.
  pub protected: fn(&Conversation<'_>, u64) -> Vec<bool>,
  /// What else it promises.
  pub promises: Promises,
}

/// Every strategy of the crate.
pub const STRATEGIES: &[Strategy] = &[Strategy {
  name: "apply_max_context_tokens",
  run: |conv, budget, bits| apply_max_context_tokens(conv, budget, &max_context_options(bits)),
  protected: max_context_protected,
  promises: Promises {
    drops_only: true,
    unchanged_within_budget: true,
    fits_unless_protected: true,
    idempotent: true,
  },
}];

/// Reads option values from knob bits, a few bits at a time.
struct Bits(u64);

impl Bits {
  /// The next `n` bits (n < 64) as a number.
  fn take(&mut self, n: u32) -> u64 {
    let v = self.0 & ((1 << n) - 1);
    self.0 = self.0.rotate_right(n);
    v
  }

  fn flag(&mut self) -> bool {
    self.take(1) == 1
  }
}

/// `applyMaxContextTokens` options from bits: up to five roles in a drop order, `keepFirstSystem`,
/// and a `minKeep` of 0 to 3 for each role.
pub(crate) fn max_context_options(bits: u64) -> MaxContextOptions {
  let mut b = Bits(bits);
  let mut pool = Role::ALL.to_vec();
  let mut drop_order = Vec::new();
  for _ in 0..b.take(3) % 6 {
    let k = b.take(3) as usize % pool.len();
    drop_order.push(pool.remove(k));
  }
  let keep_first_system = b.flag();
  let min_keep = Role::ALL
    .iter()
    .filter_map(|&role| if b.flag() { Some((role, b.take(2) as usize)) } else { None })
    .collect();
  MaxContextOptions { drop_order, keep_first_system, min_keep }
}

/// What `applyMaxContextTokens` never drops (docs/max-context-tokens.md, rule 3): the unit of
/// the last message; with `keepFirstSystem` the unit of the first system or developer message;
/// with `minKeep` the units of the last n messages of each role.
fn max_context_protected(conv: &Conversation<'_>, bits: u64) -> Vec<bool> {
  let options = max_context_options(bits);
  let messages = conv.messages();
  let mut anchors = Vec::new();
  anchors.extend(messages.len().checked_sub(1));
  if options.keep_first_system {
    anchors.extend(messages.iter().position(|m| m.role.is_instruction()));
  }
  for &(role, n) in &options.min_keep {
    let last = messages.iter().enumerate().rev().filter(|(_, m)| m.role == role).take(n);
    anchors.extend(last.map(|(i, _)| i));
  }
  let mut protected = vec![false; messages.len()];
  for i in anchors {
    for &j in &conv.units()[conv.unit_of(i)].members {
      protected[j] = true;
    }
  }
  protected
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn option_bits_cover_every_option() {
    assert_eq!(max_context_options(0), MaxContextOptions::default());
    let all = max_context_options(u64::MAX);
    assert_eq!(all.drop_order.len(), 1);
    assert!(all.keep_first_system);
    assert_eq!(all.min_keep, Role::ALL.iter().map(|&r| (r, 3)).collect::<Vec<_>>());
    // Five roles listed, each once.
    let five = max_context_options(0b101);
    assert_eq!(five.drop_order, Role::ALL.to_vec());
  }
}
