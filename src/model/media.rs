//! Attachments counted by what their bytes say: an image by the pixel size in its header (PNG,
//! JPEG, GIF, WebP) through its provider's published formula, audio by its duration.
//!
//! Only the head of the data is read: the readers keep the first [`MEDIA_HEAD`] characters of
//! a base64 string or data URL (and its full length), and the header is decoded from that, so
//! an image is never decoded whole. Malformed data, a URL or a file id (whose bytes are not in
//! the request) falls back to a documented constant. Nothing here can panic on input.
//!
//! Sources (see docs/formats.md#counting-images-audio-files-and-unknown-parts):
//! - Anthropic, "Vision", calculate image costs: `tokens = width × height / 750`, an image
//!   whose long edge is over 1568 px or which is over about 1,600 tokens is first scaled down
//!   (<https://docs.anthropic.com/en/docs/build-with-claude/vision>).
//! - OpenAI, "Images and vision", calculating costs: `detail: 'low'` is 85 tokens; otherwise the
//!   image is fitted in 2048 × 2048, then scaled so its shortest side is 768 px, and costs 170
//!   per 512-px tile plus 85 (<https://platform.openai.com/docs/guides/images-vision>).
//! - OpenAI, Realtime and audio models: user audio is 1 token per 100 ms
//!   (<https://platform.openai.com/docs/guides/realtime-costs>).
//! - Google, Gemini token counting: audio is 32 tokens per second
//!   (<https://ai.google.dev/gemini-api/docs/tokens>).

use serde_json::{Map, Value};

/// How many characters of a base64 string or data URL the readers keep (64 KiB): the header
/// of any PNG, GIF or WebP, and of a JPEG whose metadata before its frame header is under
/// about 48 KiB.
pub const MEDIA_HEAD: usize = 65_536;
/// The suffix of the key under which the readers put the full length (UTF-16 code units) of a
/// media string they kept [`MEDIA_HEAD`] characters of (`data#len` beside `data`).
pub const LENGTH_SUFFIX: &str = "#len";

/// OpenAI: an image at `detail: 'low'`.
pub const OPENAI_LOW_DETAIL_TOKENS: usize = 85;
/// OpenAI: the base of an image at high detail.
pub const OPENAI_BASE_TOKENS: usize = 85;
/// OpenAI: each 512-px tile of an image at high detail.
pub const OPENAI_TILE_TOKENS: usize = 170;
/// OpenAI: an image of unknown size at high or auto detail, the most any image costs (fitted
/// in 2048 × 2048 with its shortest side at 768 px, it has at most 4 × 2 tiles: 85 + 8 × 170).
pub const OPENAI_UNKNOWN_IMAGE_TOKENS: usize = OPENAI_BASE_TOKENS + 8 * OPENAI_TILE_TOKENS;
/// Anthropic: pixels per token.
pub const ANTHROPIC_PIXELS_PER_TOKEN: u64 = 750;
/// Anthropic: the longest edge an image keeps; a longer one is scaled down to it.
pub const ANTHROPIC_MAX_EDGE: u64 = 1568;
/// Anthropic: the most an image costs (a larger one is scaled down to about this), and what an
/// image of unknown size counts.
pub const ANTHROPIC_MAX_IMAGE_TOKENS: usize = 1600;
/// Audio tokens per second of user audio, OpenAI (1 token per 100 ms).
pub const OPENAI_AUDIO_TOKENS_PER_SECOND: u64 = 10;
/// Audio tokens per second, Gemini: what audio counts in the AI SDK format, whose provider is
/// not known (the highest published rate).
pub const GEMINI_AUDIO_TOKENS_PER_SECOND: u64 = 32;
/// Bytes per second of a WAV file whose header cannot be read: 16-bit mono PCM at 16 kHz, the
/// lowest rate commonly used for speech (so that such audio is never under-counted).
pub const WAV_FALLBACK_BYTES_PER_SECOND: u64 = 32_000;
/// Bytes per second of compressed audio whose bitrate cannot be read (128 kbps, the default of
/// common MP3 encoders).
pub const COMPRESSED_FALLBACK_BYTES_PER_SECOND: u64 = 16_000;

