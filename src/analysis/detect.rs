//! Recognising what a tool output is, from its text alone.
//!
//! [`is_error_output`] tells whether a tool result reports a failure. It is used by the rolling
//! context (errors are never truncated) and is meant to be shared by every feature that must
//! treat errors specially (summaries keep them verbatim).
//!
//! The detection is line-based and deliberately narrow, so that a large log that merely mentions
//! an error somewhere is not kept forever, but it looks at every line, so an error in the
//! middle of an output (a traceback after `STDERR:`, a failing step of a long build) is found:
//!
//! 1. **Exit status**: the *last* non-empty line reports a non-zero exit code: `exit code N` or
//!    `exit status N` with `N != 0`, as OpenHands appends to every command
//!    (`[The command completed with exit code 1.]`, `[Command finished with exit code 127]`,
//!    `-1` for a timeout) and Go prints (`exit status 2`); or **any** line is such a status
//!    report on its own (`[The command completed with exit code 1.]`, `exit status 2`,
//!    `Process exited with code 1`), however much output follows it.
//! 2. **A line that starts with an error marker** (after leading whitespace and `[`, and a
//!    stream label such as `STDERR:` or pytest's `E   `): [`ERROR_LINE_PREFIXES`], e.g.
//!    `Error:`, `error:`, `error[E0308]`, `fatal:`, `panic:`, `npm ERR!`, the failures of the
//!    agents' file editors (`No replacement was performed`, `[No exact match found`,
//!    `Invalid \`path\` parameter`, `Your proposed edit has introduced new syntax error(s)`), the
//!    word `ERROR` (`ERROR:`, `ERROR `, not `ERRORS.md`), or an exception's name and its
//!    message (`ValueError: …`, `java.lang.NullPointerException: …`: a name ending in `Error`
//!    or `Exception`, then `:`). File views numbered by `cat -n` or `N|` start their lines with
//!    a number, so source code that contains such a line is not an error report.
//! 3. **A line that contains an error phrase** anywhere: [`ERROR_PHRASES`], e.g.
//!    `Traceback (most recent call last)`, `command not found`, `No such file or directory`,
//!    `: error:` (gcc, clang), `): error TS` (tsc), ` panicked at ` (Rust), `Segmentation
//!    fault`, `non-zero exit status` (Python's `CalledProcessError`).
//!
//! ```
//! use context_trim::analysis::detect::is_error_output;
//! assert!(is_error_output("make: *** [build] Error 2\n[The command completed with exit code 2.]"));
//! assert!(!is_error_output("total 16\n[The command completed with exit code 0.]"));
//! ```

/// Markers that make a line an error report when the line starts with them (after leading
/// whitespace and `[`). Case-sensitive.
pub const ERROR_LINE_PREFIXES: &[&str] = &[
  "Error:",
  "error:",
  "error[E",
  "fatal:",
  "FATAL:",
  "panic:",
  "npm ERR!",
  "Exception in thread",
  // Failures the coding agents' file editors report (OpenHands, SWE-agent).
  "Your proposed edit has introduced new syntax error",
  "No exact match found",
  "No replacement was performed",
  "Invalid `",
];

/// Phrases that make a line an error report wherever they appear in it. Case-sensitive.
pub const ERROR_PHRASES: &[&str] = &[
  "Traceback (most recent call last)",
  "non-zero exit status",
  "command not found",
  "No such file or directory",
  "Permission denied",
  "Segmentation fault",
  ": error:",
  "): error TS",
  " panicked at ",
];

/// The word that makes a line an error report when the line starts with it as a whole word.
const ERROR_WORD: &str = "ERROR";

/// Stream labels an agent or a test runner puts before a line (`STDERR: Traceback …`,
/// pytest's `E       AssertionError: …`): skipped before the line-start markers are checked.
pub const STREAM_LABELS: &[&str] = &["STDERR:", "stderr:", "[stderr]", "E "];

/// What a status line says before its `exit code N` (lower case): such a line reports a status
/// wherever it is in an output.
const STATUS_LEADS: &[&str] = &[
  "the command completed with ",
  "command completed with ",
  "command finished with ",
  "command exited with ",
  "process finished with ",
  "process exited with ",
  "exited with ",
  "finished with ",
];

/// Whether `text`, a tool output, reports an error (see the [module docs](self) for the rules).
pub fn is_error_output(text: &str) -> bool {
  let last = text.lines().rev().find(|l| !l.trim().is_empty());
  if last.is_some_and(reports_failed_exit) {
    return true;
  }
  text.lines().any(|l| is_error_line(l) || is_failed_status_line(l))
}

