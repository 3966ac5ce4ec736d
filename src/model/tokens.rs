//! Token counting: encodings, the model-to-encoding mapping, chat overheads and a bounded cache.
//!
//! Counts are exact for OpenAI encodings (tiktoken-rs singletons, never a `CoreBPE` built per
//! call). Long texts are remembered in a bounded process-wide cache keyed by a hash of their
//! bytes, so a history that grows by one message a turn is tokenised once, not every turn.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, OnceLock};

use tiktoken_rs::tokenizer::{get_tokenizer, Tokenizer};
use tiktoken_rs::CoreBPE;

use crate::error::{Error, Result};
use crate::model::generations::GenerationalMap;
use crate::model::message::{Content, Message, Part};

// Chat overheads, following the OpenAI cookbook "How to count tokens with tiktoken"
// (https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb)
// and tiktoken-rs `num_tokens_from_messages` (src/api.rs), which adds one token per tool call.

/// Tokens of framing around every message.
pub const TOKENS_PER_MESSAGE: usize = 3;
/// Extra tokens when a message has a `name`.
pub const TOKENS_PER_NAME: usize = 1;
/// Extra tokens per tool call (tiktoken-rs `FUNCTION_CALL_OVERHEAD`).
pub const TOKENS_PER_TOOL_CALL: usize = 1;
/// Tokens priming the reply, added once per request (`<|start|>assistant<|message|>`).
pub const REPLY_PRIMING: usize = 3;
/// Fixed estimate for a file whose content is not read (a PDF `document`, a `file` that is
/// neither an image nor audio): OpenAI's price of a 1024×1024 image at high detail (85 base + 4
/// tiles × 170), what every attachment counted before images were counted by their size (see
/// [`crate::model::media`]).
pub const FILE_PART_TOKENS: usize = 765;
/// Characters per token of the `approximate` encoding.
pub const APPROXIMATE_CHARS_PER_TOKEN: usize = 4;

/// The number of tokenizers, [`Encoding::base`] of every [`Encoding`].
pub const BASE_ENCODING_COUNT: usize = 6;
/// The number of [`Encoding`]s: each tokenizer with and without chat framing.
pub const ENCODING_COUNT: usize = 2 * BASE_ENCODING_COUNT;

/// The tokenizer tiktoken-rs's tables give `model`: in any case, and without its provider
/// prefix (everything up to the last `/`) when the whole name is unknown.
fn tokenizer_of(model: &str) -> Option<Tokenizer> {
  // Lower-cased only when it needs to be (the name is looked up on every call given it).
  let model: std::borrow::Cow<'_, str> = match model.bytes().any(|b| b.is_ascii_uppercase()) {
    true => model.to_lowercase().into(),
    false => model.into(),
  };
  get_tokenizer(&model).or_else(|| {
    let (_, name) = model.rsplit_once('/')?;
    get_tokenizer(name)
  })
}

/// A tokenizer encoding, and how messages are counted with it: with the chat framing of the
/// OpenAI cookbook (the first six, the default) or as their content, tool-call names and
/// arguments only (the `…Content` ones, the `framing: false` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
  /// `o200k_base`: gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4 (the default).
  #[default]
  O200kBase,
  /// `cl100k_base`: gpt-4, gpt-3.5-turbo, text-embedding-3.
  Cl100kBase,
  /// `o200k_harmony`: gpt-oss.
  O200kHarmony,
  /// `p50k_base`: legacy completion models.
  P50kBase,
  /// `r50k_base`: legacy GPT-3 models.
  R50kBase,
  /// A fast estimate of one token per four characters (Unicode scalar values), rounded up,
  /// for providers whose tokenizer is not public (Anthropic, Gemini…).
  Approximate,
  /// [`Encoding::O200kBase`] without framing.
  O200kBaseContent,
  /// [`Encoding::Cl100kBase`] without framing.
  Cl100kBaseContent,
  /// [`Encoding::O200kHarmony`] without framing.
  O200kHarmonyContent,
  /// [`Encoding::P50kBase`] without framing.
  P50kBaseContent,
  /// [`Encoding::R50kBase`] without framing.
  R50kBaseContent,
  /// [`Encoding::Approximate`] without framing: CursorClaw's `ceil(chars / 4)` per message.
  ApproximateContent,
}

impl Encoding {
  /// Parses an encoding name (`o200k_base`, `cl100k_base`, `o200k_harmony`, `p50k_base`,
  /// `r50k_base`, `approximate`).
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error naming `encoding` for any other name.
  pub fn parse(name: &str) -> Result<Encoding> {
    Ok(match name {
      "o200k_base" => Encoding::O200kBase,
      "cl100k_base" => Encoding::Cl100kBase,
      "o200k_harmony" => Encoding::O200kHarmony,
      "p50k_base" => Encoding::P50kBase,
      "r50k_base" => Encoding::R50kBase,
      "approximate" => Encoding::Approximate,
      other => {
        return Err(Error::option(
          "encoding",
          format!(
            "must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got {}",
            crate::model::message::quote(other)
          ),
        ))
      }
    })
  }

  /// Every encoding, in order.
  pub const ALL: [Encoding; ENCODING_COUNT] = [
    Encoding::O200kBase,
    Encoding::Cl100kBase,
    Encoding::O200kHarmony,
    Encoding::P50kBase,
    Encoding::R50kBase,
    Encoding::Approximate,
    Encoding::O200kBaseContent,
    Encoding::Cl100kBaseContent,
    Encoding::O200kHarmonyContent,
    Encoding::P50kBaseContent,
    Encoding::R50kBaseContent,
    Encoding::ApproximateContent,
  ];

