//! Cutting the middle out of a long text so that it fits a token budget.
//!
//! The head and the tail of a tool output usually carry what matters (the command's first
//! lines, the final status or error), so [`cut_middle`] keeps both and puts a marker saying how
//! many tokens were cut between them ([`CUT_MARKER`]). The result is counted after it is built,
//! so it always fits the budget.

use crate::model::message::{Content, Message, Part};
use crate::model::tokens::{
  count_tokens, count_tokens_uncached, piece_starts, prefix_span, suffix_span, Encoding, Span,
  WindowMemo,
};

/// The marker put in place of the cut middle; `{tokens}` is the number of tokens cut.
pub const CUT_MARKER: &str = "\n\n[... {tokens} tokens cut ...]\n\n";

/// The smallest budget [`cut_middle`] accepts: the marker with the largest count fits in it
/// with room to spare in every encoding.
pub const MIN_CUT_BUDGET: usize = 32;

/// A text with its middle cut out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
  /// Head, marker and tail (shared: a memoised cut used again does not copy it).
  pub text: std::sync::Arc<str>,
  /// The tokens of the original text that are not in the head or the tail: the text's tokens
  /// less those the head and the tail hold whole, as the text's windows tokenise them (counted
  /// apart without a tokenizer).
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
  cut_middle_memo(text, max_tokens, encoding, &mut CutMemo::default())
}

/// What cutting one text remembers between cuts of different sizes: its tokens and the head and
/// tail windows tokenised ([`crate::model::tokens::WindowMemo`]), in the encoding of the
/// last cut. The cuts are the same with or without it; with it, a cut of a new size tokenises
/// the words around its marker (its whole result in the encodings that do not split at piece
/// starts), not the windows again nor the whole text.
#[derive(Debug, Default, Clone)]
pub struct CutMemo {
  encoding: Option<Encoding>,
  original_tokens: Option<usize>,
  head: WindowMemo,
  tail: WindowMemo,
}

/// [`cut_middle`] of `text` with `memo` (which must only ever see `text`).
pub fn cut_middle_memo(
  text: &str,
  max_tokens: usize,
  encoding: Encoding,
  memo: &mut CutMemo,
) -> Option<Cut> {
  cut_middle_beside(text, 0, max_tokens, encoding, memo)
}