/// Whether one line starts with an error marker or contains an error phrase.
fn is_error_line(line: &str) -> bool {
  let mut start = line.trim_start().trim_start_matches('[');
  for label in STREAM_LABELS {
    if let Some(rest) = start.strip_prefix(label) {
      start = rest.trim_start();
      break;
    }
  }
  if ERROR_LINE_PREFIXES.iter().any(|p| start.starts_with(p)) || names_an_exception(start) {
    return true;
  }
  if let Some(rest) = start.strip_prefix(ERROR_WORD) {
    if !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
      return true;
    }
  }
  ERROR_PHRASES.iter().any(|p| line.contains(p))
}

/// Whether a line starts with an exception's name and `:` (`ValueError: …`,
/// `java.lang.IllegalStateException: …`): a name of letters, digits, `_`, `.` and `$`,
/// starting with a letter and ending in `Error` or `Exception`.
fn names_an_exception(start: &str) -> bool {
  let Some((name, _)) = start.split_once(':') else { return false };
  name.starts_with(|c: char| c.is_ascii_alphabetic())
    && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
    && (name.ends_with("Error") || name.ends_with("Exception"))
}

/// Whether a line is, on its own, a report of a non-zero exit status (rule 1): after its
/// brackets, an optional lead such as `The command completed with`, then `exit code N` or
/// `exit status N` and nothing but punctuation.
fn is_failed_status_line(line: &str) -> bool {
  let trimmed = line.trim().trim_matches(|c: char| matches!(c, '[' | ']' | '.' | '(' | ')'));
  let lower = trimmed.to_ascii_lowercase();
  let rest = STATUS_LEADS.iter().find_map(|lead| lower.strip_prefix(lead)).unwrap_or(&lower);
  if !(rest.starts_with("exit code")
    || rest.starts_with("exit status")
    || rest.starts_with("code "))
  {
    return false;
  }
  let rest =
    rest.trim_start_matches("exit ").trim_start_matches("code").trim_start_matches("status");
  let number = rest.trim_start_matches([' ', ':', '=']);
  let sign = usize::from(number.starts_with('-'));
  let digits = number[sign..].bytes().take_while(u8::is_ascii_digit).count();
  digits > 0
    && number[sign + digits..].trim().is_empty()
    && number[sign..sign + digits].bytes().any(|b| b != b'0')
}

/// The exit status a command output reports on its last non-empty line (`exit code N`,
/// `exit status N`, case-insensitive words; rule 1 of the [module docs](self)), as written:
/// `"0"`, `"2"`, `"-1"`. The last such report of the line wins.
///
/// ```
/// use context_trim::analysis::detect::exit_status;
/// assert_eq!(exit_status("ok\n[The command completed with exit code 0.]\n"), Some("0"));
/// assert_eq!(exit_status("FAIL\texample.com/pkg\nexit status 1"), Some("1"));
/// assert_eq!(exit_status("exit code 1\nall good"), None);
/// ```
pub fn exit_status(text: &str) -> Option<&str> {
  let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
  exit_statuses(last).last()
}

/// The first line of `text` that reports an error (rules 2 and 3 of the [module docs](self)),
/// trimmed, or else its last non-empty line when that reports a non-zero exit status (rule 1);
/// `None` when [`is_error_output`] would say no.
///
/// ```
/// use context_trim::analysis::detect::first_error_line;
/// let out = "Compiling x\nerror[E0308]: mismatched types\n  --> src/a.rs:3:5";
/// assert_eq!(first_error_line(out), Some("error[E0308]: mismatched types"));
/// ```
pub fn first_error_line(text: &str) -> Option<&str> {
  if let Some(line) = text.lines().find(|l| is_error_line(l) || is_failed_status_line(l)) {
    return Some(line.trim());
  }
  let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
  reports_failed_exit(last).then(|| last.trim())
}

/// Whether a line reports a non-zero `exit code N` or `exit status N` (case-insensitive words).
fn reports_failed_exit(line: &str) -> bool {
  exit_statuses(line).any(|n| n.trim_start_matches('-').bytes().any(|b| b != b'0'))
}