  /// The encoding's name (that of its tokenizer).
  pub fn as_str(self) -> &'static str {
    match self.base() {
      Encoding::O200kBase => "o200k_base",
      Encoding::Cl100kBase => "cl100k_base",
      Encoding::O200kHarmony => "o200k_harmony",
      Encoding::P50kBase => "p50k_base",
      Encoding::R50kBase => "r50k_base",
      _ => "approximate",
    }
  }

  /// The tokenizer, counting with framing.
  pub fn base(self) -> Encoding {
    Encoding::ALL[self as usize % BASE_ENCODING_COUNT]
  }

  /// Whether messages are counted with the chat framing ([`TOKENS_PER_MESSAGE`], the role,
  /// [`TOKENS_PER_NAME`], [`TOKENS_PER_TOOL_CALL`] and [`REPLY_PRIMING`]).
  pub fn framed(self) -> bool {
    (self as usize) < BASE_ENCODING_COUNT
  }

  /// This tokenizer, with framing or without (the `framing` option; `None` keeps it).
  pub fn with_framing(self, framing: Option<bool>) -> Encoding {
    match framing {
      None => self,
      Some(true) => self.base(),
      Some(false) => Encoding::ALL[self.base() as usize + BASE_ENCODING_COUNT],
    }
  }

  /// The encoding a model uses: exact names then prefixes (tiktoken-rs tables, themselves kept
  /// in sync with OpenAI's tiktoken `model.py`), after stripping a `ft:` prefix. The name is
  /// compared in any case (`GPT-4` is `gpt-4`), and a provider prefix — everything up to the
  /// last `/`, as in OpenRouter's and LiteLLM's `openai/gpt-4`, `azure/gpt-4` or
  /// `openrouter/openai/gpt-4o` — is ignored when the whole name is not in the tables. Unknown
  /// models fall back to `o200k_base`, the encoding of every current OpenAI model (so does
  /// `anthropic/claude-…`, as `claude-…` does).
  pub fn for_model(model: &str) -> Encoding {
    match tokenizer_of(model) {
      Some(Tokenizer::Cl100kBase) => Encoding::Cl100kBase,
      Some(Tokenizer::O200kHarmony) => Encoding::O200kHarmony,
      Some(Tokenizer::P50kBase | Tokenizer::P50kEdit) => Encoding::P50kBase,
      Some(Tokenizer::R50kBase | Tokenizer::Gpt2) => Encoding::R50kBase,
      Some(Tokenizer::O200kBase) | None => Encoding::O200kBase,
    }
  }

  /// Whether tiktoken-rs's tables name `model` (looked up as [`Encoding::for_model`] does): an
  /// unknown one is counted with `o200k_base`.
  pub fn is_known_model(model: &str) -> bool {
    tokenizer_of(model).is_some()
  }

  /// Resolves the `model` and `encoding` options: `encoding` wins when both are given.
  ///
  /// # Errors
  ///
  /// An `InvalidOption` error when `encoding` names no known encoding.
  pub fn resolve(model: Option<&str>, encoding: Option<&str>) -> Result<Encoding> {
    match (encoding, model) {
      (Some(e), _) => Encoding::parse(e),
      (None, Some(m)) => Ok(Encoding::for_model(m)),
      (None, None) => Ok(Encoding::default()),
    }
  }

  /// [`Encoding::resolve`] with nanocoder's `providerName`: `encoding` still wins, and without
  /// it a provider whose name contains `openai`, or no provider (or an empty name), counts by
  /// `model`. A name containing `anthropic` or `claude` counts [`Encoding::Approximate`], and so
  /// does any other provider unless `model` names an OpenAI model (`gpt…`, `o1`, `o3`, `o4`):
  /// their tokenizers are not tiktoken's.
  ///
  /// # Errors
  ///
  /// As [`Encoding::resolve`].
  pub fn resolve_for_provider(
    provider: Option<&str>,
    model: Option<&str>,
    encoding: Option<&str>,
  ) -> Result<Encoding> {
    let provider = provider.map(str::to_lowercase).filter(|p| !p.is_empty());
    let Some(provider) = provider.filter(|_| encoding.is_none()) else {
      return Encoding::resolve(model, encoding);
    };
    let openai_model = model
      .map(str::to_lowercase)
      .is_some_and(|m| m.contains("gpt") || ["o1", "o3", "o4"].iter().any(|p| m.starts_with(p)));
    if provider.contains("openai")
      || (openai_model && !provider.contains("anthropic") && !provider.contains("claude"))
    {
      return Encoding::resolve(model, None);
    }
    Ok(Encoding::Approximate)
  }

  /// [`Encoding::resolve`] with the `framing` option where the counts already are in `fixed`
  /// (e.g. a window's): without `model`, `encoding` and `framing` that is the encoding; with
  /// them they must resolve to it.
  ///
  /// # Errors
  ///
  /// As [`Encoding::resolve`]; `INVALID_OPTION` on `encoding` when they resolve to another.
  pub fn resolve_within(
    model: Option<&str>,
    encoding: Option<&str>,
    framing: Option<bool>,
    fixed: Option<Encoding>,
  ) -> Result<Encoding> {
    let Some(fixed) = fixed else {
      return Ok(Encoding::resolve(model, encoding)?.with_framing(framing));
    };
    let framing = framing.or(Some(fixed.framed()));
    if model.is_none() && encoding.is_none() {
      return match fixed.with_framing(framing) {
        e if e == fixed => Ok(e),
        _ => Err(crate::error::Error::option(
          "framing",
          format!(
            "the window counts {} framing, set when it was created; leave framing out, or create the window with framing: {}",
            if fixed.framed() { "with" } else { "without" },
            !fixed.framed()
          ),
        )),
      };
    }
    match Encoding::resolve(model, encoding)?.with_framing(framing) {
      e if e == fixed => Ok(e),
      e => Err(crate::error::Error::option(
        "encoding",
        format!(
          "the window counts in {}, set when it was created, got {}; leave model and encoding out, or create the window with encoding '{}'",
          fixed.as_str(),
          e.as_str(),
          e.as_str()
        ),
      )),
    }
  }

  fn bpe(self) -> Option<&'static CoreBPE> {
    use tiktoken_rs::{
      cl100k_base_singleton, o200k_base_singleton, o200k_harmony_singleton, p50k_base_singleton,
      r50k_base_singleton,
    };
    match self.base() {
      Encoding::O200kBase => Some(o200k_base_singleton()),
      Encoding::Cl100kBase => Some(cl100k_base_singleton()),
      Encoding::O200kHarmony => Some(o200k_harmony_singleton()),
      Encoding::P50kBase => Some(p50k_base_singleton()),
      Encoding::R50kBase => Some(r50k_base_singleton()),
      _ => None,
    }
  }
}

/// Counts the tokens of `text` in `encoding`, treating special-token strings such as
/// `<|endoftext|>` as ordinary text (as the chat APIs do with user content).
pub fn count_tokens(text: &str, encoding: Encoding) -> usize {
  match encoding.bpe() {
    Some(bpe) if text.len() >= CACHE_MIN_BYTES => {
      let key = CacheKey::new(text, encoding.base());
      if let Some(n) = cache_get(key) {
        return n;
      }
      let n = count_in_pieces(bpe, text);
      cache_put(key, n);
      n
    }
    _ => count_tokens_uncached(text, encoding),
  }
}

impl Encoding {
  /// Whether the encoding's pre-tokenizer (the `o200k` and `cl100k` patterns) always starts a
  /// piece at these two places, whatever comes before and after, so that a text's pieces up to
  /// there are those of any text that begins with the same characters and the one there, and
  /// its pieces from there those of the text from there on:
  ///
  /// - **a line start**: after a newline, a character other than whitespace and `/`. No
  ///   pattern looks behind, and none runs past such a newline: letters and digits never
  ///   include one, punctuation takes the newlines after it and, in `o200k`, slashes, and
  ///   whitespace ends there. A run of whitespace ending with such a newline is one piece
  ///   whether the text ends there or goes on.
  /// - **a space after anything but whitespace**. A space can only open a piece (the optional
  ///   first character of a word or of punctuation) or be whitespace, and a whitespace piece
  ///   cannot hold the character before it. Deciding the pieces before it reads at most the
  ///   space itself: a run of letters, digits or punctuation ends there, the contraction
  ///   suffixes (`'s`…) need an apostrophe there, and the whitespace patterns before it end
  ///   at the non-whitespace character before it.
  ///
  /// The legacy `p50k`/`r50k` pattern splits a trailing run differently at the end of a text,
  /// so it is not one of them.
  pub(crate) fn splits_at_piece_starts(self) -> bool {
    matches!(self.base(), Encoding::O200kBase | Encoding::Cl100kBase | Encoding::O200kHarmony)
  }
}

