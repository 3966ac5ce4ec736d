//! What the integration tests share: the bundled real transcripts.

use context_trim::message::{messages_from_json, Message};

/// The messages of `samples/transcripts/<name>`.
pub fn load(name: &str) -> Vec<Message> {
  let path = format!("{}/samples/transcripts/{name}", env!("CARGO_MANIFEST_DIR"));
  let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
  let value: serde_json::Value = serde_json::from_str(&text).expect("a JSON transcript");
  messages_from_json(&value).expect("valid messages")
}

/// Every bundled transcript, by file name: (name, messages).
#[allow(dead_code, reason = "not every test crate reads them all")]
pub fn transcripts() -> Vec<(String, Vec<Message>)> {
  let dir = format!("{}/samples/transcripts", env!("CARGO_MANIFEST_DIR"));
  let mut names: Vec<String> = std::fs::read_dir(dir)
    .expect("the transcripts directory")
    .filter_map(|e| e.ok()?.file_name().into_string().ok())
    .filter(|n| n.ends_with(".json"))
    .collect();
  names.sort();
  names.into_iter().map(|n| (n.clone(), load(&n))).collect()
}
