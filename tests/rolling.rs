//! Rolling context on the bundled real agent transcripts.

use context_trim::analysis::detect::is_error_output;
use context_trim::strategy::rolling::{rules, truncate_old_tool_outputs, Rule, TruncationConfig};
use context_trim::{Action, Conversation, Encoding};

mod common;
use common::{load, transcripts};

/// The figures docs/rolling-context.md gives for openhands-ponyc-4595.json with the defaults.
#[test]
fn ponyc_4595_with_the_defaults() {
  let msgs = load("openhands-ponyc-4595.json");
  let conv = Conversation::new(&msgs, Encoding::O200kBase);
  let plan = truncate_old_tool_outputs(&conv, &TruncationConfig::default());
  assert_eq!(conv.current_step(), 22);
  assert_eq!(conv.total_tokens(), 29_476);
  assert_eq!(plan.total_tokens(&conv), 5_522);
  assert_eq!(plan.replaced(), vec![3, 5, 7, 9, 11, 15, 19, 21, 27, 29]);
  let r = rules(&conv, &TruncationConfig::default());
  let count = |rule| r.iter().filter(|&&x| x == rule).count();
  assert_eq!(
    [Rule::Placeholder, Rule::Cut, Rule::Error, Rule::Small, Rule::Consumed, Rule::Quoted]
      .map(count),
    [10, 0, 6, 6, 0, 0]
  );
  // The three 7,087-token views of parser.c, 15 to 19 steps old, are the bulk of the saving.
  assert_eq!([11, 15, 19].map(|i| conv.tokens(i)), [7_087; 3]);
}

#[test]
fn every_transcript_keeps_structure_errors_and_determinism() {
  for (name, msgs) in transcripts() {
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = TruncationConfig::default();
    let plan = truncate_old_tool_outputs(&conv, &config);
    assert_eq!(plan, truncate_old_tool_outputs(&conv, &config), "{name}: deterministic");
    assert!(plan.dropped().is_empty(), "{name}: nothing dropped");
    assert!(plan.check_units(&conv).is_ok(), "{name}");
    assert!(plan.total_tokens(&conv) <= conv.total_tokens(), "{name}");
    for i in plan.replaced() {
      let m = &msgs[i];
      assert!(m.is_tool_result(), "{name}: message {i} is a tool result");
      assert!(!m.is_error && !is_error_output(&m.content_text()), "{name}: {i} is no error");
      if let Action::Replace(r) = plan.action(i) {
        assert!(
          conv.age(i) > config.max_age || r.tokens <= conv.tokens(i),
          "{name}: {i} is old or shortened"
        );
      }
    }
  }
}