/// [`count_tokens`] without the token cache: for a text counted once (a cut of a new size).
pub fn count_tokens_uncached(text: &str, encoding: Encoding) -> usize {
  match encoding.bpe() {
    _ if text.is_empty() => 0,
    None => text.chars().count().div_ceil(APPROXIMATE_CHARS_PER_TOKEN),
    Some(bpe) => count_in_pieces(bpe, text),
  }
}

/// Whitespace runs longer than this many bytes are counted in pieces of this size.
///
/// tiktoken-rs splits text with a backtracking regex (`\s+(?!\S)`) whose engine gives up on a
/// whitespace run of about a million characters, and tiktoken-rs then panics
/// (`RuntimeError(StackOverflow)`): one padded log line would make every call fail. Cutting such
/// a run counts at most one token more per piece than tiktoken would (a run of spaces is
/// tokenised in chunks of tens of characters either way); any other text is counted exactly.
pub const MAX_WHITESPACE_RUN: usize = 1 << 16;

/// Counts `text` with `bpe`, cutting whitespace runs longer than [`MAX_WHITESPACE_RUN`] bytes.
fn count_in_pieces(bpe: &CoreBPE, text: &str) -> usize {
  if text.len() <= MAX_WHITESPACE_RUN {
    return bpe.count_ordinary(text);
  }
  whitespace_pieces(text, MAX_WHITESPACE_RUN).map(|piece| bpe.count_ordinary(piece)).sum()
}

/// `text` cut after every `max` bytes of an unbroken whitespace run (at a character boundary),
/// and nowhere else: the pieces concatenate to `text`.
fn whitespace_pieces(text: &str, max: usize) -> impl Iterator<Item = &str> {
  let mut start = 0;
  let mut run_start = None;
  let mut cuts = text.char_indices().filter_map(move |(i, c)| {
    if !c.is_whitespace() {
      run_start = None;
      return None;
    }
    let end = i + c.len_utf8();
    if end - *run_start.get_or_insert(i) < max {
      return None;
    }
    run_start = None;
    Some(end)
  });
  std::iter::from_fn(move || {
    if start >= text.len() {
      return None;
    }
    let end = cuts.next().unwrap_or(text.len());
    let piece = &text[start..end];
    start = end;
    Some(piece)
  })
}

/// The byte length of the longest prefix of `text` made of at most `max_tokens` of its tokens,
/// ending on a character boundary (a token that ends inside a character is not taken).
///
/// Only a window at the start of `text` about as long as the tokens asked for is tokenised,
/// so the cost does not grow with the length of `text`. Tokens near the window's end are
/// those of the window, which can differ slightly from those of the whole text: count the
/// result when an exact bound matters. The windows are powers of two bytes long (at least 8
/// per token asked, doubled until they hold enough tokens), so the result depends on `text`
/// and `max_tokens` alone, and a [`WindowMemo`] answers every limit that falls in a
/// window it tokenised before without tokenising again.
pub fn prefix_within(text: &str, max_tokens: usize, encoding: Encoding) -> usize {
  prefix_span(text, max_tokens, encoding, &mut WindowMemo::default()).at
}

/// Where a [`prefix_span`] or [`suffix_span`] ends or starts, and what its window says of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
  /// The prefix's end, or the suffix's start.
  pub at: usize,
  /// How many of the window's tokens the span holds whole (`None` without a tokenizer).
  pub tokens: Option<usize>,
  /// The window's key in its [`WindowMemo`] (`None` without one).
  pub window: Option<usize>,
}

/// [`prefix_within`] that keeps the windows it tokenises in `memo` (which must only ever see
/// `text` in `encoding`), with how many of the window's tokens the prefix holds whole.
pub(crate) fn prefix_span(
  text: &str,
  max_tokens: usize,
  encoding: Encoding,
  memo: &mut WindowMemo,
) -> Span {
  if max_tokens == 0 {
    return Span { at: 0, tokens: Some(0), window: None };
  }
  let Some(bpe) = encoding.bpe() else {
    let chars = max_tokens.saturating_mul(APPROXIMATE_CHARS_PER_TOKEN);
    let at = text.char_indices().nth(chars).map_or(text.len(), |(at, _)| at);
    return Span { at, tokens: None, window: None };
  };
  let mut window = first_window(max_tokens);
  loop {
    let end = floor_char_boundary(text, window.min(text.len()));
    let ends = memo.get_or_tokenise(end, |kept| head_window(text, end, encoding, bpe, kept));
    if end == text.len() && ends.len() <= max_tokens {
      return Span { at: text.len(), tokens: Some(ends.len()), window: Some(end) };
    }
    if end == text.len() || ends.len() > max_tokens + WINDOW_MARGIN_TOKENS {
      let at = floor_char_boundary(text, taken_bytes(&ends[..max_tokens]));
      return Span { at, tokens: Some(whole_within(&ends[..max_tokens], at)), window: Some(end) };
    }
    window = window.saturating_mul(2);
  }
}

/// The byte offset where the longest suffix of `text` made of at most `max_tokens` of its
/// tokens starts, on a character boundary. The mirror of [`prefix_within`], with the same
/// windows and the same caveat.
pub fn suffix_within(text: &str, max_tokens: usize, encoding: Encoding) -> usize {
  suffix_span(text, max_tokens, encoding, &mut WindowMemo::default()).at
}

/// [`suffix_within`] with a memo, and how many of the window's tokens the suffix holds whole,
/// as [`prefix_span`].
pub(crate) fn suffix_span(
  text: &str,
  max_tokens: usize,
  encoding: Encoding,
  memo: &mut WindowMemo,
) -> Span {
  if max_tokens == 0 {
    return Span { at: text.len(), tokens: Some(0), window: None };
  }
  let Some(bpe) = encoding.bpe() else {
    let chars = max_tokens.saturating_mul(APPROXIMATE_CHARS_PER_TOKEN);
    let at = text.char_indices().rev().nth(chars - 1).map_or(0, |(at, _)| at);
    return Span { at, tokens: None, window: None };
  };
  let mut window = first_window(max_tokens);
  loop {
    let start = ceil_char_boundary(text, text.len().saturating_sub(window));
    let ends = memo.get_or_tokenise(start, |kept| tail_window(text, start, encoding, bpe, kept));
    if start == 0 && ends.len() <= max_tokens {
      return Span { at: 0, tokens: Some(ends.len()), window: Some(start) };
    }
    if start == 0 || ends.len() > max_tokens + WINDOW_MARGIN_TOKENS {
      let len = taken_bytes(&ends[..max_tokens]);
      let at = ceil_char_boundary(text, text.len().saturating_sub(len));
      let tokens = whole_within(&ends[..max_tokens], text.len() - at);
      return Span { at, tokens: Some(tokens), window: Some(start) };
    }
    window = window.saturating_mul(2);
  }
}

