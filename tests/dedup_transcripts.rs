//! Deduplication and pruning on the real transcripts: what is superseded, what it saves, and
//! the figures docs/deduplication.md and docs/context-pruner.md show.

use context_trim::model::message::messages_from_json;
use context_trim::output::validate::validate_plan;
use context_trim::plan::Action;
use context_trim::strategy::dedup::{deduplicate, supersedes, DedupOptions};
use context_trim::strategy::pruner::{prune, PrunerConfig};
use context_trim::{Conversation, Encoding, Format, Message};

fn transcript(name: &str) -> Vec<Message> {
  let path = format!("{}/samples/transcripts/{name}", env!("CARGO_MANIFEST_DIR"));
  let text = std::fs::read_to_string(path).expect("readable transcript");
  messages_from_json(&serde_json::from_str(&text).expect("JSON")).expect("valid messages")
}

const NAMES: [&str; 7] = [
  "openhands-ponyc-4593.json",
  "openhands-ponyc-4595.json",
  "openhands-resolver-dark-mode.json",
  "openhands-sdk-hello-world.json",
  "sweagent-ctf-i-got-id.json",
  "sweagent-ctf-katy.json",
  "sweagent-marshmallow-1867-fc.json",
];

#[test]
fn each_view_of_the_file_viewed_several_times_in_ponyc_4593_names_the_view_that_superseded_it() {
  let messages = transcript("openhands-ponyc-4593.json");
  let conv = Conversation::new(&messages, Encoding::O200kBase);
  let d = deduplicate(&conv, &DedupOptions::default());
  let cli = "/workspace/ponylang__ponyc__0.1/packages/cli/cli.pony";
  let found: Vec<(usize, usize, &str, &str, usize)> = d
    .superseded
    .iter()
    .map(|s| (s.index, s.superseded_by, s.path.as_str(), s.noun, s.step))
    .collect();
  // The two range views of command_parser.pony (lines 100-102 and 101-102) are superseded by
  // the edit whose result shows the edited lines around them: a view of them as they are now.
  let parser = "/workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony";
  assert_eq!(
    found,
    vec![
      (25, 28, cli, "read", 13),
      (28, 34, cli, "read", 16),
      (32, 34, cli, "read", 16),
      (50, 62, parser, "edit", 30),
      (56, 62, parser, "edit", 30)
    ]
  );
  assert_eq!(
    supersedes(&d.superseded),
    vec![(28, vec![25]), (34, vec![28, 32]), (62, vec![50, 56])]
  );
  let Action::Replace(r) = d.plan.action(25) else { panic!("25 is not replaced") };
  assert_eq!(&*r.content, format!("[superseded by a newer read of {cli} at step 13]"));
  let Action::Replace(r) = d.plan.action(28) else { panic!("28 is not replaced") };
  assert_eq!(&*r.content, format!("[superseded by a newer read of {cli} at step 16]"));
  assert_eq!(d.saved_tokens, 3128);
  assert_eq!(d.total_tokens, conv.total_tokens() - 3128);
}

#[test]
fn every_transcript_deduplicates_validly_and_deterministically() {
  let mut saved = Vec::new();
  for name in NAMES {
    let messages = transcript(name);
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    let d = deduplicate(&conv, &DedupOptions::default());
    assert_eq!(validate_plan(&messages, &d.plan, Format::OpenAi), vec![], "{name}");
    assert!(d.plan.dropped().is_empty(), "{name}");
    assert_eq!(
      d.plan.replaced(),
      d.superseded.iter().map(|s| s.index).collect::<Vec<_>>(),
      "{name}"
    );
    assert_eq!(d.saved_tokens, conv.total_tokens() - d.plan.total_tokens(&conv), "{name}");
    // Each placeholder names a later result: kept, or a placeholder naming a later one still.
    for s in &d.superseded {
      let mut by = s.superseded_by;
      while let Action::Replace(_) = d.plan.action(by) {
        let next = d.superseded.iter().find(|n| n.index == by).expect("a placeholder's finding");
        assert!(next.superseded_by > by, "{name}: {next:?}");
        by = next.superseded_by;
      }
      assert!(s.superseded_by > s.index && matches!(d.plan.action(by), Action::Keep), "{name}");
    }
    assert_eq!(deduplicate(&conv, &DedupOptions::default()), d, "{name}: deterministic");
    saved.push((name, conv.total_tokens(), d.saved_tokens, d.superseded.len()));
  }
  assert_eq!(
    saved,
    vec![
      ("openhands-ponyc-4593.json", 15187, 3128, 5),
      ("openhands-ponyc-4595.json", 29476, 14156, 3),
      ("openhands-resolver-dark-mode.json", 21157, 2513, 4),
      ("openhands-sdk-hello-world.json", 3717, 0, 0),
      ("sweagent-ctf-i-got-id.json", 14091, 74, 1),
      ("sweagent-ctf-katy.json", 8681, 895, 5),
      ("sweagent-marshmallow-1867-fc.json", 8026, 82, 2),
    ]
  );
}

