//! Placeholder templates: the text that stands in for a tool output a strategy removed.
//!
//! A template is text with fields, each replaced at every occurrence:
//!
//! - `{age}` (or `{N}`, seed 004's spelling): the output's age in steps;
//! - `{tokens}`: the removed output's tokens;
//! - `{path}`: the file the output is about, when the strategy knows one (empty otherwise).
//!
//! Any other text in braces is kept as it is. [`PlaceholderTemplate`] parses a template once
//! and renders it for each output; [`PlaceholderPattern`] recognises the placeholders it
//! produces, so that a later pass does not take a placeholder for an output.

/// A parsed placeholder template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderTemplate {
  /// The template as given.
  source: String,
  /// The literal text and the fields, in order.
  pieces: Vec<Piece>,
}

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
  Text(String),
  Field(Field),
}

/// A field of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
  /// `{age}` or `{N}`.
  Age,
  /// `{tokens}`.
  Tokens,
  /// `{path}`.
  Path,
}

impl Field {
  const NAMES: [(&'static str, Field); 4] = [
    ("{age}", Field::Age),
    ("{N}", Field::Age),
    ("{tokens}", Field::Tokens),
    ("{path}", Field::Path),
  ];
}

/// What a placeholder says about the output it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaceholderFields<'a> {
  /// The output's age in steps.
  pub age: usize,
  /// The removed output's tokens.
  pub tokens: usize,
  /// The file the output is about, if known.
  pub path: Option<&'a str>,
}

impl PlaceholderTemplate {
  /// Parses `template`.
  pub fn new(template: &str) -> Self {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = template;
    while let Some(at) = rest.find('{') {
      text.push_str(&rest[..at]);
      rest = &rest[at..];
      match Field::NAMES.iter().find(|(name, _)| rest.starts_with(name)) {
        Some((name, field)) => {
          if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
          }
          pieces.push(Piece::Field(*field));
          rest = &rest[name.len()..];
        }
        None => {
          text.push('{');
          rest = &rest[1..];
        }
      }
    }
    text.push_str(rest);
    if !text.is_empty() {
      pieces.push(Piece::Text(text));
    }
    PlaceholderTemplate { source: template.to_string(), pieces }
  }

  /// The template as given.
  pub fn as_str(&self) -> &str {
    &self.source
  }

  /// Whether the template has a `{path}` field (so that a strategy looks the path up).
  pub fn uses_path(&self) -> bool {
    self.pieces.contains(&Piece::Field(Field::Path))
  }

  /// The placeholder for an output with these `fields`.
  pub fn render(&self, fields: &PlaceholderFields<'_>) -> String {
    let mut out = String::with_capacity(self.source.len() + 16);
    for piece in &self.pieces {
      match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Field(Field::Age) => out.push_str(&fields.age.to_string()),
        Piece::Field(Field::Tokens) => out.push_str(&fields.tokens.to_string()),
        Piece::Field(Field::Path) => out.push_str(fields.path.unwrap_or_default()),
      }
    }
    out
  }

  /// The pattern of the placeholders this template renders.
  pub fn pattern(&self) -> PlaceholderPattern {
    let mut parts = vec![String::new()];
    let mut fields = Vec::new();
    for piece in &self.pieces {
      match piece {
        Piece::Text(t) => parts.last_mut().into_iter().for_each(|p| p.push_str(t)),
        Piece::Field(f) => {
          fields.push(*f == Field::Path);
          parts.push(String::new());
        }
      }
    }
    let max_len = parts.iter().map(String::len).sum::<usize>()
      + fields
        .iter()
        .map(|&path| if path { MAX_PATH_BYTES } else { MAX_NUMBER_DIGITS })
        .sum::<usize>();
    PlaceholderPattern { parts, paths: fields, max_len }
  }
}

/// The most digits a number field matches.
const MAX_NUMBER_DIGITS: usize = 20;
/// The longest text a `{path}` field matches, in bytes.
const MAX_PATH_BYTES: usize = 4096;

/// The placeholders a template produces: the template with a number (at most 20 digits) in
/// place of each `{age}`, `{N}` and `{tokens}`, and a line of at most 4096 bytes in place of
/// each `{path}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderPattern {
  /// The literal text around the fields.
  parts: Vec<String>,
  /// For each field, whether it is a `{path}` (else a number).
  paths: Vec<bool>,
  /// The longest text that can match.
  max_len: usize,
}

impl PlaceholderPattern {
  /// The pattern of `template`.
  pub fn new(template: &str) -> Self {
    PlaceholderTemplate::new(template).pattern()
  }

  /// Whether `text` is one of the placeholders.
  pub fn matches(&self, text: &str) -> bool {
    // Long texts, the usual tool output, are rejected at once.
    if text.len() > self.max_len || !text.starts_with(self.parts[0].as_str()) {
      return false;
    }
    // The positions in `text` where a match of the parts so far can end (a set, so adjacent
    // fields such as `{age}{tokens}` cost no backtracking).
    let mut ends = vec![self.parts[0].len()];
    for (part, &path) in self.parts[1..].iter().zip(&self.paths) {
      let mut next = Vec::new();
      for &at in &ends {
        let field_ends: Vec<usize> = if path {
          let line = text[at..].find('\n').map_or(text.len(), |n| at + n);
          (at..=line).filter(|&e| text.is_char_boundary(e)).collect()
        } else {
          let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
          (1..=digits).map(|k| at + k).collect()
        };
        for e in field_ends {
          let end = e + part.len();
          if text[e..].starts_with(part.as_str()) && !next.contains(&end) {
            next.push(end);
          }
        }
      }
      ends = next;
    }
    ends.contains(&text.len())
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  fn fields(path: Option<&str>) -> PlaceholderFields<'_> {
    PlaceholderFields { age: 7, tokens: 1234, path }
  }

  #[test]
  fn every_field_is_rendered_at_every_occurrence() {
    let t = PlaceholderTemplate::new("{age}/{N}/{age} {tokens}t {path}|{other}");
    assert_eq!(t.render(&fields(Some("/a.rs"))), "7/7/7 1234t /a.rs|{other}");
    assert_eq!(t.render(&fields(None)), "7/7/7 1234t |{other}");
    assert!(t.uses_path());
    assert!(!PlaceholderTemplate::new("[content truncated - {age} steps ago]").uses_path());
    assert_eq!(PlaceholderTemplate::new("{").render(&fields(None)), "{");
  }

  #[test]
  fn the_pattern_matches_what_the_template_renders_and_nothing_else() {
    for template in [
      "[content truncated - {age} steps ago, {tokens} tokens]",
      "<{age}{tokens}0>",
      "[{path} - {N} steps ago]",
      "plain",
    ] {
      let t = PlaceholderTemplate::new(template);
      let pattern = t.pattern();
      assert!(pattern.matches(&t.render(&fields(Some("src/main.rs")))), "{template}");
      assert!(pattern.matches(&t.render(&fields(None))), "{template}");
      assert!(!pattern.matches(&format!("x{}", t.render(&fields(None)))), "{template}");
    }
    let pattern = PlaceholderPattern::new("[{path} - {age} steps ago]");
    assert!(!pattern.matches("[a\nb - 3 steps ago]"), "a path is one line");
    assert!(!pattern.matches("[a - x steps ago]"));
    assert!(!PlaceholderPattern::new("[{age}]").matches(&format!("[{}]", "9".repeat(21))));
  }
}
