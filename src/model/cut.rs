//! Cutting the middle out of a long text so that it fits a token budget.
//!
//! The head and the tail of a tool output usually carry what matters (the command's first
//! lines, the final status or error), so [`cut_middle`] keeps both and puts a marker saying how
//! many tokens were cut between them ([`CUT_MARKER`]). The result is counted after it is built,
//! so it always fits the budget.

use crate::model::message::Message;
use crate::model::tokens::{count_tokens, prefix_within, suffix_within, Encoding};

/// The marker put in place of the cut middle; `{tokens}` is the number of tokens cut.
pub const CUT_MARKER: &str = "\n\n[... {tokens} tokens cut ...]\n\n";

/// The smallest budget [`cut_middle`] accepts: the marker with the largest count fits in it
/// with room to spare in every encoding.
pub const MIN_CUT_BUDGET: usize = 32;

/// A text with its middle cut out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
  /// Head, marker and tail.
  pub text: String,
  /// The tokens of the original text that are not in the head or the tail.
  pub cut_tokens: usize,
  /// The tokens of the original text.
  pub original_tokens: usize,
  /// The tokens of `text` (counted when the cut was made: a strategy that uses a memoised cut
  /// again does not count it again).
  pub tokens: usize,
}

/// The marker for `tokens` cut tokens.
pub fn marker(tokens: usize) -> String {
  CUT_MARKER.replace("{tokens}", &tokens.to_string())
}

/// Cuts the middle of `text` so that the result, marker included, is at most `max_tokens`
/// tokens: the head gets half of what the marker leaves (rounded up), the tail the rest. Cuts
/// fall on token boundaries, moved to the nearest character boundary inside the kept part.
///
/// Returns `None` when `text` already fits, or when `max_tokens` is too small for the marker
/// (it never is from [`MIN_CUT_BUDGET`] on).
pub fn cut_middle(text: &str, max_tokens: usize, encoding: Encoding) -> Option<Cut> {
  let original_tokens = count_tokens(text, encoding);
  if original_tokens <= max_tokens {
    return None;
  }
  // The marker never names more tokens than the whole text has.
  let marker_tokens = count_tokens(&marker(original_tokens), encoding);
  let mut budget = max_tokens.checked_sub(marker_tokens)?;
  loop {
    let head_end = prefix_within(text, budget.div_ceil(2), encoding);
    let tail_start = suffix_within(text, budget / 2, encoding).max(head_end);
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let kept = count_tokens(head, encoding) + count_tokens(tail, encoding);
    let cut_tokens = original_tokens.saturating_sub(kept);
    let out = format!("{head}{}{tail}", marker(cut_tokens));
    let tokens = count_tokens(&out, encoding);
    if tokens <= max_tokens {
      return Some(Cut { text: out, cut_tokens, original_tokens, tokens });
    }
    if budget == 0 {
      return None;
    }
    // Tokens can merge differently across the joins: give back what overflowed and retry.
    budget = budget.saturating_sub(tokens - max_tokens);
  }
}

/// [`cut_middle`] of the content text of `m`, memoised in the message: the cut to
/// [`MIN_CUT_BUDGET`] (for the first encoding asked) and the cut to the first other limit and
/// encoding asked. A strategy that cuts the same old outputs on every call of a growing
/// conversation cuts each once.
pub fn cut_content(m: &Message, max_tokens: usize, encoding: Encoding) -> Option<Cut> {
  let cut = || cut_middle(&m.content_text(), max_tokens, encoding);
  if max_tokens == MIN_CUT_BUDGET {
    return match m.memo.min_cut.get_or_init(|| (encoding, cut())) {
      (enc, memo) if *enc == encoding => memo.clone(),
      _ => cut(),
    };
  }
  match m.memo.cut.get_or_init(|| (max_tokens, encoding, cut())) {
    (limit, enc, memo) if *limit == max_tokens && *enc == encoding => memo.clone(),
    _ => cut(),
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn log(lines: usize) -> String {
    (0..lines).map(|i| format!("{i:05}: compiling module_{i} ... ok\n")).collect()
  }

  #[test]
  fn the_result_fits_the_budget_and_keeps_head_and_tail() {
    let text = log(2_000);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::Approximate] {
      for max in [MIN_CUT_BUDGET, 33, 100, 257, 2_000] {
        let cut = cut_middle(&text, max, encoding).expect("the log is longer than the budget");
        let n = count_tokens(&cut.text, encoding);
        assert!(n <= max, "{encoding:?} {max}: {n} tokens");
        assert!(cut.text.starts_with("00000: compiling"), "{encoding:?} {max}");
        assert!(cut.text.ends_with(" ... ok\n"), "{encoding:?} {max}");
        assert!(cut.text.contains(&marker(cut.cut_tokens)));
        assert_eq!(cut.original_tokens, count_tokens(&text, encoding));
        assert!(cut.cut_tokens >= cut.original_tokens - max);
      }
    }
  }

  #[test]
  fn the_marker_counts_exactly_what_head_and_tail_do_not_keep() {
    let text = log(500);
    let cut = cut_middle(&text, 300, Encoding::O200kBase).unwrap();
    let m = marker(cut.cut_tokens);
    let (head, tail) = cut.text.split_once(&m).unwrap();
    let kept = count_tokens(head, Encoding::O200kBase) + count_tokens(tail, Encoding::O200kBase);
    assert_eq!(cut.cut_tokens, cut.original_tokens - kept);
    assert!(text.starts_with(head) && text.ends_with(tail));
  }

  #[test]
  fn a_message_cut_is_the_text_cut_however_often_it_is_asked() {
    let m = crate::testing::result("1", &log(500));
    for _ in 0..2 {
      for (max, encoding) in [
        (MIN_CUT_BUDGET, Encoding::O200kBase),
        (200, Encoding::O200kBase),
        (200, Encoding::Cl100kBase),
        (MIN_CUT_BUDGET, Encoding::Cl100kBase),
      ] {
        assert_eq!(
          cut_content(&m, max, encoding),
          cut_middle(&log(500), max, encoding),
          "{max} {encoding:?}"
        );
      }
    }
  }

  #[test]
  fn multibyte_text_is_cut_on_character_boundaries() {
    let text = "東京🚀naïve—".repeat(3_000);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::Approximate] {
      let cut = cut_middle(&text, 64, encoding).unwrap();
      assert!(count_tokens(&cut.text, encoding) <= 64);
      let m = marker(cut.cut_tokens);
      let (head, tail) = cut.text.split_once(&m).unwrap();
      assert!(text.starts_with(head) && text.ends_with(tail), "{encoding:?}");
    }
  }

  #[test]
  fn text_that_fits_or_a_budget_below_the_marker_is_not_cut() {
    assert_eq!(cut_middle("short output", 32, Encoding::O200kBase), None);
    assert_eq!(cut_middle(&log(100), 3, Encoding::O200kBase), None);
  }
}