/// [`cut_middle_memo`] of a text that `beside` more tokens go with (a message's images and
/// files, which a cut copy of its text leaves out): the text is cut only when it does not fit
/// alone, and the marker, [`Cut::cut_tokens`] and [`Cut::original_tokens`] count them too.
fn cut_middle_beside(
  text: &str,
  beside: usize,
  max_tokens: usize,
  encoding: Encoding,
  memo: &mut CutMemo,
) -> Option<Cut> {
  if memo.encoding != Some(encoding) {
    *memo = CutMemo { encoding: Some(encoding), ..CutMemo::default() };
  }
  let text_tokens = *memo.original_tokens.get_or_insert_with(|| count_tokens(text, encoding));
  if text_tokens <= max_tokens {
    return None;
  }
  let original_tokens = text_tokens + beside;
  // The marker never names more tokens than the whole text has.
  let marker_tokens = count_tokens(&marker(original_tokens), encoding);
  let mut budget = max_tokens.checked_sub(marker_tokens)?;
  // The first line names what the text is (a file's path, a command): it is kept whole when it
  // fits the budget with room for a tail.
  let header = header_line(text, budget);
  let mut header_tokens: Option<usize> = None;
  loop {
    let mut head_span = prefix_span(text, budget.div_ceil(2), encoding, &mut memo.head);
    let mut tail_budget = budget / 2;
    if head_span.at < header {
      let tokens =
        *header_tokens.get_or_insert_with(|| count_tokens_uncached(&text[..header], encoding));
      if tokens < budget {
        head_span = Span { at: header, tokens: Some(tokens), window: None };
        tail_budget = budget - tokens;
      }
    }
    let tail_span = suffix_span(text, tail_budget, encoding, &mut memo.tail);
    // Cuts fall at line boundaries: the head ends after its last whole line (never before the
    // header), the tail starts at the start of its first whole line.
    // Blank lines beside the marker are left out: whether a budget had room for them or not,
    // a cut of the same lines is the same text (issue 44).
    let head_end = without_blank_end(text, line_end_before(text, head_span.at, header), header);
    let tail_start = without_blank_start(text, line_start_after(text, tail_span.at.max(head_end)));
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    // The text's own tokens in the head and the tail, as its windows tokenise it where a cut
    // falls at a piece start; counted apart without a tokenizer, elsewhere, or where the tail
    // would overlap the head. (A cut of a new size is made once: its texts are not worth a
    // place in the token cache.)
    let windowed = |window: Option<usize>, side: &WindowMemo, len: usize, at: usize| {
      window
        .filter(|_| encoding.splits_at_piece_starts() && starts_piece(text, at))
        .and_then(|w| side.tokens_within(w, len))
    };
    let head_tokens = if head_end == head_span.at {
      head_span.tokens
    } else {
      windowed(head_span.window, &memo.head, head_end, head_end)
    }
    .unwrap_or_else(|| count_tokens_uncached(head, encoding));
    let tail_in_place = tail_start == tail_span.at;
    let tail_tokens = match tail_span.tokens {
      Some(n) if tail_in_place => Some(n),
      _ if tail_start > head_end => {
        windowed(tail_span.window, &memo.tail, text.len() - tail_start, tail_start)
      }
      _ => None,
    }
    .unwrap_or_else(|| count_tokens_uncached(tail, encoding));
    let kept = head_tokens + tail_tokens;
    let cut_tokens = text_tokens.saturating_sub(kept) + beside;
    let marker = marker(cut_tokens);
    let out = format!("{head}{marker}{tail}");
    let joined = Join { text, head_end, tail_start, marker: &marker, encoding };
    let tail_window = tail_span.window.filter(|_| tail_in_place || starts_piece(text, tail_start));
    let tokens = joined
      .tokens(memo, head_span.window, tail_window)
      .unwrap_or_else(|| count_tokens_uncached(&out, encoding));
    if tokens <= max_tokens {
      return Some(Cut { text: out.into(), cut_tokens, original_tokens, tokens });
    }
    if budget == 0 {
      return None;
    }
    // Tokens can merge differently across the joins: give back what overflowed and retry.
    budget = budget.saturating_sub(tokens - max_tokens);
  }
}

/// The end of `text`'s first line (after its newline) when the line is worth keeping whole in a
/// cut to `budget` tokens: it has a newline, and is short enough that it could fit (at most
/// four bytes a token of the budget); else 0.
fn header_line(text: &str, budget: usize) -> usize {
  match text.find('\n') {
    Some(at) if at < budget.saturating_mul(4) => at + 1,
    _ => 0,
  }
}

/// The end of the last whole line of `text[..at]` (after its newline), if that is not before
/// `floor`; else `at` (a head within its first line, or one line, is left as the tokens end it).
fn line_end_before(text: &str, at: usize, floor: usize) -> usize {
  if at == text.len() || text[..at].ends_with('\n') {
    return at;
  }
  match text[..at].rfind('\n') {
    Some(nl) if nl + 1 >= floor => nl + 1,
    _ => at,
  }
}

/// `end`, before the blank lines that end `text[..end]` (each newline after another), not
/// before `floor` (nor its newline).
fn without_blank_end(text: &str, mut end: usize, floor: usize) -> usize {
  while end > floor.max(1) && text[..end].ends_with("\n\n") {
    end -= 1;
  }
  end
}

/// `start`, after the blank lines that start `text[start..]` (a line start).
fn without_blank_start(text: &str, mut start: usize) -> usize {
  while start < text.len()
    && text[start..].starts_with('\n')
    && (start == 0 || text[..start].ends_with('\n'))
  {
    start += 1;
  }
  start
}

/// The start of the first whole line of `text[at..]`, if it has one; else `at`.
fn line_start_after(text: &str, at: usize) -> usize {
  if at == 0 || text[..at].ends_with('\n') {
    return at;
  }
  match text[at..].find('\n') {
    Some(nl) if at + nl + 1 < text.len() => at + nl + 1,
    _ => at,
  }
}