/// The token lengths of the head window `text[..end]`. A kept head window (`kept`, keyed by
/// where each ends) shares its tokens with this one up to the last piece start they share
/// ([`piece_starts`]), in the encodings that split there: those are taken from it, and only the
/// rest is tokenised. A budget that moves from call to call asks for windows that differ by a
/// power of two, so this tokenises about half of a grown window and a few words of a shrunk one.
fn head_window(
  text: &str,
  end: usize,
  encoding: Encoding,
  bpe: &CoreBPE,
  kept: &[(usize, Box<[u16]>)],
) -> Box<[u16]> {
  let reused = encoding.splits_at_piece_starts().then(|| {
    let (shared, lengths) = kept.iter().map(|(k, l)| ((*k).min(end), l)).max_by_key(|(s, _)| *s)?;
    let from = piece_starts(text, 0, shared).next_back()?;
    let count = tokens_spanning(lengths.iter(), from)?;
    Some((from, &lengths[..count]))
  });
  let (from, before) = reused.flatten().unwrap_or((0, &[]));
  let lengths = lengths_after(before, encoding, bpe, &bpe.encode_ordinary(&text[from..end]));
  debug_assert_eq!(
    lengths,
    token_lengths(encoding, bpe, &bpe.encode_ordinary(&text[..end])),
    "head window {end} from {from}"
  );
  lengths
}

/// The token lengths of the tail window `text[start..]`, from its end: [`head_window`]'s
/// mirror, taking a kept tail window's tokens after the first piece start they share.
fn tail_window(
  text: &str,
  start: usize,
  encoding: Encoding,
  bpe: &CoreBPE,
  kept: &[(usize, Box<[u16]>)],
) -> Box<[u16]> {
  let reused = encoding.splits_at_piece_starts().then(|| {
    let (shared, lengths) =
      kept.iter().map(|(k, l)| ((*k).max(start), l)).min_by_key(|(s, _)| *s)?;
    let from = piece_starts(text, shared, text.len()).next()?;
    let count = tokens_spanning(lengths.iter(), text.len() - from)?;
    Some((from, &lengths[..count]))
  });
  let (to, after) = reused.flatten().unwrap_or((text.len(), &[]));
  let mut tokens = bpe.encode_ordinary(&text[start..to]);
  tokens.reverse();
  let lengths = lengths_after(after, encoding, bpe, &tokens);
  debug_assert_eq!(
    lengths,
    {
      let mut all = bpe.encode_ordinary(&text[start..]);
      all.reverse();
      token_lengths(encoding, bpe, &all)
    },
    "tail window {start} to {to}"
  );
  lengths
}

/// How many of the tokens whose byte lengths are `lengths` span exactly `len` bytes; `None`
/// when no run of them does (`len` inside a token).
fn tokens_spanning<'a>(lengths: impl Iterator<Item = &'a u16>, len: usize) -> Option<usize> {
  let mut sum = 0;
  let mut count = 0;
  for &l in lengths {
    if sum >= len {
      break;
    }
    sum += usize::from(l);
    count += 1;
  }
  (sum == len).then_some(count)
}

/// The offsets in `text[from..to]` where every encoding that [splits at piece
/// starts](Encoding::splits_at_piece_starts) starts a piece, with the character before each
/// also in that range: line starts (a newline before, and at the offset a character other than
/// whitespace and `/`) and spaces after anything but whitespace.
pub(crate) fn piece_starts(
  text: &str,
  from: usize,
  to: usize,
) -> impl DoubleEndedIterator<Item = usize> + '_ {
  let range = &text[from..to];
  range.char_indices().filter_map(move |(i, c)| {
    let before = range[..i].chars().next_back()?;
    let line_start = before == '\n' && !c.is_whitespace() && c != '/';
    let space = c == ' ' && !before.is_whitespace();
    (line_start || space).then_some(from + i)
  })
}

/// The byte length of the tokens whose lengths are `lengths`.
fn taken_bytes(lengths: &[u16]) -> usize {
  lengths.iter().map(|&l| usize::from(l)).sum()
}

/// How many of the tokens whose byte lengths are `lengths`, in order, fit whole in `len` bytes.
fn whole_within(lengths: &[u16], len: usize) -> usize {
  let mut sum = 0;
  lengths
    .iter()
    .take_while(|&&l| {
      sum += usize::from(l);
      sum <= len
    })
    .count()
}

/// The windows the crate's cuts tokenised for one text (one
/// memo per side): for each, keyed by where it ends (or starts), the byte length of each of its
/// tokens, from its start (or end). It holds the last [`MEMO_WINDOWS`] windows of at most
/// [`MEMO_WINDOW_BYTES`] bytes: two bytes a token, about half a byte per byte of text.
#[derive(Debug, Default, Clone)]
pub struct WindowMemo {
  windows: Vec<(usize, Box<[u16]>)>,
}

/// How many windows a [`WindowMemo`] keeps: a budget that moves a little from call to call
/// asks for the same window or the next.
pub const MEMO_WINDOWS: usize = 2;
/// The longest window a [`WindowMemo`] keeps, in bytes (a longer one is tokenised every time).
pub const MEMO_WINDOW_BYTES: usize = 1 << 20;

impl WindowMemo {
  /// How many tokens of the kept window keyed `window` fit whole in its first (prefix memo) or
  /// last (suffix memo) `len` bytes; `None` when the memo does not hold it.
  pub(crate) fn tokens_within(&self, window: usize, len: usize) -> Option<usize> {
    let (_, lengths) = self.windows.iter().find(|(k, _)| *k == window)?;
    Some(whole_within(lengths, len))
  }

  /// The token lengths of the window keyed `key`: kept ones from the memo, a new one from
  /// `tokenise`, given the windows kept (and kept, unless longer than [`MEMO_WINDOW_BYTES`]).
  fn get_or_tokenise(
    &mut self,
    key: usize,
    tokenise: impl FnOnce(&[(usize, Box<[u16]>)]) -> Box<[u16]>,
  ) -> std::borrow::Cow<'_, [u16]> {
    if let Some(at) = self.windows.iter().position(|(k, _)| *k == key) {
      return std::borrow::Cow::Borrowed(&self.windows[at].1);
    }
    let lengths = tokenise(&self.windows);
    if taken_bytes(&lengths) > MEMO_WINDOW_BYTES {
      return std::borrow::Cow::Owned(lengths.into_vec());
    }
    if self.windows.len() >= MEMO_WINDOWS {
      self.windows.remove(0);
    }
    self.windows.push((key, lengths));
    std::borrow::Cow::Borrowed(&self.windows[self.windows.len() - 1].1)
  }
}

