//! The context archive on disk: what a prune removed, kept so that nothing is lost.
//!
//! Two files per archive, both appended to on every prune (history is never overwritten):
//!
//! - the markdown archive (`context-archive.md` by default), for people and agents to read: one
//!   `# Context Archive - <timestamp>` section per prune (see [`crate::pruner::archive_markdown`]);
//! - its JSONL sidecar ([`sidecar_path`]: `context-archive.jsonl`), one line per archived
//!   message: `{"prune":N,"timestamp":"…","index":I,"message":<the message>}`, where the message
//!   is the caller's own JSON text, written verbatim, so reading it back gives it byte for byte.
//!
//! Every write is atomic: the new content goes to a temporary file in the same directory, which
//! is then renamed over the old one, so a crash leaves either the old file or the new one, never
//! half of one. Appending therefore rewrites the file (O(archive size) per prune). One process
//! should own an archive: two writers racing may lose one's append.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};

/// The largest distance from the epoch, in milliseconds, of a JavaScript `Date` (±100,000,000
/// days).
pub const MAX_TIME_MS: f64 = 8.64e15;

/// The sidecar of a markdown archive: its path with `.md` replaced by `.jsonl`, or with
/// `.jsonl` appended when it does not end with `.md` (any case).
pub fn sidecar_path(archive_path: &str) -> String {
  let len = archive_path.len();
  if len > 3
    && archive_path.is_char_boundary(len - 3)
    && archive_path[len - 3..].eq_ignore_ascii_case(".md")
  {
    format!("{}.jsonl", &archive_path[..len - 3])
  } else {
    format!("{archive_path}.jsonl")
  }
}

/// One archived message, as the sidecar stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
  /// The number of the prune that archived it (1 for the archive's first prune).
  pub prune: u64,
  /// When that prune ran (ISO 8601, as [`iso8601`] writes it).
  pub timestamp: String,
  /// Its index in the messages given to that prune.
  pub index: usize,
  /// The message's JSON text, as the caller's `JSON.stringify` gave it.
  pub json: String,
}

/// The sidecar line of a record (with its newline). `json` must be one JSON value.
pub fn record_line(prune: u64, timestamp: &str, index: usize, json: &str) -> String {
  format!("{}{json}}}\n", record_prefix(prune, timestamp, index))
}

fn record_prefix(prune: u64, timestamp: &str, index: usize) -> String {
  let timestamp = Value::String(timestamp.to_string());
  format!("{{\"prune\":{prune},\"timestamp\":{timestamp},\"index\":{index},\"message\":")
}

/// Parses a sidecar's text. The message of a line written by [`record_line`] is returned
/// verbatim; a line edited by hand into another valid layout gives its message re-serialised.
///
/// # Errors
///
/// An `Io` error naming `source` and the line when a line is not a record.
pub fn parse_records(text: &str, source: &str) -> Result<Vec<Record>> {
  let mut records = Vec::new();
  for (n, line) in text.lines().enumerate() {
    if line.trim().is_empty() {
      continue;
    }
    let bad = |detail: &str| {
      Error::new(
        ErrorKind::Io,
        source,
        format!("line {} is not an archive record: {detail}", n + 1),
      )
    };
    let value: Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
    let prune = value.get("prune").and_then(Value::as_u64).ok_or_else(|| bad("no prune number"))?;
    let timestamp = value
      .get("timestamp")
      .and_then(Value::as_str)
      .ok_or_else(|| bad("no timestamp"))?
      .to_string();
    let index = value.get("index").and_then(Value::as_u64).ok_or_else(|| bad("no index"))? as usize;
    let message = value.get("message").ok_or_else(|| bad("no message"))?;
    let prefix = record_prefix(prune, &timestamp, index);
    let json = match line.strip_prefix(prefix.as_str()).and_then(|rest| rest.strip_suffix('}')) {
      Some(raw) => raw.to_string(),
      None => message.to_string(),
    };
    records.push(Record { prune, timestamp, index, json });
  }
  Ok(records)
}