/// Whether a piece of every encoding that splits at piece starts begins at `at`: the start of a
/// line that holds more than whitespace (a newline before it; after any indentation, a
/// character that is neither whitespace nor `/`, which the patterns may join to what precedes).
fn starts_piece(text: &str, at: usize) -> bool {
  if at == 0 || at >= text.len() || !text[..at].ends_with('\n') {
    return false;
  }
  let line = &text[at..];
  let first = line.trim_start_matches([' ', '\t']).chars().next();
  first.is_some_and(|c| !c.is_whitespace() && c != '/') && !line.starts_with(['\t'])
}

/// A cut's result: the head `text[..head_end]`, the marker and the tail `text[tail_start..]`.
struct Join<'t> {
  text: &'t str,
  head_end: usize,
  tail_start: usize,
  marker: &'t str,
  encoding: Encoding,
}

impl Join<'_> {
  /// The tokens of the result without tokenising all of it: the head's tokens before its last
  /// piece start and the tail's after its first ([`piece_starts`]) are the text's own, read
  /// from the windows `memo` holds (keys `head_window`, `tail_window`), and only what lies
  /// between is tokenised. Exact for the encodings that split at piece starts
  /// ([`Encoding::splits_at_piece_starts`]); `None` for the others, and where the head or the
  /// tail has no such piece start or the memo no such window (then the whole result is
  /// counted).
  fn tokens(
    &self,
    memo: &CutMemo,
    head_window: Option<usize>,
    tail_window: Option<usize>,
  ) -> Option<usize> {
    if !self.encoding.splits_at_piece_starts() {
      return None;
    }
    let text = self.text;
    let head_piece = piece_starts(text, 0, self.head_end).next_back()?;
    let tail_piece = piece_starts(text, self.tail_start, text.len()).next()?;
    let before = memo.head.tokens_within(head_window?, head_piece)?;
    let after = memo.tail.tokens_within(tail_window?, text.len() - tail_piece)?;
    let middle = format!(
      "{}{}{}",
      &text[head_piece..self.head_end],
      self.marker,
      &text[self.tail_start..tail_piece]
    );
    Some(before + count_tokens_uncached(&middle, self.encoding) + after)
  }
}

