//! What the integration tests share: the bundled real transcripts.

use context_trim::analysis::classify::{classify_conversation, ClassifyOptions};
use context_trim::model::message::{messages_from_json, Message};
use context_trim::{ContextWindow, Conversation, Encoding, Format};

/// The messages of the transcript at `path` (an OpenAI Chat Completions array).
fn load_path(path: &str) -> Vec<Message> {
  let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
  let value: serde_json::Value = serde_json::from_str(&text).expect("a JSON transcript");
  messages_from_json(&value).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The messages of `samples/transcripts/<name>`.
#[allow(dead_code, reason = "not every test crate reads one by name")]
pub fn load(name: &str) -> Vec<Message> {
  load_path(&format!("{}/samples/transcripts/{name}", env!("CARGO_MANIFEST_DIR")))
}

/// Every transcript of the folder `dir` (relative to the crate) whose file name starts with
/// `prefix`, by file name and in its order: (name, messages); `None` without the folder.
#[allow(dead_code, reason = "not every test crate reads a folder")]
pub fn transcripts_in(dir: &str, prefix: &str) -> Option<Vec<(String, Vec<Message>)>> {
  let dir = format!("{}/{dir}", env!("CARGO_MANIFEST_DIR"));
  let mut names: Vec<String> = std::fs::read_dir(&dir)
    .ok()?
    .filter_map(|e| e.ok()?.file_name().into_string().ok())
    .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
    .collect();
  names.sort();
  Some(names.into_iter().map(|n| (n.clone(), load_path(&format!("{dir}/{n}")))).collect())
}

/// Every bundled transcript, by file name: (name, messages).
#[allow(dead_code, reason = "not every test crate reads them all")]
pub fn transcripts() -> Vec<(String, Vec<Message>)> {
  transcripts_in("samples/transcripts", "").expect("the transcripts directory")
}

/// Grows a [`ContextWindow`] one message at a time and checks, after every `every`-th message
/// and the last, that its conversation is the one-pass analysis of the same messages: counts,
/// steps, units, pairs and totals.
#[allow(dead_code, reason = "not every test crate grows windows")]
pub fn check_window_growth(messages: &[Message], every: usize) -> Result<(), String> {
  let mut window = ContextWindow::new(Encoding::O200kBase, Format::OpenAi);
  for (k, m) in messages.iter().enumerate() {
    window.push(m);
    if k % every != 0 && k + 1 != messages.len() {
      continue;
    }
    let whole = Conversation::new(&messages[..=k], Encoding::O200kBase);
    let grown = window.conversation();
    let same = grown.all_tokens() == whole.all_tokens()
      && grown.steps() == whole.steps()
      && grown.units() == whole.units()
      && grown.current_step() == whole.current_step()
      && grown.total_tokens() == whole.total_tokens()
      && window.total_tokens() == whole.total_tokens()
      && (0..=k).all(|i| {
        grown.unit_of(i) == whole.unit_of(i) && grown.answered_call(i) == whole.answered_call(i)
      });
    if !same {
      return Err(format!("the window differs from the whole conversation after message {k}"));
    }
    // The analysis the window carries (file operations, supersessions, the split view of
    // messages of several results) classifies as a fresh one.
    let options = ClassifyOptions::default();
    let carried = window.analysed(|conv| classify_conversation(conv, None, &options));
    if carried != classify_conversation(&whole, None, &options) {
      return Err(format!(
        "the window's carried analysis differs from a fresh one after message {k}"
      ));
    }
  }
  Ok(())
}