/// The byte length of each of `tokens`, ranks of `encoding`'s tokenizer `bpe`.
fn token_lengths(encoding: Encoding, bpe: &CoreBPE, tokens: &[tiktoken_rs::Rank]) -> Box<[u16]> {
  lengths_after(&[], encoding, bpe, tokens)
}

/// `before`, then the byte length of each of `tokens`, in one allocation of the exact size (so
/// that the boxed slice is that allocation, not a copy).
fn lengths_after(
  before: &[u16],
  encoding: Encoding,
  bpe: &CoreBPE,
  tokens: &[tiktoken_rs::Rank],
) -> Box<[u16]> {
  let known = token_length_table(encoding);
  let mut out = Vec::with_capacity(before.len() + tokens.len());
  out.extend_from_slice(before);
  out.extend(tokens.iter().map(|&t| {
    let slot = usize::try_from(t).ok().and_then(|r| known.get(r));
    match slot.map(|s| s.load(Ordering::Relaxed)) {
      Some(len) if len != 0 => len,
      _ => {
        let len = u16::try_from(token_len(bpe, t)).unwrap_or(u16::MAX);
        if let Some(slot) = slot {
          slot.store(len, Ordering::Relaxed);
        }
        len
      }
    }
  }));
  out.into()
}

/// Ranks below this have their byte length kept in [`token_length_table`]: every rank of the
/// five tokenizers (`o200k_base` has about 200,000).
const TOKEN_LENGTH_TABLE_RANKS: usize = 1 << 18;

/// The byte length of each rank of `encoding`'s tokenizer, learnt as windows are tokenised (0:
/// not yet decoded; no token is empty), so that measuring a window's tokens does not decode each
/// one (a map look-up and an allocation) every time. 512 KiB per tokenizer used, made on its
/// first window; a length stored by one thread and not yet seen by another is decoded again, to
/// the same value.
fn token_length_table(encoding: Encoding) -> &'static [AtomicU16] {
  static TABLES: [OnceLock<Box<[AtomicU16]>>; BASE_ENCODING_COUNT] =
    [const { OnceLock::new() }; BASE_ENCODING_COUNT];
  match TABLES.get(encoding.base() as usize) {
    Some(table) => {
      table.get_or_init(|| (0..TOKEN_LENGTH_TABLE_RANKS).map(|_| AtomicU16::new(0)).collect())
    }
    None => &[],
  }
}

/// The first window [`prefix_within`] tokenises for `max_tokens`: a power of two bytes, at
/// least [`WINDOW_BYTES_PER_TOKEN`] per token and 64.
fn first_window(max_tokens: usize) -> usize {
  let least = max_tokens.saturating_mul(WINDOW_BYTES_PER_TOKEN).max(64);
  least.checked_next_power_of_two().unwrap_or(least)
}

/// The first window tokenised by [`prefix_within`]/[`suffix_within`], in bytes per token asked
/// for (about what a token of code or English takes); the window doubles until it holds enough
/// tokens, and a doubled window tokenises only its new half ([`head_window`]). 4 rather than 8:
/// the 1,000-message bench session's agent loop tokenised 0.51 MB of windows instead of 0.71 MB,
/// with the same cuts.
const WINDOW_BYTES_PER_TOKEN: usize = 4;
/// Tokens beyond the ones asked for that a window must hold, so that the tokens taken are not
/// the ones cut short by the window's edge.
const WINDOW_MARGIN_TOKENS: usize = 4;

fn token_len(bpe: &CoreBPE, token: tiktoken_rs::Rank) -> usize {
  // A token just produced by the encoder always decodes.
  bpe.decode_bytes(&[token]).map_or(0, |b| b.len())
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
  at = at.min(text.len());
  while !text.is_char_boundary(at) {
    at -= 1;
  }
  at
}

fn ceil_char_boundary(text: &str, mut at: usize) -> usize {
  while at < text.len() && !text.is_char_boundary(at) {
    at += 1;
  }
  at.min(text.len())
}

/// The tokens of one message: content, name, tool-call names and arguments, tool-call ids
/// answered, plus [`TOKENS_PER_MESSAGE`] (and [`TOKENS_PER_NAME`], [`TOKENS_PER_TOOL_CALL`]).
/// Excludes the once-per-request [`REPLY_PRIMING`].
pub fn message_tokens(message: &Message, encoding: Encoding) -> usize {
  let slot = &message.memo.tokens[encoding as usize];
  *slot.get_or_init(|| u32::try_from(count_message(message, encoding)).unwrap_or(u32::MAX)) as usize
}

fn count_message(message: &Message, encoding: Encoding) -> usize {
  if !encoding.framed() {
    let calls = message.tool_calls.iter();
    return message_content_tokens(message, encoding)
      + calls
        .map(|c| count_tokens(&c.name, encoding) + count_tokens(&c.arguments, encoding))
        .sum::<usize>();
  }
  let mut n = TOKENS_PER_MESSAGE + role_tokens(message.role, encoding);
  n += content_tokens(&message.content, encoding);
  if let Some(name) = &message.name {
    n += count_tokens(name, encoding) + TOKENS_PER_NAME;
  }
  for call in &message.tool_calls {
    n += count_tokens(&call.name, encoding)
      + count_tokens(&call.arguments, encoding)
      + TOKENS_PER_TOOL_CALL;
  }
  n
}

/// The tokens of a role's name (1 in every encoding), counted once per encoding, when a message
/// is first counted in it: counting every encoding's at once would load all five tokenizers
/// (about a second, and their tables' memory) in a process that uses one.
fn role_tokens(role: crate::model::message::Role, encoding: Encoding) -> usize {
  use crate::model::message::Role;
  static TABLES: [OnceLock<[usize; Role::ALL.len()]>; ENCODING_COUNT] =
    [const { OnceLock::new() }; ENCODING_COUNT];
  let r = Role::ALL.iter().position(|x| *x == role).unwrap_or(0);
  match TABLES.get(encoding as usize) {
    Some(table) => {
      table.get_or_init(|| Role::ALL.map(|role| count_tokens(role.as_str(), encoding)))[r]
    }
    None => count_tokens(role.as_str(), encoding),
  }
}

/// The tokens of a content value: text is counted, each attachment is its estimate.
pub fn content_tokens(content: &Content, encoding: Encoding) -> usize {
  match content {
    Content::Empty => 0,
    Content::Text(t) => count_tokens(t, encoding),
    Content::Parts(parts) => parts.iter().map(|p| part_tokens(p, encoding)).sum(),
  }
}