#[test]
fn the_threshold_gates_deduplication() {
  let messages = transcript("openhands-ponyc-4595.json");
  let conv = Conversation::new(&messages, Encoding::O200kBase);
  let total = conv.total_tokens();
  for (window, applied) in
    [(200_000, false), (total * 4 / 3 + 1, false), (total * 4 / 3, true), (total, true)]
  {
    let threshold_tokens = DedupOptions::threshold_from(Some(window), None).expect("valid");
    let d = deduplicate(&conv, &DedupOptions { threshold_tokens, ..Default::default() });
    assert_eq!(d.applied, applied, "window {window}");
    assert_eq!(d.plan.is_identity(), !applied, "window {window}");
  }
}

#[test]
fn superseded_views_are_stale_so_pruning_ponyc_4595_meets_the_target() {
  // parser.c is edited in this session; two of its three 7,087-token views are superseded by
  // the third, so only the latest is modified-file content the pruner keeps (the rule
  // deduplicateToolResults applies).
  let messages = transcript("openhands-ponyc-4595.json");
  let conv = Conversation::new(&messages, Encoding::O200kBase);
  let window = conv.total_tokens() * 100 / 85;
  let alone = prune(&conv, &PrunerConfig::default(), window, false);
  assert_eq!((alone.after_tokens, alone.over_budget), (15105, false));
  let d = deduplicate(&conv, &DedupOptions::default());
  assert_eq!(d.total_tokens, 15320);
  assert!(d.total_tokens <= alone.target_tokens, "nothing left to prune");
}

#[test]
fn pruning_every_transcript_keeps_the_recent_messages_and_validates() {
  let config = PrunerConfig::default();
  let mut figures = Vec::new();
  for name in NAMES {
    let messages = transcript(name);
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    // A window the transcript fills to 85%: a normal prune to 50%.
    let window = conv.total_tokens() * 100 / 85;
    let p = prune(&conv, &config, window, false);
    assert_eq!(validate_plan(&messages, &p.plan, Format::OpenAi), vec![], "{name}");
    for i in messages.len().saturating_sub(config.keep_recent_messages)..messages.len() {
      assert!(!p.plan.is_dropped(i), "{name}: recent message {i}");
    }
    assert_eq!(p.after_tokens, p.plan.total_tokens(&conv), "{name}");
    assert_eq!(p.over_budget, p.after_tokens > p.target_tokens, "{name}");
    assert_eq!(p.archived.len() + p.kept.len(), messages.len(), "{name}");
    assert_eq!(prune(&conv, &config, window, false), p, "{name}: deterministic");
    figures.push((name, p.before_tokens, p.after_tokens, p.target_tokens, p.archived.len()));
  }
  // The figures of docs/context-pruner.md: (before, after, target, archived messages).
  assert_eq!(
    figures,
    vec![
      ("openhands-ponyc-4593.json", 15187, 8930, 8933, 32),
      ("openhands-ponyc-4595.json", 29476, 15105, 17338, 4),
      ("openhands-resolver-dark-mode.json", 21157, 12437, 12445, 20),
      ("openhands-sdk-hello-world.json", 3717, 3614, 2186, 2),
      ("sweagent-ctf-i-got-id.json", 14091, 8268, 8288, 20),
      ("sweagent-ctf-katy.json", 8681, 5470, 5106, 20),
      ("sweagent-marshmallow-1867-fc.json", 8026, 4652, 4721, 6),
    ]
  );
}