/// Whose formula counts an image or audio: the provider a format is sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
  /// OpenAI (the OpenAI format).
  OpenAi,
  /// Anthropic (the Anthropic format).
  Anthropic,
  /// Unknown (the AI SDK format, sent to the provider its model names): the larger of the
  /// estimates.
  Any,
}

impl Provider {
  /// The provider of a format.
  pub fn of(format: crate::model::format::Format) -> Provider {
    use crate::model::format::Format;
    match format {
      Format::OpenAi => Provider::OpenAi,
      Format::Anthropic => Provider::Anthropic,
      Format::AiSdk => Provider::Any,
    }
  }
}

/// OpenAI's `detail` of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
  /// `low`: a fixed 85 tokens.
  Low,
  /// `high` or `auto` (counted as high, the larger) or absent.
  High,
}

impl Detail {
  /// The detail an image part's fields ask for: `detail: 'low'` (on the part or in its
  /// `image_url` object), else high.
  pub fn of(fields: &Map<String, Value>) -> Detail {
    let nested = fields.get("image_url").and_then(|v| v.get("detail"));
    match fields.get("detail").or(nested).and_then(Value::as_str) {
      Some("low") => Detail::Low,
      _ => Detail::High,
    }
  }
}

/// The tokens of an image of `size` (width, height) in pixels, `None` when unknown.
pub fn image_tokens(size: Option<(u32, u32)>, detail: Detail, provider: Provider) -> usize {
  let openai = || match (detail, size) {
    (Detail::Low, _) => OPENAI_LOW_DETAIL_TOKENS,
    (Detail::High, Some((w, h))) => openai_image_tokens(w, h),
    (Detail::High, None) => OPENAI_UNKNOWN_IMAGE_TOKENS,
  };
  let anthropic = || size.map_or(ANTHROPIC_MAX_IMAGE_TOKENS, |(w, h)| anthropic_image_tokens(w, h));
  match provider {
    Provider::OpenAi => openai(),
    Provider::Anthropic => anthropic(),
    Provider::Any => openai().max(anthropic()),
  }
}

/// OpenAI's high-detail tokens of a `w` × `h` image: fitted in 2048 × 2048, then scaled down so
/// that its shortest side is 768 px (pixel sizes rounded down), 170 per 512-px tile plus 85.
pub fn openai_image_tokens(w: u32, h: u32) -> usize {
  let (mut w, mut h) = (u64::from(w.max(1)), u64::from(h.max(1)));
  let long = w.max(h);
  if long > 2048 {
    (w, h) = ((w * 2048 / long).max(1), (h * 2048 / long).max(1));
  }
  let short = w.min(h);
  if short > 768 {
    (w, h) = ((w * 768 / short).max(1), (h * 768 / short).max(1));
  }
  let tiles = w.div_ceil(512) * h.div_ceil(512);
  OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles as usize
}

/// Anthropic's tokens of a `w` × `h` image: scaled down so that its long edge is at most 1568
/// px (pixel sizes rounded down), `w × h / 750` rounded up, at most
/// [`ANTHROPIC_MAX_IMAGE_TOKENS`] (a larger image is scaled down to about that).
pub fn anthropic_image_tokens(w: u32, h: u32) -> usize {
  let (mut w, mut h) = (u64::from(w.max(1)), u64::from(h.max(1)));
  let long = w.max(h);
  if long > ANTHROPIC_MAX_EDGE {
    (w, h) = ((w * ANTHROPIC_MAX_EDGE / long).max(1), (h * ANTHROPIC_MAX_EDGE / long).max(1));
  }
  let tokens = (w * h).div_ceil(ANTHROPIC_PIXELS_PER_TOKEN);
  usize::try_from(tokens).unwrap_or(usize::MAX).min(ANTHROPIC_MAX_IMAGE_TOKENS)
}

/// A media string as a reader kept it: its text (whole, or its first [`MEDIA_HEAD`]
/// characters) and its full length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded<'a> {
  /// The string, or its head.
  pub text: &'a str,
  /// The full string's length.
  pub len: usize,
}

