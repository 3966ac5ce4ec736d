//! The file work of Claude Code, Codex CLI, opencode and Crush, as their real sessions in
//! `../shared/corpus` show it: shell reads and partial reads are recognised with their paths and
//! line ranges, and a range supersedes exactly the reads it contains (issue 41).
//!
//! The expectations are read from the sessions by this file's own small parser of the command
//! lines and arguments, not by the library's. The corpus sits beside the repository (it is not
//! bundled): without it these tests have nothing to read, which fails them under CI (`CI` set)
//! and skips them elsewhere.

mod common;

use context_trim::analysis::supersession::{superseded_pairs, ToolNames};
use context_trim::model::message::Message;
use context_trim::{file_operation, Conversation, Encoding, FileOpKind};

/// The sessions of `../shared/corpus` whose file name starts with `prefix` (none, said, where
/// the corpus is missing outside CI).
fn corpus(prefix: &str) -> Vec<(String, Vec<Message>)> {
  common::transcripts_in("../shared/corpus", prefix).unwrap_or_else(|| {
    assert!(std::env::var_os("CI").is_none(), "../shared/corpus is missing under CI");
    eprintln!("../shared/corpus is missing: nothing to check");
    Vec::new()
  })
}

/// A read as this test reads a command line: the path and the lines (`None`: the whole file).
#[derive(Debug, Clone, PartialEq)]
struct Read {
  path: String,
  lines: Option<(u64, u64)>,
}

/// `sed -n 'A,Bp' F`, `nl -ba F | sed -n 'A,Bp'`, `cat F`, `nl -ba F`, after an optional
/// `cd D &&` (the forms in the Codex sessions), else `None`.
fn shell_read(script: &str) -> Option<Read> {
  let line = script.trim();
  if line.contains('\n') || line.contains(";") || line.matches("&&").count() > 1 {
    return None;
  }
  let line = match line.split_once("&&") {
    Some((cd, rest)) if cd.trim_start().starts_with("cd ") => rest.trim(),
    Some(_) => return None,
    None => line,
  };
  let range = |script: &str| -> Option<(u64, u64)> {
    let (a, b) = script.trim_matches('\'').strip_suffix('p')?.split_once(',')?;
    Some((a.parse().ok()?, b.parse().ok()?))
  };
  let words: Vec<&str> = line.split_whitespace().collect();
  match words.as_slice() {
    ["sed", "-n", script, path] => {
      Some(Read { path: path.to_string(), lines: Some(range(script)?) })
    }
    ["nl", "-ba", path, "|", "sed", "-n", script] => {
      Some(Read { path: path.to_string(), lines: Some(range(script)?) })
    }
    ["cat", path] | ["nl", "-ba", path] => Some(Read { path: path.to_string(), lines: None }),
    _ => None,
  }
}

/// The file a script's first line writes whole: `cat <<'EOF' > F` or `cat > F << 'EOF'`.
fn heredoc_target(script: &str) -> Option<String> {
  let words: Vec<&str> = script.lines().next()?.split_whitespace().collect();
  match words.as_slice() {
    ["cat", heredoc, ">", path] if heredoc.starts_with("<<") => Some(path.to_string()),
    ["cat", ">", path, "<<", _] => Some(path.to_string()),
    _ => None,
  }
}

/// The script of a Codex `shell` call (`["bash", "-lc", script]`) or `shell_command` call.
fn script_of(arguments: &str) -> Option<String> {
  let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
  match &args["command"] {
    serde_json::Value::String(s) => Some(s.clone()),
    serde_json::Value::Array(words) => match words.as_slice() {
      [shell, flag, script] if shell == "bash" && flag == "-lc" => {
        script.as_str().map(String::from)
      }
      _ => None,
    },
    _ => None,
  }
}

/// Every result of `messages` answering a call that this test reads as a shell read, with the
/// read, by the result's index.
fn shell_reads(messages: &[Message]) -> Vec<(usize, Read)> {
  let mut out = Vec::new();
  for (i, m) in messages.iter().enumerate() {
    let Some(id) = m.answers.first().map(String::as_str) else { continue };
    let Some(call) = messages[..i].iter().rev().flat_map(|c| &c.tool_calls).find(|c| c.id == id)
    else {
      continue;
    };
    if !matches!(call.name.as_str(), "shell" | "shell_command") {
      continue;
    }
    if let Some(read) = script_of(&call.arguments).as_deref().and_then(shell_read) {
      out.push((i, read));
    }
  }
  out
}

/// A result that reports failure: Codex's JSON exit code, or an error line.
fn failed(m: &Message) -> bool {
  let text = m.content_text();
  text.contains("\"exit_code\":") && !text.contains("\"exit_code\":0")
}