/// The records of the sidecar at `path`; none when the file does not exist.
///
/// # Errors
///
/// An `Io` error naming the path when it cannot be read or a line is not a record.
pub fn read_records(path: &Path) -> Result<Vec<Record>> {
  match read_text(path)? {
    Some(text) => parse_records(&text, &path.display().to_string()),
    None => Ok(Vec::new()),
  }
}

/// The text of the file at `path`, or `None` when it does not exist.
///
/// # Errors
///
/// An `Io` error naming the path when it exists but cannot be read (or is not UTF-8).
pub fn read_text(path: &Path) -> Result<Option<String>> {
  match fs::read_to_string(path) {
    Ok(text) => Ok(Some(text)),
    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
    Err(e) => Err(io_error(path, "could not be read", &e)),
  }
}

/// Replaces the file at `path` with `content` atomically: written to a temporary file in the
/// same directory (created if missing), flushed to disk, then renamed over `path`.
///
/// # Errors
///
/// An `Io` error naming the path when any step fails (the temporary file is removed).
pub fn write_atomic(path: &Path, content: &str) -> Result<()> {
  static COUNTER: AtomicU64 = AtomicU64::new(0);
  let name = path
    .file_name()
    .ok_or_else(|| Error::new(ErrorKind::Io, path.display().to_string(), "is not a file path"))?;
  let dir = match path.parent() {
    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
    _ => PathBuf::from("."),
  };
  fs::create_dir_all(&dir).map_err(|e| io_error(path, "could not be written", &e))?;
  let n = COUNTER.fetch_add(1, Ordering::Relaxed);
  let tmp = dir.join(format!(".{}.{}-{n}.tmp", name.to_string_lossy(), std::process::id()));
  let written = (|| {
    let mut file = fs::File::create(&tmp)?;
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, path)
  })();
  written.map_err(|e| {
    let _ = fs::remove_file(&tmp);
    io_error(path, "could not be written", &e)
  })
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> Error {
  Error::new(ErrorKind::Io, path.display().to_string(), format!("{what}: {e}"))
}

/// Appends `section` to the text `existing` (a file's content, `None` if it does not exist),
/// separated from what came before by one blank line.
pub fn append_section(existing: Option<&str>, section: &str) -> String {
  match existing {
    None | Some("") => section.to_string(),
    Some(old) => {
      let sep = if old.ends_with("\n\n") {
        ""
      } else if old.ends_with('\n') {
        "\n"
      } else {
        "\n\n"
      };
      format!("{old}{sep}{section}")
    }
  }
}

/// A time in milliseconds since the epoch as JavaScript's `Date.prototype.toISOString` writes
/// it (`2026-02-12T14:30:00.000Z`; years outside 0–9999 as `+010000`/`-000001`), fractions of a
/// millisecond dropped. `None` outside a `Date`'s range or for NaN.
pub fn iso8601(ms: f64) -> Option<String> {
  if !ms.is_finite() || ms.abs() > MAX_TIME_MS {
    return None;
  }
  let ms = ms.trunc() as i64;
  let days = ms.div_euclid(86_400_000);
  let of_day = ms.rem_euclid(86_400_000);
  let (year, month, day) = civil_from_days(days);
  let year = if (0..=9999).contains(&year) {
    format!("{year:04}")
  } else {
    format!("{}{:06}", if year < 0 { '-' } else { '+' }, year.abs())
  };
  Some(format!(
    "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
    of_day / 3_600_000,
    of_day / 60_000 % 60,
    of_day / 1000 % 60,
    of_day % 1000
  ))
}