impl<'a> Encoded<'a> {
  /// The media string under `key` of `fields`, with its full length from `key#len` when a
  /// reader shortened it.
  pub fn field(fields: &'a Map<String, Value>, key: &str) -> Option<Encoded<'a>> {
    let text = fields.get(key)?.as_str()?;
    let len = fields
      .get(&format!("{key}{LENGTH_SUFFIX}"))
      .and_then(Value::as_u64)
      .and_then(|n| usize::try_from(n).ok())
      .unwrap_or(text.len())
      .max(text.len());
    Some(Encoded { text, len })
  }

  /// The base64 payload: of a `data:…;base64,` URL, or the whole string when it is neither a
  /// URL nor a file reference. `None` for a URL (`http:`, `https:`, `gs:`, …), a data URL that
  /// is not base64, or an empty string. The media type of a data URL comes with it.
  pub fn payload(self) -> Option<Payload<'a>> {
    if let Some(rest) = self.text.strip_prefix("data:") {
      let comma = rest.find(',')?;
      let header = &rest[..comma];
      let media_type = header.split(';').next().filter(|t| !t.is_empty());
      if !header.split(';').any(|p| p.eq_ignore_ascii_case("base64")) {
        return None;
      }
      let start = "data:".len() + comma + 1;
      return Some(Payload {
        head: &self.text[start..],
        len: self.len.saturating_sub(start),
        media_type,
      });
    }
    let looks_like_url = self
      .text
      .find("://")
      .is_some_and(|i| i > 0 && self.text[..i].bytes().all(|b| b.is_ascii_alphanumeric()));
    if looks_like_url || self.text.is_empty() {
      return None;
    }
    Some(Payload { head: self.text, len: self.len, media_type: None })
  }
}

/// Base64 data: its head and the full base64 length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload<'a> {
  /// The first characters of the base64 text.
  pub head: &'a str,
  /// The base64 text's full length in characters.
  pub len: usize,
  /// The media type a data URL names (`image/png`), if any.
  pub media_type: Option<&'a str>,
}

impl Payload<'_> {
  /// The bytes of the head, decoded.
  pub fn head_bytes(&self) -> Vec<u8> {
    decode_base64_head(self.head, MEDIA_HEAD)
  }

  /// The decoded size of the whole data, in bytes (padding ignored).
  pub fn bytes(&self) -> u64 {
    self.len as u64 * 3 / 4
  }
}

/// Encodes `bytes` as standard base64, padded.
pub fn encode_base64(bytes: &[u8]) -> String {
  const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
  for chunk in bytes.chunks(3) {
    let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
    for i in 0..=chunk.len() {
      out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
    }
    for _ in chunk.len()..3 {
      out.push('=');
    }
  }
  out
}