/// The tokens of one content part: its text, and the estimate of an attachment (an image,
/// audio, a file; see [`crate::model::media`]) and of a tool result's attachments.
pub fn part_tokens(part: &Part, encoding: Encoding) -> usize {
  match part {
    Part::Text(t) => count_tokens(t, encoding),
    Part::ToolResult { content, attachment_tokens, .. } => {
      count_tokens(content, encoding) + attachment_tokens
    }
    Part::Attachment { tokens } => *tokens,
    Part::Other { text: Some(t), .. } => count_tokens(t, encoding),
    Part::Other { text: None, .. } | Part::Approval { .. } => 0,
  }
}

/// [`content_tokens`] of a message's content, computed once per encoding (memoised in the
/// message, like [`message_tokens`]).
pub fn message_content_tokens(message: &Message, encoding: Encoding) -> usize {
  let slot = &message.memo.content_tokens[encoding.base() as usize];
  *slot
    .get_or_init(|| u32::try_from(content_tokens(&message.content, encoding)).unwrap_or(u32::MAX))
    as usize
}

/// The tokens of a whole request: every message plus [`reply_priming`] (zero for no
/// messages).
pub fn conversation_tokens(messages: &[Message], encoding: Encoding) -> usize {
  if messages.is_empty() {
    return 0;
  }
  messages.iter().map(|m| message_tokens(m, encoding)).sum::<usize>() + reply_priming(encoding)
}

/// The tokens a request adds once to its messages: [`REPLY_PRIMING`] with framing, none
/// without.
pub fn reply_priming(encoding: Encoding) -> usize {
  match encoding.framed() {
    true => REPLY_PRIMING,
    false => 0,
  }
}

// ---------------------------------------------------------------------------------------------
// The cache.

/// Texts shorter than this are counted directly: hashing them would cost about as much.
/// (Measured: tiktoken-rs costs about a microsecond per call even on a few bytes, a hash and a
/// lookup tens of nanoseconds.)
const CACHE_MIN_BYTES: usize = 16;
/// Default bound on the number of cached counts (about 24 bytes each).
pub const DEFAULT_CACHE_CAPACITY: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CacheKey {
  hash: u64,
  len: usize,
  encoding: Encoding,
}

impl CacheKey {
  fn new(text: &str, encoding: Encoding) -> Self {
    // SipHash with fixed keys: deterministic across runs and resistant to accidental collisions;
    // the length is part of the key too.
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    CacheKey { hash: h.finish(), len: text.len(), encoding }
  }
}

/// The counts, with hit and miss tallies. Evicts by generation (see [`crate::model::generations`]):
/// memory stays within `capacity` entries and every operation is O(1).
struct TokenCache {
  counts: GenerationalMap<CacheKey, u32, std::hash::RandomState>,
  hits: u64,
  misses: u64,
}

static CACHE: Mutex<Option<TokenCache>> = Mutex::new(None);

fn with_cache<R>(f: impl FnOnce(&mut TokenCache) -> R) -> R {
  // A poisoned lock only means another thread panicked while holding it; the maps are still
  // consistent (every mutation is a single insert or swap), so recover the guard.
  let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
  let cache = guard.get_or_insert_with(|| TokenCache {
    counts: GenerationalMap::new(DEFAULT_CACHE_CAPACITY, usize::MAX),
    hits: 0,
    misses: 0,
  });
  f(cache)
}

fn cache_get(key: CacheKey) -> Option<usize> {
  with_cache(|c| match c.counts.get(&key) {
    Some(n) => {
      c.hits += 1;
      Some(n as usize)
    }
    None => {
      c.misses += 1;
      None
    }
  })
}

fn cache_put(key: CacheKey, n: usize) {
  with_cache(|c| c.counts.insert(key, u32::try_from(n).unwrap_or(u32::MAX), 0));
}

/// Statistics of the token-count cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
  /// Counts currently held.
  pub entries: usize,
  /// The bound on `entries`.
  pub capacity: usize,
  /// Lookups answered from the cache since the last reset.
  pub hits: u64,
  /// Lookups that had to tokenise since the last reset.
  pub misses: u64,
}

/// The cache's current statistics.
pub fn cache_stats() -> CacheStats {
  with_cache(|c| CacheStats {
    entries: c.counts.len(),
    capacity: c.counts.max_entries(),
    hits: c.hits,
    misses: c.misses,
  })
}

/// Sets the cache's bound (0 disables caching) and empties it.
pub fn set_cache_capacity(capacity: usize) {
  with_cache(|c| {
    c.counts.reset(capacity, usize::MAX);
    c.hits = 0;
    c.misses = 0;
  });
}

#[cfg(test)]
mod tests {
  use super::*;

