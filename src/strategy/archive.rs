//! The context archive on disk: what a prune removed, kept so that nothing is lost.
//!
//! Two files per archive, both appended to on every prune (history is never overwritten):
//!
//! - the markdown archive (`context-archive.md` by default), for people and agents to read: one
//!   `# Context Archive - <timestamp>` section per prune (see [`crate::strategy::pruner::archive_markdown`]);
//! - its JSONL sidecar ([`sidecar_path`]: `context-archive.jsonl`), one line per archived
//!   message: `{"prune":N,"timestamp":"…","index":I,"message":<the message>}`, where the message
//!   is the caller's own JSON text, written verbatim, so reading it back gives it byte for byte.
//!
//! Each file is appended to under an exclusive advisory lock (`flock`), held from reading its
//! tail to flushing the new lines, so writers in several threads or processes never lose or
//! interleave each other's records and number their prunes one after the other. An append is
//! one `write` of whole lines, then `fsync`: O(what is appended), whatever the archive's size.
//! A crash in the middle of one can leave a torn last line in the sidecar (no newline, not a
//! record); the next append cuts it off before writing, since the prune that wrote it never
//! returned (its caller still has those messages).

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

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
    let record = parse_record(line).map_err(|detail| {
      Error::new(
        ErrorKind::Io,
        source,
        format!("line {} is not an archive record: {detail}", n + 1),
      )
    })?;
    records.push(record);
  }
  Ok(records)
}

/// Parses one sidecar line (not blank); the error says what it lacks.
pub fn parse_record(line: &str) -> std::result::Result<Record, String> {
  let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
  let prune = value.get("prune").and_then(Value::as_u64).ok_or("no prune number")?;
  let timestamp = value.get("timestamp").and_then(Value::as_str).ok_or("no timestamp")?.to_string();
  let index = value.get("index").and_then(Value::as_u64).ok_or("no index")? as usize;
  let message = value.get("message").ok_or("no message")?;
  let prefix = record_prefix(prune, &timestamp, index);
  let json = match line.strip_prefix(prefix.as_str()).and_then(|rest| rest.strip_suffix('}')) {
    Some(raw) => raw.to_string(),
    None => message.to_string(),
  };
  Ok(Record { prune, timestamp, index, json })
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

/// A file of the archive opened for appending, locked exclusively until dropped.
pub struct Appender<'a> {
  file: fs::File,
  path: &'a Path,
}

impl<'a> Appender<'a> {
  /// Opens `path` for appending (creating it and its directory when missing) and waits for an
  /// exclusive lock on it.
  ///
  /// # Errors
  ///
  /// An `Io` error naming the path when it cannot be created, opened or locked.
  pub fn open(path: &'a Path) -> Result<Self> {
    let failed = |e: std::io::Error| io_error(path, "could not be written", &e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
      fs::create_dir_all(dir).map_err(failed)?;
    }
    let file = fs::OpenOptions::new()
      .read(true)
      .append(true)
      .create(true)
      .open(path)
      .map_err(|e| io_error(path, "could not be opened for appending", &e))?;
    file.lock().map_err(|e| io_error(path, "could not be locked", &e))?;
    Ok(Appender { file, path })
  }

  /// The file's last `n` bytes (fewer when it is shorter).
  fn tail(&mut self, n: u64) -> Result<Vec<u8>> {
    let read = |file: &mut fs::File| -> std::io::Result<Vec<u8>> {
      let len = file.metadata()?.len();
      file.seek(SeekFrom::Start(len - n.min(len)))?;
      let mut bytes = Vec::new();
      file.read_to_end(&mut bytes)?;
      Ok(bytes)
    };
    read(&mut self.file).map_err(|e| io_error(self.path, "could not be read", &e))
  }