/// Every `exit code N` / `exit status N` of a line, the number as written (sign included).
fn exit_statuses(line: &str) -> impl Iterator<Item = &str> {
  // ASCII lower-casing keeps byte offsets, so positions found in `lower` index `line`.
  let lower = line.to_ascii_lowercase();
  let mut found = Vec::new();
  for key in ["exit code", "exit status"] {
    for (at, _) in lower.match_indices(key) {
      let after = at + key.len();
      let rest = line[after..].trim_start_matches([' ', ':', '=']);
      let start = line.len() - rest.len();
      let sign = usize::from(rest.starts_with('-'));
      let digits = rest[sign..].bytes().take_while(u8::is_ascii_digit).count();
      if digits > 0 {
        found.push((at, &line[start..start + sign + digits]));
      }
    }
  }
  found.sort_by_key(|&(at, _)| at);
  found.into_iter().map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn detection_table() {
    for (text, expected) in [
      // Exit codes in the last non-empty line.
      ("ok\n[The command completed with exit code 0.]", false),
      ("\n[The command completed with exit code 1.]", true),
      ("bash: ponyc: command not found\n[The command completed with exit code 127.]", true),
      ("out\n[Command finished with exit code 2]\n\n", true),
      ("[Command finished with exit code 0]", false),
      ("no output for 30s\n[The command completed with exit code -1.]", true),
      ("FAIL\texample.com/pkg\nexit status 1", true),
      ("Exit code: 3", true),
      ("exit code 0\nexit code 00", false),
      // An exit code that is not on the last line is someone's text, not a status...
      ("the script returns exit code 1 on failure\nall good", false),
      // ...unless the line is a status report on its own, wherever it is.
      ("$ make\n[The command completed with exit code 2.]\n$ ls\nsrc", true),
      ("step 1\nProcess exited with code 1\nstep 2 skipped", true),
      ("build\nexit status 3\nretrying", true),
      ("[The command completed with exit code 0.]\nnext", false),
      // Errors in the middle of an output, after a stream label (issue 18).
      ("STDOUT:\nok\nSTDERR: Traceback (most recent call last):\n  File \"a.py\", line 3", true),
      ("collected 3 items\nE       AssertionError: assert 1 == 2\n1 failed", true),
      ("running\nValueError: invalid literal for int() with base 10: 'x'\ndone", true),
      ("at line 3\njava.lang.NullPointerException: null\n\tat Main.main", true),
      ("subprocess.CalledProcessError: Command 'make' returned non-zero exit status 2.", true),
      ("class ParseError(Exception):\n    pass", false),
      ("    12\tValueError: in source viewed with cat -n", false),
      // Line-start markers.
      ("Traceback (most recent call last):\n  File \"a.py\", line 1", true),
      ("Error: ENOENT: no such file", true),
      ("  error: could not compile `x`", true),
      ("error[E0308]: mismatched types", true),
      ("fatal: not a git repository", true),
      ("panic: runtime error: index out of range", true),
      ("npm ERR! code E404", true),
      ("ERROR:\nParameter `old_str` is required for command: str_replace.", true),
      ("ERROR collecting tests/test_a.py", true),
      ("ERRORS.md\nREADME.md", false),
      ("Exception in thread \"main\" java.lang.NullPointerException", true),
      ("[Error: boom]", true),
      // Editors' failures.
      (
        "[Your proposed edit has introduced new syntax error(s). Please understand the errors]",
        true,
      ),
      ("[No exact match found in /workspace/src/a.tsx for\n```", true),
      ("No replacement was performed, old_str `x` did not appear verbatim in /a.c.", true),
      ("Invalid `view_range` parameter: [100, 150].", true),
      ("42|        console.error('Error fetching repos:', error);", false),
      ("1481:            raise self.make_error(\"invalid\") from error", false),
      // Phrases anywhere in a line.
      ("ls: cannot access 'src/lib': No such file or directory", true),
      ("src/a.c:3:5: error: expected ';'", true),
      ("src/a.ts(3,5): error TS2322: Type 'x' is not assignable", true),
      ("thread 'main' panicked at src/main.rs:2:5:", true),
      ("bash: line 1: 42 Segmentation fault (core dumped)", true),
      ("cat: /root/flag: Permission denied", true),
      // Not errors.
      ("", false),
      ("Your thought has been logged.", false),
      ("total 16\ndrwxr-xr-x 3 root root 4096 common", false),
      ("    12\terror: this line is source code viewed with cat -n", false),
      ("The file /a.py has been edited.", false),
      ("errors = []\nwarning: unused variable", false),
    ] {
      assert_eq!(is_error_output(text), expected, "{text:?}");
      assert_eq!(first_error_line(text).is_some(), expected, "{text:?}");
    }
  }

  #[test]
  fn exit_statuses_and_first_error_lines() {
    for (text, status) in [
      ("ls\n[The command completed with exit code 2.]", Some("2")),
      ("[Command finished with exit code 0]\n\n", Some("0")),
      ("timed out\n[The command completed with exit code -1.]", Some("-1")),
      ("Exit code: 3", Some("3")),
      ("exit code 0 then exit status 4", Some("4")),
      ("exit code 1\nall good", None),
      ("exit code", None),
      ("", None),
    ] {
      assert_eq!(exit_status(text), status, "{text:?}");
    }
    for (text, line) in [
      ("ls: cannot access 'x': No such file or directory\n[The command completed with exit code 2.]", Some("ls: cannot access 'x': No such file or directory")),
      ("\n[The command completed with exit code 1.]", Some("[The command completed with exit code 1.]")),
      ("ERROR:\nParameter `old_str` is required", Some("ERROR:")),
      ("all fine\n[The command completed with exit code 0.]", None),
    ] {
      assert_eq!(first_error_line(text), line, "{text:?}");
    }
  }
}