#[test]
fn codex_shell_reads_are_reads_of_their_files() {
  let mut checked = 0;
  for (name, messages) in corpus("codex-") {
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    for (i, read) in shell_reads(&messages) {
      let op =
        file_operation(&conv, i).unwrap_or_else(|| panic!("{name} #{i}: {read:?} not a read"));
      assert_eq!(
        (op.path.as_str(), op.kind),
        (read.path.as_str(), FileOpKind::Read),
        "{name} #{i}"
      );
      assert_eq!(op.failed, failed(&messages[i]), "{name} #{i}: {read:?}");
      checked += 1;
    }
  }
  if checked > 0 {
    assert!(checked >= 60, "only {checked} shell reads in the Codex sessions");
  }
}

/// A range read is superseded by the first later successful read of its file that contains its
/// lines, or by the first whole write of the file (`*** Add File:`, `cat <<'EOF' > F`), whichever comes first; a
/// partial read never supersedes a wider one, and a patch that updates part of a file
/// supersedes nothing.
#[test]
fn codex_ranges_supersede_exactly_the_reads_they_contain() {
  let mut ranges = 0;
  let mut superseded = 0;
  for (name, messages) in corpus("codex-") {
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    let pairs: std::collections::BTreeMap<usize, usize> =
      superseded_pairs(&conv, &ToolNames::default()).into_iter().collect();
    let reads: Vec<(usize, Read)> =
      shell_reads(&messages).into_iter().filter(|(i, _)| !failed(&messages[*i])).collect();
    // The results of `*** Add File: P` patches, by index, with P.
    let creates: Vec<(usize, String)> = (0..messages.len())
      .filter_map(|i| {
        let id = messages[i].answers.first()?;
        let call = messages[..i].iter().rev().flat_map(|c| &c.tool_calls).find(|c| &c.id == id)?;
        let path = match script_of(&call.arguments) {
          Some(script) => heredoc_target(&script)?,
          None => call.arguments.split("*** Add File: ").nth(1)?.split("\\n").next()?.trim().into(),
        };
        (!failed(&messages[i])).then_some((i, path))
      })
      .collect();
    let contains = |newer: &Read, older: &Read| match (newer.lines, older.lines) {
      (None, _) => true,
      (Some(_), None) => false,
      (Some((a, b)), Some((c, d))) => a <= c && d <= b,
    };
    for (k, (i, read)) in reads.iter().enumerate() {
      let by_read = reads[k + 1..]
        .iter()
        .find(|(_, newer)| newer.path == read.path && contains(newer, read))
        .map(|(j, _)| *j);
      let by_create = creates.iter().find(|(j, p)| *j > *i && *p == read.path).map(|(j, _)| *j);
      let want = match (by_read, by_create) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
      };
      assert_eq!(pairs.get(i).copied(), want, "{name} #{i}: {read:?}");
      ranges += usize::from(read.lines.is_some());
      superseded += usize::from(want.is_some());
    }
  }
  if ranges > 0 {
    assert!(ranges >= 40 && superseded >= 5, "{ranges} ranges, {superseded} superseded");
  }
}

/// opencode's `view` with `limit`, Claude Code's `Read`, `Edit`, `Write` and refused calls,
/// opencode's and Crush's `edit`, `multiedit` and `write`: every call that names a file gives
/// its result a file operation on that file, of the kind its tool says, and a result that
/// reports failure is flagged.
#[test]
fn claude_code_opencode_and_crush_file_tools_name_their_files() {
  let kinds = [
    ("Read", FileOpKind::Read),
    ("view", FileOpKind::Read),
    ("Edit", FileOpKind::Edit),
    ("MultiEdit", FileOpKind::Edit),
    ("edit", FileOpKind::Edit),
    ("multiedit", FileOpKind::Edit),
    ("Write", FileOpKind::Create),
    ("write", FileOpKind::Create),
  ];
  let mut checked = 0;
  let mut failures = 0;
  for prefix in ["claudecode-", "opencode-", "crush-"] {
    for (name, messages) in corpus(prefix) {
      let conv = Conversation::new(&messages, Encoding::O200kBase);
      for (i, m) in messages.iter().enumerate() {
        let Some(id) = m.answers.first().map(String::as_str) else { continue };
        let Some(call) =
          messages[..i].iter().rev().flat_map(|c| &c.tool_calls).find(|c| c.id == id)
        else {
          continue;
        };
        let Some(&(_, kind)) = kinds.iter().find(|(tool, _)| *tool == call.name) else { continue };
        let args: serde_json::Value = serde_json::from_str(&call.arguments).expect("arguments");
        let path = args["file_path"].as_str().expect("file_path");
        let op = file_operation(&conv, i).unwrap_or_else(|| panic!("{name} #{i}: no operation"));
        assert_eq!((op.path.as_str(), op.kind), (path, kind), "{name} #{i}");
        let text = m.content_text();
        let reported = ["<tool_use_error>", "old_string not found", "File not found:"]
          .iter()
          .any(|p| text.trim_start().starts_with(p));
        if reported {
          assert!(op.failed, "{name} #{i}: {text}");
          failures += 1;
        }
        checked += 1;
      }
    }
  }
  if checked > 0 {
    assert!(checked >= 80 && failures >= 8, "{checked} checked, {failures} failures");
  }
}