/// Decodes base64 (standard or URL-safe alphabet) from the start of `text` until its end, the
/// first character outside the alphabet (padding, a line break), or `max_chars` characters,
/// whichever comes first; a trailing partial group is decoded as far as it goes.
pub fn decode_base64_head(text: &str, max_chars: usize) -> Vec<u8> {
  fn value(c: u8) -> Option<u32> {
    match c {
      b'A'..=b'Z' => Some(u32::from(c - b'A')),
      b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
      b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
      b'+' | b'-' => Some(62),
      b'/' | b'_' => Some(63),
      _ => None,
    }
  }
  let mut out = Vec::with_capacity(text.len().min(max_chars) / 4 * 3 + 3);
  let (mut acc, mut bits) = (0u32, 0u32);
  for &c in text.as_bytes().iter().take(max_chars) {
    let Some(v) = value(c) else { break };
    acc = (acc << 6) | v;
    bits += 6;
    if bits >= 8 {
      bits -= 8;
      out.push((acc >> bits) as u8);
      acc &= (1 << bits) - 1;
    }
  }
  out
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
  Some(u32::from(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
  Some(u32::from(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
  Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
  let s = b.get(at..at + 3)?;
  Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
  Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The pixel size (width, height) in the header of a PNG, JPEG, GIF or WebP image, from its
/// first bytes; `None` when they are none of these, or too short or malformed to say.
pub fn image_size(b: &[u8]) -> Option<(u32, u32)> {
  let size = if b.starts_with(b"\x89PNG\r\n\x1a\n") {
    (b.get(12..16)? == b"IHDR").then_some(())?;
    (be32(b, 16)?, be32(b, 20)?)
  } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
    (le16(b, 6)?, le16(b, 8)?)
  } else if b.starts_with(b"\xff\xd8") {
    jpeg_size(b)?
  } else if b.starts_with(b"RIFF") && b.get(8..12)? == b"WEBP" {
    webp_size(b)?
  } else {
    return None;
  };
  (size.0 > 0 && size.1 > 0).then_some(size)
}

/// A JPEG's size, from its first frame header (`SOFn`), walking the segments before it by their
/// lengths.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
  let mut i = 2;
  loop {
    if *b.get(i)? != 0xff {
      return None;
    }
    // Fill bytes before a marker.
    while *b.get(i + 1)? == 0xff {
      i += 1;
    }
    let marker = *b.get(i + 1)?;
    match marker {
      // Frame headers: SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC).
      0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
        return Some((be16(b, i + 7)?, be16(b, i + 5)?));
      }
      // Markers without a length: TEM, RSTn, SOI.
      0x01 | 0xd0..=0xd8 => i += 2,
      // The image data or its end before any frame header.
      0xd9 | 0xda => return None,
      _ => i += 2 + usize::try_from(be16(b, i + 2)?).ok()?,
    }
  }
}

/// A WebP's size, from its first chunk: lossy (`VP8 `), lossless (`VP8L`) or extended (`VP8X`).
fn webp_size(b: &[u8]) -> Option<(u32, u32)> {
  match b.get(12..16)? {
    b"VP8 " => {
      (b.get(23..26)? == [0x9d, 0x01, 0x2a]).then_some(())?;
      Some((le16(b, 26)? & 0x3fff, le16(b, 28)? & 0x3fff))
    }
    b"VP8L" => {
      (*b.get(20)? == 0x2f).then_some(())?;
      let bits = le32(b, 21)?;
      Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
    }
    b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
    _ => None,
  }
}

/// The tokens of an image given as a media string (`None`: no data, e.g. a part without one):
/// its size read from the data's header, or unknown (a URL, a file id, unreadable data).
pub fn encoded_image_tokens(
  data: Option<Encoded<'_>>,
  detail: Detail,
  provider: Provider,
) -> usize {
  let size = data.and_then(Encoded::payload).and_then(|p| image_size(&p.head_bytes()));
  image_tokens(size, detail, provider)
}

/// An audio container, as a format hint names it (`wav`, `mp3`, `audio/mpeg`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
  /// WAV (PCM): its byte rate is in its header.
  Wav,
  /// MP3: its bitrate is in its first frame header.
  Mp3,
  /// Anything else (compressed, rate unknown).
  Other,
}

impl AudioFormat {
  /// The format a hint names: an OpenAI `format` (`wav`, `mp3`) or a media type
  /// (`audio/wav`, `audio/mpeg`).
  pub fn of(hint: Option<&str>) -> AudioFormat {
    let hint = hint.unwrap_or("").to_ascii_lowercase();
    let hint = hint.strip_prefix("audio/").unwrap_or(&hint);
    match hint {
      "wav" | "wave" | "x-wav" | "vnd.wave" | "pcm" | "l16" => AudioFormat::Wav,
      "mp3" | "mpeg" | "mpeg3" | "x-mp3" | "x-mpeg" => AudioFormat::Mp3,
      _ => AudioFormat::Other,
    }
  }
}

/// The bytes per second of audio whose first bytes are `head`: read from a WAV header or an MP3
/// frame header (after an ID3 tag that fits the head), else the fallback of `format`.
pub fn audio_bytes_per_second(head: &[u8], format: AudioFormat) -> u64 {
  if let Some(rate) = wav_byte_rate(head).or_else(|| mp3_byte_rate(head)) {
    return rate;
  }
  match format {
    AudioFormat::Wav => WAV_FALLBACK_BYTES_PER_SECOND,
    AudioFormat::Mp3 | AudioFormat::Other => COMPRESSED_FALLBACK_BYTES_PER_SECOND,
  }
}

/// The byte rate of a WAV file's `fmt ` chunk (the first chunk after `RIFF…WAVE`).
fn wav_byte_rate(b: &[u8]) -> Option<u64> {
  (b.starts_with(b"RIFF") && b.get(8..12)? == b"WAVE" && b.get(12..16)? == b"fmt ").then_some(())?;
  let rate = u64::from(le32(b, 28)?);
  (rate > 0).then_some(rate)
}

/// The byte rate of an MP3's first frame (MPEG audio layer III), after an ID3v2 tag.
fn mp3_byte_rate(b: &[u8]) -> Option<u64> {
  let mut i = 0usize;
  if b.starts_with(b"ID3") {
    // A syncsafe size: four bytes of seven bits; a footer adds ten bytes.
    let size = b.get(6..10)?.iter().fold(0usize, |n, &x| (n << 7) | usize::from(x & 0x7f));
    let footer = if b.get(5)? & 0x10 != 0 { 10 } else { 0 };
    i = 10 + size + footer;
  }
  let h = be32(b, i)?;
  if h >> 21 != 0x7ff || (h >> 17) & 3 != 1 {
    return None;
  }
  const MPEG1: [u64; 15] = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
  const MPEG2: [u64; 15] = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
  let index = ((h >> 12) & 0xf) as usize;
  let kbps = match (h >> 19) & 3 {
    3 => MPEG1.get(index)?,
    0 | 2 => MPEG2.get(index)?,
    _ => return None,
  };
  (*kbps > 0).then_some(kbps * 1000 / 8)
}

/// The tokens of audio given as a media string, in `format` (a hint): its duration (its size
/// over its byte rate, [`audio_bytes_per_second`]) at the provider's rate per second, rounded up.
/// Audio without data (a URL, a file id) counts as a second.
pub fn encoded_audio_tokens(
  data: Option<Encoded<'_>>,
  format: Option<&str>,
  provider: Provider,
) -> usize {
  let per_second = match provider {
    Provider::OpenAi | Provider::Anthropic => OPENAI_AUDIO_TOKENS_PER_SECOND,
    Provider::Any => GEMINI_AUDIO_TOKENS_PER_SECOND,
  };
  let Some(payload) = data.and_then(Encoded::payload) else {
    return per_second as usize;
  };
  let format = AudioFormat::of(format.or(payload.media_type));
  let rate = audio_bytes_per_second(&payload.head_bytes(), format);
  usize::try_from((payload.bytes() * per_second).div_ceil(rate)).unwrap_or(usize::MAX)
}

/// What an attachment part is, from its media type (`image/png`, `audio/wav`, `application/pdf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
  /// An image.
  Image,
  /// Audio.
  Audio,
  /// Any other file (a PDF): counted as [`crate::model::tokens::FILE_PART_TOKENS`].
  File,
}

