//! UTF-16 to UTF-8 and back, fast on ASCII: how the addon moves a large string across the
//! JavaScript boundary.
//!
//! V8 copies a string's UTF-16 code units out (or into a new string) as a plain copy, while its
//! UTF-8 codec goes character by character, and napi's UTF-8 read measures the string in one
//! pass before copying it in another. A request body is mostly ASCII, so transcoding here, 16
//! units at a time where they are ASCII, is the cheaper way across (measured in
//! docs/history/benchmark-rounds.md, "Seventh round").

/// How many units (or bytes) are checked for ASCII at a time.
const CHUNK: usize = 16;

/// Appends `units` to `out` as UTF-8, each lone surrogate as U+FFFD (as V8's own UTF-8 does).
pub fn utf16_to_utf8(units: &[u16], out: &mut Vec<u8>) {
  out.reserve(units.len());
  let mut i = 0;
  while i < units.len() {
    if let Some(chunk) = units.get(i..i + CHUNK) {
      if chunk.iter().fold(0, |all, &u| all | u) < 0x80 {
        out.extend(chunk.iter().map(|&u| u as u8));
        i += CHUNK;
        continue;
      }
    }
    let unit = units[i];
    if unit < 0x80 {
      out.push(unit as u8);
      i += 1;
      continue;
    }
    let pair = units[i..].iter().take(2).copied();
    let (c, used) = match char::decode_utf16(pair).next() {
      Some(Ok(c)) => (c, c.len_utf16()),
      _ => (char::REPLACEMENT_CHARACTER, 1),
    };
    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    i += used;
  }
}

/// `units` as a `String`, made in `buf` (cleared, its allocation reused), each lone surrogate
/// as U+FFFD: [`utf16_to_utf8`] without checking its output again.
pub fn utf16_to_string(units: &[u16], mut buf: Vec<u8>) -> String {
  buf.clear();
  utf16_to_utf8(units, &mut buf);
  debug_assert!(std::str::from_utf8(&buf).is_ok());
  // SAFETY: `utf16_to_utf8` appends only bytes below 0x80 (each a whole UTF-8 sequence) and
  // whole `char::encode_utf8` encodings, so `buf`, emptied first, is a concatenation of valid
  // UTF-8 sequences, which is valid UTF-8.
  unsafe { String::from_utf8_unchecked(buf) }
}

/// Appends `text` to `out` as UTF-16 code units.
pub fn utf8_to_utf16(text: &str, out: &mut Vec<u16>) {
  let bytes = text.as_bytes();
  out.reserve(bytes.len());
  let mut i = 0;
  while i < bytes.len() {
    if let Some(chunk) = bytes.get(i..i + CHUNK) {
      if chunk.iter().fold(0, |all, &b| all | b) < 0x80 {
        out.extend(chunk.iter().map(|&b| u16::from(b)));
        i += CHUNK;
        continue;
      }
    }
    // `i` is on a character boundary: it only ever moves by whole ASCII chunks or characters.
    let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else { break };
    out.extend_from_slice(c.encode_utf16(&mut [0; 2]));
    i += c.len_utf8();
  }
}

#[cfg(test)]
mod tests {
  use super::*;
  use proptest::prelude::*;

  /// Code units, mostly ASCII (so that 16 in a row often are, but for one), of every other kind
  /// too: Latin-1, the rest of the plane, and surrogates, paired or not.
  fn units() -> impl Strategy<Value = Vec<u16>> {
    let unit = prop_oneof![
      12 => 0u16..0x80,
      1 => 0x80u16..0x100,
      1 => 0x100u16..0xd800,
      2 => 0xd800u16..0xe000,
      1 => 0xe000u16..=0xffff,
    ];
    proptest::collection::vec(unit, 0..300)
  }

  proptest! {
    /// Any code units (lone surrogates and all) read as the standard library decodes them,
    /// with U+FFFD for each lone surrogate; any text goes to the units it encodes to.
    #[test]
    fn any_units_and_any_text_cross_as_the_standard_library_has_them(
      units in units(),
      text in "[a-z ]{0,40}\\PC{0,3}[a-z]{0,20}\\PC{0,100}",
    ) {
      let std: String =
        char::decode_utf16(units.iter().copied()).map(|c| c.unwrap_or('\u{fffd}')).collect();
      prop_assert_eq!(to_utf8(&units), std);
      prop_assert_eq!(to_utf16(&text), text.encode_utf16().collect::<Vec<_>>());
    }
  }

  /// Through [`utf16_to_string`] with a buffer holding something already (it must be cleared),
  /// checked against [`utf16_to_utf8`]'s bytes, checked to be UTF-8.
  fn to_utf8(units: &[u16]) -> String {
    let mut bytes = Vec::new();
    utf16_to_utf8(units, &mut bytes);
    let checked = String::from_utf8(bytes).expect("valid UTF-8");
    let made = utf16_to_string(units, b"left over \xff".to_vec());
    assert_eq!(made, checked);
    made
  }

  fn to_utf16(text: &str) -> Vec<u16> {
    let mut out = Vec::new();
    utf8_to_utf16(text, &mut out);
    out
  }

  /// Texts with every kind of character on both sides of a chunk's edge.
  fn texts() -> Vec<String> {
    let pieces = ["a", "é", "€", "😀", "\u{7f}", "\u{80}", "\u{ffff}", "\u{10000}", "\n", "\0"];
    let mut texts = vec![String::new()];
    for (k, piece) in pieces.iter().enumerate() {
      for lead in [0, 1, 7, 14, 15, 16, 17, 31, 32] {
        let mut text = "x".repeat(lead);
        text.push_str(piece);
        text.push_str(&"y".repeat(k * 3));
        text.push_str(pieces[(k + 3) % pieces.len()]);
        texts.push(text);
      }
    }
    texts.push(pieces.concat().repeat(9));
    texts
  }

  #[test]
  fn text_goes_there_and_back_as_the_standard_library_has_it() {
    for text in texts() {
      let units: Vec<u16> = text.encode_utf16().collect();
      assert_eq!(to_utf16(&text), units, "{text:?}");
      assert_eq!(to_utf8(&units), text, "{text:?}");
    }
  }

  #[test]
  fn a_lone_surrogate_reads_as_the_replacement_character() {
    let high = 0xd83d;
    let low = 0xde00;
    for lead in [0, 15, 16, 20] {
      let mut units: Vec<u16> = "x".repeat(lead).encode_utf16().collect();
      let at = units.len();
      units.extend([high, u16::from(b'a'), low, low, high, high, low, high]);
      let expected = format!("{}\u{fffd}a\u{fffd}\u{fffd}\u{fffd}😀\u{fffd}", "x".repeat(lead));
      assert_eq!(to_utf8(&units), expected, "lead {lead}");
      let std: String =
        char::decode_utf16(units[at..].iter().copied()).map(|c| c.unwrap_or('\u{fffd}')).collect();
      assert_eq!(&to_utf8(&units)[lead..], std, "lead {lead}");
    }
  }
}