  /// The separator that leaves one blank line between what the file ends with and a new
  /// section: nothing for an empty file.
  pub fn section_separator(&mut self) -> Result<&'static str> {
    let tail = self.tail(2)?;
    Ok(match tail.as_slice() {
      [] | [b'\n', b'\n'] => "",
      [.., b'\n'] => "\n",
      _ => "\n\n",
    })
  }

  /// Whether the file ends with a newline (an empty file does).
  pub fn ends_with_newline(&mut self) -> Result<bool> {
    Ok(matches!(self.tail(1)?.as_slice(), [] | [b'\n']))
  }

  /// The bytes of the file's last line, read from its end (O(the line's length)), without its
  /// newline; `None` for an empty file. A last line without a newline is returned as it is.
  pub fn last_line(&mut self) -> Result<Option<Vec<u8>>> {
    let mut window = 64 * 1024;
    loop {
      let mut bytes = self.tail(window)?;
      let whole = (bytes.len() as u64) < window;
      if bytes.last() == Some(&b'\n') {
        bytes.pop();
      }
      if let Some(start) = bytes.iter().rposition(|&b| b == b'\n') {
        return Ok(Some(bytes.split_off(start + 1)));
      }
      if whole {
        return Ok(if bytes.is_empty() { None } else { Some(bytes) });
      }
      window *= 2;
    }
  }

  /// Cuts the file's last `bytes` bytes off (a torn line).
  pub fn truncate_tail(&mut self, bytes: u64) -> Result<()> {
    let cut = |file: &mut fs::File| -> std::io::Result<()> {
      let len = file.metadata()?.len();
      file.set_len(len - bytes.min(len))
    };
    cut(&mut self.file).map_err(|e| io_error(self.path, "could not be written", &e))
  }

  /// Appends `text` in one write and flushes it to disk.
  pub fn append(&mut self, text: &str) -> Result<()> {
    let write = |file: &mut fs::File| -> std::io::Result<()> {
      file.write_all(text.as_bytes())?;
      file.sync_data()
    };
    write(&mut self.file).map_err(|e| io_error(self.path, "could not be written", &e))
  }
}

fn io_error(path: &Path, what: &str, e: &std::io::Error) -> Error {
  Error::new(ErrorKind::Io, path.display().to_string(), format!("{what}: {e}"))
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

  fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("context-trim-archive-{name}-{}", std::process::id()))
  }

  #[test]
  fn appends_create_directories_and_read_the_tail() {
    let dir = scratch("append");
    let path = dir.join("nested/archive.md");
    assert_eq!(read_text(&path).unwrap(), None);
    let mut a = Appender::open(&path).unwrap();
    assert_eq!((a.last_line().unwrap(), a.section_separator().unwrap()), (None, ""));
    assert!(a.ends_with_newline().unwrap());
    a.append("one\n").unwrap();
    assert_eq!(a.section_separator().unwrap(), "\n");
    a.append("\ntwo").unwrap();
    assert_eq!(
      (a.last_line().unwrap(), a.section_separator().unwrap()),
      (Some(b"two".to_vec()), "\n\n")
    );
    assert!(!a.ends_with_newline().unwrap());
    a.append("\n\n").unwrap();
    assert_eq!(a.section_separator().unwrap(), "");
    drop(a);
    assert_eq!(read_text(&path).unwrap().as_deref(), Some("one\n\ntwo\n\n"));
    // A last line longer than the first window read from the end.
    let long = "x".repeat(200_000);
    let mut a = Appender::open(&path).unwrap();
    a.append(&format!("{long}\n")).unwrap();
    assert_eq!(a.last_line().unwrap(), Some(long.into_bytes()));
    a.truncate_tail(200_001).unwrap();
    assert_eq!(a.last_line().unwrap(), Some(Vec::new()));
    drop(a);
    // A directory in the way of the file: the error names the path.
    let err = Appender::open(&dir.join("nested")).map(|_| ()).unwrap_err();
    assert_eq!(err.code(), "IO_ERROR");
    assert!(err.to_string().starts_with(&format!(
      "{}: could not be opened for appending: ",
      dir.join("nested").display()
    )));
    fs::remove_dir_all(&dir).unwrap();
  }

  #[test]
  fn the_lock_is_exclusive_until_dropped() {
    let dir = scratch("lock");
    let path = dir.join("a.jsonl");
    let held = Appender::open(&path).unwrap();
    let other = fs::OpenOptions::new().append(true).open(&path).unwrap();
    assert!(matches!(other.try_lock(), Err(fs::TryLockError::WouldBlock)));
    drop(held);
    assert!(other.try_lock().is_ok());
    drop(other);
    fs::remove_dir_all(&dir).unwrap();
  }
}