impl Kind {
  /// The kind a media type names; `None` when there is none.
  pub fn of_media_type(media_type: Option<&str>) -> Option<Kind> {
    let t = media_type?.trim().to_ascii_lowercase();
    Some(if t.starts_with("image/") {
      Kind::Image
    } else if t.starts_with("audio/") {
      Kind::Audio
    } else {
      Kind::File
    })
  }
}

#[cfg(test)]
pub(crate) mod tests {
  use super::*;
  use serde_json::json;

  pub(crate) fn base64(bytes: &[u8]) -> String {
    encode_base64(bytes)
  }

  /// Tiny hand-made headers of each format, `w` × `h`.
  pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend(w.to_be_bytes());
    b.extend(h.to_be_bytes());
    b.extend([8, 6, 0, 0, 0]);
    b
  }

  fn gif(w: u16, h: u16) -> Vec<u8> {
    let mut b = b"GIF89a".to_vec();
    b.extend(w.to_le_bytes());
    b.extend(h.to_le_bytes());
    b
  }

  fn jpeg(w: u16, h: u16, exif: usize) -> Vec<u8> {
    let mut b = vec![0xff, 0xd8];
    // APP0 (JFIF), then an APP1 of `exif` bytes, a DQT, then SOF0.
    b.extend([0xff, 0xe0, 0, 16]);
    b.extend(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    let app1 = u16::try_from(exif + 2).unwrap();
    b.extend([0xff, 0xe1]);
    b.extend(app1.to_be_bytes());
    b.extend(std::iter::repeat_n(0x42, exif));
    b.extend([0xff, 0xdb, 0, 3, 0]);
    b.extend([0xff, 0xff, 0xc0, 0, 17, 8]);
    b.extend(h.to_be_bytes());
    b.extend(w.to_be_bytes());
    b.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    b
  }

  fn webp(chunk: &[u8; 4], w: u32, h: u32) -> Vec<u8> {
    let mut b = b"RIFF\0\0\0\0WEBP".to_vec();
    b.extend(chunk);
    b.extend([0; 4]);
    match chunk {
      b"VP8 " => {
        b.extend([0, 0, 0, 0x9d, 0x01, 0x2a]);
        b.extend((w as u16).to_le_bytes());
        b.extend((h as u16).to_le_bytes());
      }
      b"VP8L" => {
        b.push(0x2f);
        b.extend(((w - 1) | (h - 1) << 14).to_le_bytes());
      }
      _ => {
        b.extend([0; 4]);
        b.extend(&(w - 1).to_le_bytes()[..3]);
        b.extend(&(h - 1).to_le_bytes()[..3]);
      }
    }
    b
  }

  #[test]
  fn reads_the_size_from_each_formats_header() {
    assert_eq!(image_size(&png(1280, 800)), Some((1280, 800)));
    assert_eq!(image_size(&gif(200, 150)), Some((200, 150)));
    assert_eq!(image_size(&jpeg(4000, 3000, 0)), Some((4000, 3000)));
    assert_eq!(image_size(&jpeg(640, 480, 30_000)), Some((640, 480)));
    assert_eq!(image_size(&webp(b"VP8 ", 320, 240)), Some((320, 240)));
    assert_eq!(image_size(&webp(b"VP8L", 1000, 16383)), Some((1000, 16383)));
    assert_eq!(image_size(&webp(b"VP8X", 5000, 70_000)), Some((5000, 70_000)));
    // Through base64 and data URLs, from the head alone.
    let data = base64(&png(200, 200));
    let url = format!("data:image/png;base64,{data}");
    for text in [data.as_str(), url.as_str()] {
      let e = Encoded { text, len: text.len() + 1_000_000 };
      assert_eq!(image_size(&e.payload().unwrap().head_bytes()), Some((200, 200)));
    }
  }

  #[test]
  fn malformed_headers_say_nothing_and_never_panic() {
    for bad in [
      &b""[..],
      b"\x89PNG\r\n\x1a\n",
      b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDX\0\0\0\x01\0\0\0\x01",
      b"GIF89a\x01",
      b"\xff\xd8",
      b"\xff\xd8\xff\xe0\xff\xff",
      b"\xff\xd8\xff\xda\0\x02",
      b"\xff\xd8\x00",
      b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\0\0\0",
      b"RIFF\0\0\0\0WEBPVP8X\0\0",
      b"hello world",
    ] {
      assert_eq!(image_size(bad), None, "{bad:?}");
    }
    // A zero size is no size.
    assert_eq!(image_size(&png(0, 10)), None);
    // Every prefix of a valid header: no panic.
    for header in [png(9, 9), gif(9, 9), jpeg(9, 9, 10), webp(b"VP8 ", 9, 9), webp(b"VP8L", 9, 9)] {
      for n in 0..header.len() {
        let _ = image_size(&header[..n]);
      }
    }
    assert_eq!(decode_base64_head("!!!", MEDIA_HEAD), Vec::<u8>::new());
    assert_eq!(decode_base64_head("aGVsbG8=", MEDIA_HEAD), b"hello");
    assert_eq!(decode_base64_head("aGVsbG8", 4), b"hel");
    for text in ["data:", "data:image/png,abc", "https://example.com/a.png", "", "file-abc"] {
      let e = Encoded { text, len: text.len() };
      let tokens = encoded_image_tokens(Some(e), Detail::High, Provider::Anthropic);
      assert_eq!(tokens, ANTHROPIC_MAX_IMAGE_TOKENS, "{text}");
    }
  }

  #[test]
  fn each_providers_formula_at_several_sizes() {
    // (w, h, Anthropic, OpenAI high)
    for (w, h, anthropic, openai) in [
      (200, 200, 54, 255),
      (1280, 800, 1366, 1105),
      (4000, 3000, 1600, 765),
      (1092, 1092, 1590, 765),
      (2048, 768, 1230, 1445),
      (512, 512, 350, 255),
    ] {
      assert_eq!(anthropic_image_tokens(w, h), anthropic, "anthropic {w}x{h}");
      assert_eq!(openai_image_tokens(w, h), openai, "openai {w}x{h}");
      let size = Some((w, h));
      assert_eq!(image_tokens(size, Detail::High, Provider::Any), anthropic.max(openai));
      assert_eq!(image_tokens(size, Detail::Low, Provider::OpenAi), 85);
    }
    assert_eq!(image_tokens(None, Detail::High, Provider::OpenAi), 1445);
    assert_eq!(image_tokens(None, Detail::Low, Provider::OpenAi), 85);
    assert_eq!(image_tokens(None, Detail::High, Provider::Anthropic), 1600);
    assert_eq!(image_tokens(None, Detail::High, Provider::Any), 1600);
    let fields = json!({"type": "image_url", "image_url": {"url": "x", "detail": "low"}});
    assert_eq!(Detail::of(fields.as_object().unwrap()), Detail::Low);
  }

  #[test]
  fn audio_counts_by_its_duration() {
    // A WAV header: 24 kHz mono 16-bit, 48,000 bytes a second.
    let mut wav = b"RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0".to_vec();
    wav.extend(24_000u32.to_le_bytes());
    wav.extend(48_000u32.to_le_bytes());
    wav.extend([2, 0, 16, 0]);
    assert_eq!(audio_bytes_per_second(&wav, AudioFormat::Wav), 48_000);
    // 150 kB of it: 3.125 s, 32 tokens at OpenAI's rate, 100 at Gemini's.
    let text = base64(&wav);
    let len = 200_000;
    let e = Some(Encoded { text: &text, len });
    assert_eq!(encoded_audio_tokens(e, Some("wav"), Provider::OpenAi), 32);
    assert_eq!(encoded_audio_tokens(e, Some("wav"), Provider::Any), 100);
    // An MP3 frame at 128 kbps after an ID3 tag of 20 bytes; MPEG-2 at 64 kbps.
    let mut mp3 = b"ID3\x04\0\0\0\0\0\x14".to_vec();
    mp3.extend([0; 20]);
    mp3.extend([0xff, 0xfb, 0x90, 0x64]);
    assert_eq!(audio_bytes_per_second(&mp3, AudioFormat::Mp3), 16_000);
    assert_eq!(audio_bytes_per_second(&[0xff, 0xf3, 0x80, 0], AudioFormat::Mp3), 8_000);
    // Unreadable headers fall back by format.
    assert_eq!(audio_bytes_per_second(b"????", AudioFormat::Wav), 32_000);
    assert_eq!(audio_bytes_per_second(b"????", AudioFormat::Other), 16_000);
    assert_eq!(AudioFormat::of(Some("audio/mpeg")), AudioFormat::Mp3);
    let junk = Some(Encoded { text: "AAAA", len: 160_000 });
    assert_eq!(encoded_audio_tokens(junk, Some("mp3"), Provider::OpenAi), 75);
    assert_eq!(encoded_audio_tokens(None, None, Provider::OpenAi), 10);
  }
}