/// [`cut_middle`] of the content text of `m` (or, for a tool result whose text fits but whose
/// images and files do not, [`without_attachments`]; a cut text leaves them out too, and its
/// marker counts them), memoised in the message: the cut to
/// [`MIN_CUT_BUDGET`] (for the first encoding asked), the cut to the first other limit and
/// encoding asked, and a [`CutMemo`] for the others. A strategy that cuts the same old outputs
/// on every call of a growing conversation cuts each once, and one whose budget moves from call
/// to call tokenises little more than the words around each new cut's marker.
pub fn cut_content(m: &Message, max_tokens: usize, encoding: Encoding) -> Option<Cut> {
  let cut = || {
    let text = m.content_text();
    let mut memo = m.memo.cut_memo.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let attached = attachment_tokens(m);
    cut_middle_beside(&text, attached, max_tokens, encoding, &mut memo)
      .or_else(|| without_attachments(m, &text, max_tokens, encoding))
  };
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

/// [`cut_content`] that may go below [`MIN_CUT_BUDGET`], for the last resort of the priority
/// strategies: a `max_tokens` too small for the marker with any head and tail gives the marker
/// alone (`[... N tokens cut ...]`, N the whole content's tokens), the smallest a cut of the
/// message gets. `None` when no cut makes it smaller than that, or it fits `max_tokens` as it is.
pub fn cut_content_to_marker(m: &Message, max_tokens: usize, encoding: Encoding) -> Option<Cut> {
  if let Some(cut) = cut_content(m, max_tokens, encoding) {
    return Some(cut);
  }
  let original = count_tokens(&m.content_text(), encoding) + attachment_tokens(m);
  let floor = count_tokens(&marker(original), encoding);
  if max_tokens >= floor {
    return None;
  }
  cut_content(m, floor, encoding)
}

/// A message's text without its images and files (a screenshot's in a tool result, a user's
/// image part; each counted by its estimate), the marker at its end naming their tokens,
/// when that fits `max_tokens` and the text alone does not need cutting: what an agent keeps of
/// an old screenshot is what its tool said of it, and a budget between the text and the text
/// with its images keeps the text rather than nothing. `None` without attachments.
fn without_attachments(
  m: &Message,
  text: &str,
  max_tokens: usize,
  encoding: Encoding,
) -> Option<Cut> {
  let cut_tokens = attachment_tokens(m);
  if cut_tokens == 0 {
    return None;
  }
  let marker = marker(cut_tokens);
  let out = match text.is_empty() {
    true => marker.trim().to_string(),
    false => format!("{text}{}", marker.trim_end()),
  };
  let tokens = count_tokens_uncached(&out, encoding);
  let original_tokens = count_tokens(text, encoding) + cut_tokens;
  (tokens <= max_tokens).then(|| Cut { text: out.into(), cut_tokens, original_tokens, tokens })
}

/// The tokens of the images and files of a message (a tool result's attachments, a user's
/// image parts).
fn attachment_tokens(m: &Message) -> usize {
  let Content::Parts(parts) = &m.content else { return 0 };
  parts
    .iter()
    .map(|p| match p {
      Part::ToolResult { attachment_tokens, .. } => *attachment_tokens,
      Part::Attachment { tokens } => *tokens,
      _ => 0,
    })
    .sum()
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

  /// A cut keeps the line that names what was cut (the path of a file view, a command) whole,
  /// and cuts at line boundaries (issue 41: "Here's the result of running `cat -n` on /" lost
  /// its path).
  #[test]
  fn a_cut_keeps_its_header_line_and_whole_lines() {
    let header = "Here's the result of running `cat -n` on /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c:\n";
    let body: String = (1..=400)
      .map(|n| format!("{n:>6}\t  DEF(rule_{n}); TOKEN(\"x\", TK_X); DONE();\n"))
      .collect();
    let text = format!("{header}{body}");
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::Approximate] {
      for max in [60, 80, 120, 400, 1_000] {
        let cut = cut_middle(&text, max, encoding).expect("longer than the budget");
        assert!(
          cut.tokens <= max && count_tokens(&cut.text, encoding) <= max,
          "{encoding:?} {max}"
        );
        assert!(cut.text.starts_with(header), "{encoding:?} {max}: {}", &cut.text[..80]);
        let (head, tail) = cut.text.split_once(&marker(cut.cut_tokens)).expect("the marker");
        assert!(head.ends_with('\n') && text.starts_with(head), "{encoding:?} {max}");
        // (A tail too small for the last line with its indentation keeps the line without it.)
        let before_tail = text[..text.len() - tail.len()].trim_end_matches(' ');
        assert!(text.ends_with(tail) && before_tail.ends_with('\n'), "{encoding:?} {max}");
      }
    }
    // A first line too long for the budget is cut like any other text.
    let long = format!("{}\n{body}", "x".repeat(5_000));
    let cut = cut_middle(&long, 100, Encoding::O200kBase).expect("longer than the budget");
    assert!(cut.tokens <= 100 && cut.text.starts_with("xxxx"));
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

  /// A memo only saves work: cutting one text to many sizes, growing, shrinking and jumping, in
  /// three encodings in turn, with one memo, gives at every size the cut made without one.
  #[test]
  fn a_cut_is_the_same_whatever_the_memo_holds() {
    let text = format!("{}{}", log(800), "東京🚀naïve— end of the run\n".repeat(200));
    let mut memo = CutMemo::default();
    let sizes = [40, 41, 45, 300, 290, 2_000, 64, 65, 1_500, 33, 700, 701, 5_000];
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::Approximate] {
      for &max in &sizes {
        let with = cut_middle_memo(&text, max, encoding, &mut memo);
        assert_eq!(with, cut_middle(&text, max, encoding), "{encoding:?} {max}");
        let cut = with.expect("the text is longer than every size");
        assert!(count_tokens(&cut.text, encoding) <= max, "{encoding:?} {max}");
      }
    }
  }

  /// A cut's tokens, counted in part from the windows ([`Join::tokens`]), are those of its text,
  /// on every message of every shared transcript and on texts made to test the piece starts
  /// (slashes, carriage returns, tabs, Unicode spaces, punctuation and digits at line ends,
  /// contractions, spaces after each kind of character and before marks) and on random texts
  /// over what the patterns tell apart, in the encodings that split at piece starts, at many
  /// sizes.
  #[test]
  fn a_cut_counted_from_its_windows_counts_its_text() {
    let mut texts = crate::testing::transcript_texts(400);
    let lines = [
      "/usr/bin/env node",
      "  indented: yes",
      "\tTabbed\tcolumns",
      "it's done; they'll go",
      "x = 1;",
      "12345678",
      "//comment",
      "\u{3000}ideographic space",
      "\u{a0}nbsp",
      "done.\r",
      "é accent",
      "🚀 launch",
      "a/b/c",
      "   ",
      "",
      "-- end --",
      "<tag>",
      "'quoted'",
      "(paren)",
      "::",
      "word 's and 'LL then 't",
      "a  double  spaced   line",
      "x .y ,z !w /v",
      "trailing space ",
      "a 123 4567 89",
      "x \u{301}mark \u{301}",
      "nbsp\u{a0} space \u{3000} ideographic",
      "tab\t space \t",
      "{\"k\": [1, 2], \"v\": \"a b\"}",
    ];
    let mut made = String::new();
    for k in 0..600 {
      made.push_str(lines[k % lines.len()]);
      made.push_str(if k % 7 == 0 {
        "\r\n"
      } else if k % 11 == 0 {
        "\n\n"
      } else {
        "\n"
      });
    }
    texts.push(made);
    texts.push(log(300));
    // Random texts over an alphabet of what the patterns tell apart: letters of each case,
    // marks, digits, punctuation, slashes, apostrophes, every kind of space and line end.
    let alphabet: Vec<char> =
      "aZé\u{301}ǅʰ中7٣.,;:!?-_/\\'\"()[]{}<>#@ \t\r\n\n\n\u{a0}\u{3000}\u{2028}🚀"
        .chars()
        .collect();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..24 {
      let text: String = (0..2_000)
        .map(|_| {
          seed ^= seed << 13;
          seed ^= seed >> 7;
          seed ^= seed << 17;
          alphabet[(seed % alphabet.len() as u64) as usize]
        })
        .collect();
      texts.push(text);
    }
    let mut joined = 0;
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::O200kHarmony] {
      for text in &texts {
        let total = count_tokens(text, encoding);
        let mut memo = CutMemo::default();
        // Growing, then shrinking: windows made from the kept ones both ways.
        let sizes = [MIN_CUT_BUDGET, 40, 57, 100, 160, 333, 700, 130, 45];
        for max in sizes.into_iter().filter(|&m| m < total) {
          let cut = cut_middle_memo(text, max, encoding, &mut memo).expect("longer than the limit");
          assert_eq!(cut.tokens, count_tokens(&cut.text, encoding), "{encoding:?} {max}");
          // The marker counts exactly what the head and the tail leave out, and both fall at
          // line boundaries (unless the head is within the first line, the tail in the last).
          let (head, tail) = cut.text.split_once(&marker(cut.cut_tokens)).expect("the marker");
          let kept = count_tokens(head, encoding) + count_tokens(tail, encoding);
          assert_eq!(cut.cut_tokens, total - kept, "{encoding:?} {max}");
          assert!(head.ends_with('\n') || !head.contains('\n'), "{encoding:?} {max}: {head:?}");
          let before_tail = &text[..text.len() - tail.len()];
          let tail_body = tail.strip_suffix('\n').unwrap_or(tail);
          assert!(before_tail.ends_with('\n') || !tail_body.contains('\n'), "{encoding:?} {max}");
          joined += 1;
        }
      }
    }
    assert!(joined > 500, "{joined} cuts");
  }

  /// The windows answer the count of a cut of a single-line output (no line start: JSON, a
  /// log line) through its spaces, and of a text with line starts through those: only the
  /// words around the marker are tokenised. Without a space or line start near the marker the
  /// whole result is counted.
  #[test]
  fn the_windows_count_a_cut_at_its_spaces_and_line_starts() {
    let json = format!(
      "{{\"files\": [{}]}}",
      (0..400).map(|i| format!("\"src/f{i}.rs\"")).collect::<Vec<_>>().join(", ")
    );
    let lines = (0..400).map(|i| format!("line{i}")).collect::<Vec<_>>().join("\n");
    let solid = "x".repeat(4_000);
    for (text, windowed) in [(json.as_str(), true), (lines.as_str(), true), (solid.as_str(), false)]
    {
      let encoding = Encoding::O200kBase;
      let mut memo = CutMemo { encoding: Some(encoding), ..CutMemo::default() };
      let head = prefix_span(text, 50, encoding, &mut memo.head);
      let tail = suffix_span(text, 50, encoding, &mut memo.tail);
      let marker = marker(count_tokens(text, encoding));
      let join = Join { text, head_end: head.at, tail_start: tail.at, marker: &marker, encoding };
      let counted = join.tokens(&memo, head.window, tail.window);
      let whole = format!("{}{marker}{}", &text[..head.at], &text[tail.at..]);
      assert_eq!(counted.is_some(), windowed, "{}", &text[..20]);
      if let Some(n) = counted {
        assert_eq!(n, count_tokens(&whole, encoding), "{}", &text[..20]);
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

  /// A screenshot's result keeps its text and loses its image, whose tokens the marker names;
  /// without room for that, or without an attachment, nothing is cut.
  #[test]
  fn a_result_whose_text_fits_loses_its_images() {
    use crate::model::media::{ANTHROPIC_MAX_IMAGE_TOKENS as IMAGE, OPENAI_UNKNOWN_IMAGE_TOKENS};
    let e = Encoding::O200kBase;
    let shot = |text: &str| {
      let value = serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
        "content": [{"type": "text", "text": text}, {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]}]});
      crate::model::format::Format::Anthropic.parse_message(&value, 0).unwrap()
    };
    let cut = cut_content(&shot("clicked at 3"), 100, e).expect("a cut");
    assert_eq!(&*cut.text, "clicked at 3\n\n[... 1600 tokens cut ...]");
    assert_eq!((cut.cut_tokens, cut.tokens), (IMAGE, count_tokens(&cut.text, e)));
    assert_eq!(cut.original_tokens, count_tokens("clicked at 3", e) + IMAGE);
    assert_eq!(cut_content(&shot("clicked at 3"), 5, e), None);
    let plain = Message::text(crate::model::message::Role::Tool, "clicked at 3");
    assert_eq!(cut_content(&plain, 100, e), None);
    // A user's image part, the same way.
    let value = serde_json::json!({"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]});
    let user = crate::model::format::Format::OpenAi.parse_message(&value, 0).unwrap();
    assert_eq!(
      &*cut_content(&user, 100, e).expect("a cut").text,
      format!("look\n\n[... {OPENAI_UNKNOWN_IMAGE_TOKENS} tokens cut ...]")
    );
    // A text too long for the budget is cut, and the images it leaves out are counted in the
    // marker and the cut's tokens, as they are in the original's.
    let long = log(300);
    let cut = cut_content(&shot(&long), 100, e).expect("a cut");
    let text_only = cut_middle(&long, 100, e).expect("a cut of the text");
    assert_eq!(cut.original_tokens, text_only.original_tokens + IMAGE);
    assert_eq!(cut.cut_tokens, text_only.cut_tokens + IMAGE);
    assert!(cut.text.contains(&marker(cut.cut_tokens)), "{}", cut.text);
    assert!(cut.tokens <= 100 && cut.tokens == count_tokens(&cut.text, e));
  }

  #[test]
  fn text_that_fits_or_a_budget_below_the_marker_is_not_cut() {
    assert_eq!(cut_middle("short output", 32, Encoding::O200kBase), None);
    assert_eq!(cut_middle(&log(100), 3, Encoding::O200kBase), None);
  }
}