/// (year, month, day) of a day number since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
  let z = days + 719_468;
  let era = z.div_euclid(146_097);
  let doe = z.rem_euclid(146_097);
  let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
  let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  let mp = (5 * doy + 2) / 153;
  let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
  let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
  let year = yoe + era * 400 + i64::from(month <= 2);
  (year, month, day)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn iso8601_matches_javascript() {
    // Values checked against `new Date(ms).toISOString()` in Node 20.
    for (ms, iso) in [
      (0.0, "1970-01-01T00:00:00.000Z"),
      (1_770_906_600_000.0, "2026-02-12T14:30:00.000Z"),
      (951_782_400_000.0, "2000-02-29T00:00:00.000Z"),
      (-1.0, "1969-12-31T23:59:59.999Z"),
      (1.9, "1970-01-01T00:00:00.001Z"),
      (-62_198_755_200_000.0, "-000001-01-01T00:00:00.000Z"),
      (253_402_300_800_000.0, "+010000-01-01T00:00:00.000Z"),
      (8.64e15, "+275760-09-13T00:00:00.000Z"),
      (-8.64e15, "-271821-04-20T00:00:00.000Z"),
    ] {
      assert_eq!(iso8601(ms).as_deref(), Some(iso), "{ms}");
    }
    assert_eq!(iso8601(8.64e15 + 1.0), None);
    assert_eq!(iso8601(f64::NAN), None);
  }

  #[test]
  fn sidecar_paths() {
    for (md, jsonl) in [
      ("context-archive.md", "context-archive.jsonl"),
      ("logs/ARCHIVE.MD", "logs/ARCHIVE.jsonl"),
      ("archive", "archive.jsonl"),
      ("notes.txt", "notes.txt.jsonl"),
      (".md", ".md.jsonl"),
    ] {
      assert_eq!(sidecar_path(md), jsonl);
    }
  }

  #[test]
  fn records_round_trip_verbatim() {
    let json = r#"{"role":"user","content":"caf\u00e9 \ud83d\ude00","n":1e+21,"x":[]}"#;
    let text = format!(
      "{}\n{}",
      record_line(1, "2026-02-12T14:30:00.000Z", 4, json),
      record_line(2, "2026-02-12T15:00:00.000Z", 0, "{}")
    );
    let records = parse_records(&text, "a.jsonl").unwrap();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].json, json, "kept byte for byte");
    assert_eq!((records[0].prune, records[0].index), (1, 4));
    assert_eq!(records[1].timestamp, "2026-02-12T15:00:00.000Z");
    // A record laid out differently by hand still reads, re-serialised.
    let edited = r#"{"index":3,"message":{"role":"user"},"prune":7,"timestamp":"t"}"#;
    assert_eq!(parse_records(edited, "a").unwrap()[0].json, r#"{"role":"user"}"#);
    assert_eq!(
      parse_records("{\"prune\":1}\nnot json", "a.jsonl").unwrap_err().to_string(),
      "a.jsonl: line 1 is not an archive record: no timestamp"
    );
    assert_eq!(parse_records("", "a").unwrap(), vec![]);
  }

  #[test]
  fn atomic_writes_replace_and_create_directories() {
    let dir = std::env::temp_dir().join(format!("context-trim-archive-{}", std::process::id()));
    let path = dir.join("nested/archive.md");
    assert_eq!(read_text(&path).unwrap(), None);
    write_atomic(&path, "one\n").unwrap();
    let grown = append_section(read_text(&path).unwrap().as_deref(), "two\n");
    write_atomic(&path, &grown).unwrap();
    assert_eq!(read_text(&path).unwrap().as_deref(), Some("one\n\ntwo\n"));
    let leftovers: Vec<_> =
      fs::read_dir(dir.join("nested")).unwrap().filter_map(|e| e.ok()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    // A directory in the way of the file: the error names the path.
    let err = write_atomic(&dir.join("nested"), "x").unwrap_err();
    assert_eq!(err.code(), "IO_ERROR");
    assert!(err
      .to_string()
      .starts_with(&format!("{}: could not be written: ", dir.join("nested").display())));
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(append_section(Some("a"), "b"), "a\n\nb");
    assert_eq!(append_section(Some("a\n\n"), "b"), "a\n\nb");
    assert_eq!(append_section(None, "b"), "b");
  }
}