  /// A window made from a kept one (its tokens up to the last piece start they share, and the
  /// rest tokenised) holds the tokens of its text tokenised whole, head and tail, growing,
  /// shrinking and jumping, on every long transcript text and on lines of every kind.
  #[test]
  fn windows_made_from_kept_ones_are_their_texts_tokens() {
    let mut texts = crate::testing::transcript_texts(2_000);
    texts.push("x = 1;\n\tTabbed\r\n'quoted' a  b //c\n東京 🚀 naïve\u{3000}x\n".repeat(300));
    texts.push(format!(
      "{{\"k\": [{}]}}",
      (0..600).map(|i| format!("\"v{i}\"")).collect::<Vec<_>>().join(", ")
    ));
    let mut made = 0;
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::O200kHarmony] {
      let bpe = encoding.bpe().unwrap();
      for text in &texts {
        let (mut head, mut tail) = (WindowMemo::default(), WindowMemo::default());
        for max in [20, 70, 300, 1_000, 90, 2_500, 40, 600] {
          let (h, t) = (
            prefix_span(text, max, encoding, &mut head),
            suffix_span(text, max, encoding, &mut tail),
          );
          let (Some(end), Some(start)) = (h.window, t.window) else { continue };
          let kept = |memo: &WindowMemo, key| {
            memo.windows.iter().find(|(k, _)| *k == key).map(|(_, l)| l.to_vec())
          };
          let whole = token_lengths(encoding, bpe, &bpe.encode_ordinary(&text[..end]));
          assert_eq!(kept(&head, end).as_deref(), Some(&*whole), "{encoding:?} head {max}");
          let mut tokens = bpe.encode_ordinary(&text[start..]);
          tokens.reverse();
          let whole = token_lengths(encoding, bpe, &tokens);
          assert_eq!(kept(&tail, start).as_deref(), Some(&*whole), "{encoding:?} tail {max}");
          made += 1;
        }
      }
    }
    assert!(made > 100, "{made} windows");
  }

  #[test]
  fn a_window_memo_keeps_its_last_windows_under_its_byte_bound() {
    let mut memo = WindowMemo::default();
    let mut made = 0;
    let mut tokenise = |lengths: Vec<u16>| {
      made += 1;
      move |_: &[(usize, Box<[u16]>)]| lengths.into_boxed_slice()
    };
    // Over the bound (a window of a text cut at 130,000 tokens and more): answered, not kept.
    let large = vec![u16::MAX; MEMO_WINDOW_BYTES / usize::from(u16::MAX) + 1];
    assert!(taken_bytes(&large) > MEMO_WINDOW_BYTES);
    assert_eq!(memo.get_or_tokenise(1, tokenise(large.clone())).len(), large.len());
    assert_eq!(memo.tokens_within(1, usize::MAX), None);
    // Under it: kept, the last MEMO_WINDOWS of them, and answered without tokenising again.
    for key in 2..2 + MEMO_WINDOWS + 1 {
      assert_eq!(memo.get_or_tokenise(key, tokenise(vec![3; key])).len(), key);
    }
    assert_eq!(memo.tokens_within(2, usize::MAX), None, "the oldest window gave way");
    for key in 3..2 + MEMO_WINDOWS + 1 {
      assert_eq!(memo.tokens_within(key, 7), Some(2));
      assert_eq!(memo.get_or_tokenise(key, |_| unreachable!("kept")).len(), key);
    }
    assert_eq!(made, 1 + MEMO_WINDOWS + 1);
  }

  #[test]
  fn without_framing_a_message_is_its_content_and_calls() {
    let mut m = Message::text(crate::model::message::Role::Assistant, "x".repeat(401));
    m.name = Some("bob".into());
    m.tool_calls.push(crate::model::message::ToolCall {
      id: "call_1".into(),
      name: "read_file".into(),
      arguments: r#"{"path":"a.ts"}"#.into(),
    });
    let bare = Encoding::Approximate.with_framing(Some(false));
    assert_eq!(bare, Encoding::ApproximateContent);
    assert_eq!(
      (bare.base(), bare.as_str(), bare.framed()),
      (Encoding::Approximate, "approximate", false)
    );
    // ceil(401 / 4) + ceil(9 / 4) + ceil(15 / 4): no framing, role, name or per-call token.
    assert_eq!(message_tokens(&m, bare), 101 + 3 + 4);
    // Framed: 3 + the role (3) + the content + the name (1 + 1) + the call (3 + 4 + 1).
    assert_eq!(message_tokens(&m, Encoding::Approximate), 3 + 3 + 101 + 2 + 8);
    assert_eq!(conversation_tokens(std::slice::from_ref(&m), bare), 108);
    assert_eq!(
      conversation_tokens(std::slice::from_ref(&m), Encoding::Approximate),
      117 + REPLY_PRIMING
    );
    for e in Encoding::ALL {
      assert_eq!(e.with_framing(Some(true)), e.base());
      assert_eq!(e.with_framing(None), e);
      assert_eq!(e.with_framing(Some(false)).base(), e.base());
    }
  }

  #[test]
  fn a_provider_picks_the_encoding_unless_one_is_given() {
    let r = |p: Option<&str>, m: Option<&str>, e: Option<&str>| {
      Encoding::resolve_for_provider(p, m, e).map_err(|e| e.to_string())
    };
    assert_eq!(r(None, Some("gpt-4"), None), Ok(Encoding::Cl100kBase));
    assert_eq!(r(Some(""), None, None), Ok(Encoding::O200kBase));
    assert_eq!(r(Some("OpenAI"), Some("gpt-4"), None), Ok(Encoding::Cl100kBase));
    assert_eq!(
      r(Some("anthropic"), Some("claude-3-5-sonnet-20241022"), None),
      Ok(Encoding::Approximate)
    );
    assert_eq!(r(Some("ollama"), Some("llama3.1"), None), Ok(Encoding::Approximate));
    assert_eq!(r(Some("openrouter"), Some("gpt-4o"), None), Ok(Encoding::O200kBase));
    assert_eq!(r(Some("anthropic"), Some("gpt-4o"), None), Ok(Encoding::Approximate));
    assert_eq!(r(Some("anthropic"), None, Some("cl100k_base")), Ok(Encoding::Cl100kBase));
  }
  use crate::model::message::{Role, ToolCall};

  #[test]
  fn counts_match_tiktoken_reference_values() {
    // Reference values from OpenAI's tiktoken (Python) 0.9.
    assert_eq!(count_tokens("hello world", Encoding::O200kBase), 2);
    assert_eq!(count_tokens("hello world", Encoding::Cl100kBase), 2);
    assert_eq!(count_tokens("tiktoken is great!", Encoding::Cl100kBase), 6);
    assert_eq!(count_tokens("", Encoding::O200kBase), 0);
    // Special-token text is ordinary text.
    assert_eq!(count_tokens("<|endoftext|>", Encoding::Cl100kBase), 7);
  }

  #[test]
  fn a_whitespace_run_of_a_million_is_counted_instead_of_panicking() {
    // tiktoken-rs panics on such a run (found by the hostile-input suite): cut, it counts.
    let run = " ".repeat(1_100_000);
    let piece = count_tokens(&" ".repeat(MAX_WHITESPACE_RUN), Encoding::O200kBase);
    let full = run.len() / MAX_WHITESPACE_RUN;
    let n = count_tokens(&format!("a{run}b"), Encoding::O200kBase);
    assert!(
      n >= full * piece && n <= (full + 1) * (piece + 1) + 2,
      "{n} for {full} pieces of {piece}"
    );
  }

  #[test]
  fn only_long_whitespace_runs_are_cut() {
    let pieces = |text, max| whitespace_pieces(text, max).collect::<Vec<_>>();
    assert_eq!(pieces("ab          cd", 4), vec!["ab    ", "    ", "  cd"]);
    assert_eq!(pieces("a\u{3000}\u{3000}b", 6), vec!["a\u{3000}\u{3000}", "b"]);
    assert_eq!(pieces("a b c d   e", 4), vec!["a b c d   e"]);
    assert_eq!(pieces("    ", 4), vec!["    "]);
    assert!(pieces("", 4).is_empty());
    // Text whose whitespace runs are short is one piece, counted exactly.
    let long = "word ".repeat(20_000);
    assert_eq!(pieces(&long, MAX_WHITESPACE_RUN), vec![long.as_str()]);
    assert_eq!(
      count_tokens(&long, Encoding::O200kBase),
      tiktoken_rs::o200k_base_singleton().count_ordinary(&long)
    );
  }

  #[test]
  fn approximate_is_chars_over_four_rounded_up() {
    assert_eq!(count_tokens("abcd", Encoding::Approximate), 1);
    assert_eq!(count_tokens("abcde", Encoding::Approximate), 2);
    assert_eq!(count_tokens("日本語", Encoding::Approximate), 1);
  }

  #[test]
  fn model_mapping_exact_prefix_and_fallback() {
    for (model, enc) in [
      ("gpt-4o", Encoding::O200kBase),
      ("gpt-4o-2024-05-13", Encoding::O200kBase),
      ("gpt-4.1-mini", Encoding::O200kBase),
      ("gpt-5", Encoding::O200kBase),
      ("o3-mini", Encoding::O200kBase),
      ("gpt-4", Encoding::Cl100kBase),
      ("gpt-4-0613", Encoding::Cl100kBase),
      ("gpt-3.5-turbo", Encoding::Cl100kBase),
      ("ft:gpt-3.5-turbo:acme::abc", Encoding::Cl100kBase),
      ("gpt-oss-120b", Encoding::O200kHarmony),
      ("claude-sonnet-4", Encoding::O200kBase),
      ("", Encoding::O200kBase),
    ] {
      assert_eq!(Encoding::for_model(model), enc, "{model}");
    }
  }

  #[test]
  fn model_mapping_ignores_case_and_a_provider_prefix() {
    for (model, enc) in [
      ("GPT-4", Encoding::Cl100kBase),
      ("Gpt-4-0613", Encoding::Cl100kBase),
      ("GPT-4o", Encoding::O200kBase),
      ("openai/gpt-4", Encoding::Cl100kBase),
      ("azure/gpt-4", Encoding::Cl100kBase),
      ("azure/gpt-35-turbo", Encoding::Cl100kBase),
      ("OpenAI/GPT-3.5-Turbo", Encoding::Cl100kBase),
      ("openrouter/openai/gpt-4o", Encoding::O200kBase),
      ("openrouter/openai/gpt-4", Encoding::Cl100kBase),
      ("groq/openai/gpt-oss-120b", Encoding::O200kHarmony),
      ("openai/ft:gpt-3.5-turbo:acme::abc", Encoding::Cl100kBase),
      ("FT:GPT-3.5-TURBO:acme::abc", Encoding::Cl100kBase),
      ("openai/text-davinci-003", Encoding::P50kBase),
      ("openai/davinci", Encoding::R50kBase),
      // A provider prefix maps as the name after it does: `claude-…` falls back.
      ("anthropic/claude-sonnet-4", Encoding::O200kBase),
      ("openai/", Encoding::O200kBase),
      ("openai/gpt-9000", Encoding::O200kBase),
    ] {
      assert_eq!(Encoding::for_model(model), enc, "{model}");
      // The prefix-free name maps as it does.
      let bare = model.rsplit('/').next().unwrap().to_lowercase();
      assert_eq!(Encoding::for_model(&bare), enc, "{bare}");
    }
    // Known: what the tables name, in any case, with or without a provider prefix; not a name
    // that only falls back to o200k_base.
    for known in ["GPT-4o", "openrouter/openai/gpt-4", "FT:GPT-3.5-TURBO:acme::abc"] {
      assert!(Encoding::is_known_model(known), "{known}");
    }
    for unknown in ["anthropic/claude-sonnet-4", "openai/", "gpt-9000", ""] {
      assert!(!Encoding::is_known_model(unknown), "{unknown}");
    }
  }

  #[test]
  fn resolve_prefers_encoding_and_rejects_unknown_names() {
    assert_eq!(Encoding::resolve(Some("gpt-4"), Some("o200k_base")).unwrap(), Encoding::O200kBase);
    assert_eq!(Encoding::resolve(Some("gpt-4"), None).unwrap(), Encoding::Cl100kBase);
    assert_eq!(
      Encoding::resolve(None, Some("bogus")).unwrap_err().to_string(),
      "encoding: must be one of o200k_base, cl100k_base, o200k_harmony, p50k_base, r50k_base, approximate, got \"bogus\""
    );
  }

  #[test]
  fn message_overheads_follow_the_cookbook() {
    let e = Encoding::O200kBase;
    let m = Message::text(Role::User, "hello world");
    // 3 framing + "user" (1) + "hello world" (2)
    assert_eq!(message_tokens(&m, e), 6);
    let mut named = m.clone();
    named.name = Some("bob".into());
    assert_eq!(message_tokens(&named, e), 6 + 1 + 1);
    let mut call = Message::text(Role::Assistant, "");
    call.content = Content::Empty;
    call.tool_calls.push(ToolCall { id: "c1".into(), name: "ls".into(), arguments: "{}".into() });
    // 3 + "assistant" (1) + "ls" (1) + "{}" (1) + 1 per call
    assert_eq!(message_tokens(&call, e), 7);
    assert_eq!(conversation_tokens(&[m.clone(), call], e), 6 + 7 + REPLY_PRIMING);
    assert_eq!(conversation_tokens(&[], e), 0);
    let mut img = m.clone();
    img.content =
      Content::Parts(vec![Part::Text("hello world".into()), Part::Attachment { tokens: 765 }]);
    assert_eq!(message_tokens(&img, e), 6 + 765);
  }

  #[test]
  fn prefixes_and_suffixes_within_a_token_budget() {
    let text = "fn main() { println!(\"héllo 東京 🚀\"); }\n".repeat(200);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::Approximate] {
      let total = count_tokens(&text, encoding);
      for n in [0, 1, 7, 50, 333, total, total + 10] {
        let head = &text[..prefix_within(&text, n, encoding)];
        let tail = &text[suffix_within(&text, n, encoding)..];
        assert!(count_tokens(head, encoding) <= n, "{encoding:?} head {n}");
        assert!(count_tokens(tail, encoding) <= n, "{encoding:?} tail {n}");
        if n >= total {
          assert_eq!((head, tail), (text.as_str(), text.as_str()));
        }
        // Close to the budget, not just under it.
        if (50..total).contains(&n) {
          assert!(count_tokens(head, encoding) + 8 >= n, "{encoding:?} head {n}");
          assert!(count_tokens(tail, encoding) + 8 >= n, "{encoding:?} tail {n}");
        }
      }
    }
    assert_eq!(prefix_within("abcdefgh", 1, Encoding::Approximate), 4);
    assert_eq!(suffix_within("abcdefghij", 2, Encoding::Approximate), 2);
  }

  #[test]
  fn token_lengths_learnt_in_the_table_are_the_decoded_ones() {
    let text = "fn main() { println!(\"héllo 東京 🚀\"); }\n\t  x".repeat(20);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::P50kBase] {
      let bpe = encoding.bpe().unwrap();
      let tokens = bpe.encode_ordinary(&text);
      let decoded: Vec<u16> =
        tokens.iter().map(|&t| bpe.decode_bytes(&[t]).unwrap().len() as u16).collect();
      // Once learning the lengths, once reading them back.
      for _ in 0..2 {
        assert_eq!(&*token_lengths(encoding, bpe, &tokens), decoded.as_slice(), "{encoding:?}");
      }
      assert_eq!(decoded.iter().map(|&n| n as usize).sum::<usize>(), text.len());
    }
  }

  #[test]
  fn long_texts_are_cached_and_counted_identically() {
    let text = "fn main() { println!(\"hi\"); }\n".repeat(50);
    let first = count_tokens(&text, Encoding::O200kBase);
    let before = cache_stats();
    let second = count_tokens(&text, Encoding::O200kBase);
    let after = cache_stats();
    assert_eq!(first, second);
    assert_eq!(first, Encoding::O200kBase.bpe().map(|b| b.count_ordinary(&text)).unwrap_or(0));
    assert!(after.hits > before.hits);
  }
}
