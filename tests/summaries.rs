//! Summaries of dropped messages on the real transcripts: hand-checked facts, the budget,
//! determinism, stability as the dropped set grows, and trimming with an inserted summary.

use context_trim::model::tokens::count_tokens;
use context_trim::output::validate::validate_plan;
use context_trim::strategy::priority::{trim_by_priority, trim_with_placeholders, PriorityOptions};
use context_trim::strategy::summarized::{trim_with_summary, SummaryOptions};
use context_trim::strategy::summary::{
  summarize, Digest, Section, DEFAULT_MAX_SUMMARY_TOKENS, SUMMARY_HEADER,
};
use context_trim::{Conversation, Encoding, Format};

mod common;
use common::{load, transcripts};

/// openhands-ponyc-4595.json, every message after the system prompt and the task dropped: the
/// files, commands and errors below were read off the transcript by hand.
#[test]
fn ponyc_4595_summary_has_the_hand_checked_facts() {
  let msgs = load("openhands-ponyc-4595.json");
  let conv = Conversation::new(&msgs, Encoding::O200kBase);
  let dropped: Vec<usize> = (2..msgs.len()).collect();
  let d = Digest::extract(&conv, &dropped);
  let parser = "/workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c";
  // Message 29: `The file …/parser.c has been edited.`; views in 11, 15, 19, 21, 23 and 27.
  assert_eq!(d.items(Section::FilesEdited), [parser]);
  assert_eq!(d.items(Section::FilesRead), [parser]);
  assert!(d.items(Section::FilesCreated).is_empty() && d.items(Section::FilesDeleted).is_empty());
  // The 13 execute_bash calls with the exit code OpenHands appended; `think` is no command.
  assert_eq!(
    d.items(Section::Commands),
    [
      "`ls -l /workspace/ponylang__ponyc__0.1` → exit 0",
      "`ls -l /workspace/ponylang__ponyc__0.1/src` → exit 0",
      "`ls -l /workspace/ponylang__ponyc__0.1/src/libponyc` → exit 0",
      "`ls -l /workspace/ponylang__ponyc__0.1/src/libponyc/ast` → exit 0",
      "`grep -n \"DECL(pattern);\" /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c` → exit 0",
      "`grep -n \"DEF(pattern);\" /workspace/ponylang__ponyc__0.1/src/libponyc/ast/parser.c` → exit 0",
      "`echo \"int main() { return 0; }\" > /workspace/test.c` → exit 0",
      "`cd /workspace && echo \"type CrashIt is (I32 | (I32, (I32))) actor Main new create(env: Env) => let x: CrashIt = 123 mat…` → exit 127",
      "`cd /workspace/ponylang__ponyc__0.1 && make` → exit 2",
      "`make clean && make` → exit 2",
      "`cd /workspace && ./ponylang__ponyc__0.1/ponyc test.pony -o . && ./test` → exit 127",
      "`find /workspace/ponylang__ponyc__0.1 -name ponyc` → exit 0",
      "`cd /workspace && /workspace/ponylang__ponyc__0.1/build/bin/ponyc test.pony -o . && ./test` → exit 127",
    ]
  );
  // 25: the failed str_replace; 33, 39, 43: the missing compiler; 35, 37: make's failure.
  assert_eq!(
    d.items(Section::Errors),
    [
      // The error's first line: the old_str it quotes spans several lines.
      format!("{parser}: ERROR: No replacement was performed, old_str `DEF(idseqsingle);"),
      "`cd /workspace && echo \"type CrashIt is (I32 | (I32, (I32)))…`: bash: ponyc: command not found".to_string(),
      "`cd /workspace/ponylang__ponyc__0.1 && make`: make: *** [Makefile:192: build] Error 2".to_string(),
      "`make clean && make`: make: *** [Makefile:192: build] Error 2".to_string(),
      "`cd /workspace && ./ponylang__ponyc__0.1/ponyc test.pony -o…`: bash: ./ponylang__ponyc__0.1/ponyc: No such file or directory".to_string(),
      "`cd /workspace && /workspace/ponylang__ponyc__0.1/build/bin/…`: bash: /workspace/ponylang__ponyc__0.1/build/bin/ponyc: No such file or directory".to_string(),
    ]
  );
  assert!(d.items(Section::UserRequests).is_empty(), "the task is not dropped");
  assert!(d.items(Section::Notes).contains(
    &"The `idseqsingle` rule has been modified to set the `AST_FLAG_IN_PARENS` flag.".to_string()
  ));
  // Within the default budget, the edit and the newest commands and errors stay.
  let (cut, text) = d.bounded(DEFAULT_MAX_SUMMARY_TOKENS, Encoding::O200kBase);
  assert!(count_tokens(&text, Encoding::O200kBase) <= DEFAULT_MAX_SUMMARY_TOKENS);
  assert!(text.starts_with(SUMMARY_HEADER));
  assert_eq!(cut.items(Section::FilesEdited), [parser]);
  assert_eq!(
    cut.items(Section::Commands).last().map(String::as_str),
    Some("`cd /workspace && /workspace/ponylang__ponyc__0.1/build/bin/ponyc test.pony -o . && ./test` → exit 127")
  );
  assert!(cut.omitted(Section::Commands) > 0 && cut.omitted(Section::Notes) > 0);
}

#[test]
fn summaries_are_deterministic_bounded_and_read_back() {
  for (name, msgs) in transcripts() {
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let dropped: Vec<usize> = (1..msgs.len()).collect();
    let d = Digest::extract(&conv, &dropped);
    assert_eq!(d, Digest::extract(&conv, &dropped), "{name}");
    for max in [64, 150, 500, 2000] {
      let (cut, text) = d.bounded(max, Encoding::O200kBase);
      assert!(count_tokens(&text, Encoding::O200kBase) <= max, "{name} {max}");
      assert_eq!(Digest::parse(&text).as_ref(), Some(&cut), "{name} {max}");
      // A summary read back and written again within the same budget is the same text.
      assert_eq!(cut.bounded(max, Encoding::O200kBase).1, text, "{name} {max}");
      assert_eq!(summarize(&conv, &dropped, max), text, "{name} {max}");
    }
  }
}

/// As the dropped set grows (the oldest messages first, as an agent's history is trimmed turn
/// after turn), every line of the earlier summary is still in the later one, in order, as long
/// as the budget holds everything.
#[test]
fn a_growing_dropped_set_keeps_the_earlier_lines() {
  for (name, msgs) in transcripts() {
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let mut previous: Option<String> = None;
    for k in 2..=msgs.len() {
      let dropped: Vec<usize> = (1..k).collect();
      let text = Digest::extract(&conv, &dropped).render();
      if let Some(before) = &previous {
        let mut later = text.lines();
        for line in before.lines().filter(|l| l.starts_with("- ")) {
          assert!(later.any(|l| l == line), "{name} k={k}: lost {line:?}");
        }
      }
      previous = Some(text);
    }
  }
}

#[test]
fn priority_trimming_with_an_inserted_summary_stays_valid_and_within_budget() {
  let options =
    SummaryOptions { max_tokens: DEFAULT_MAX_SUMMARY_TOKENS, insert: true, reserve_max: false };
  for (name, msgs) in transcripts() {
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    for share in [25, 50, 75] {
      let target = conv.total_tokens() * share / 100;
      for placeholders in [false, true] {
        let run = |t: usize| {
          let o = PriorityOptions { target_tokens: t, ..PriorityOptions::default() };
          if placeholders {
            trim_with_placeholders(&conv, None, &o)
          } else {
            trim_by_priority(&conv, None, &o)
          }
        };
        let (t, summary) = trim_with_summary(&conv, target, &options, run);
        let label = format!("{name} {share}% placeholders={placeholders}");
        let outcome = &t.outcome;
        assert!(outcome.total_tokens <= target || outcome.over_budget, "{label}");
        assert_eq!(outcome.total_tokens, outcome.plan.total_tokens(&conv), "{label}");
        assert_eq!(validate_plan(&msgs, &outcome.plan, Format::OpenAi), vec![], "{label}");
        let Some(summary) = summary else {
          assert!(outcome.dropped.is_empty(), "{label}");
          continue;
        };
        assert!(summary.tokens <= DEFAULT_MAX_SUMMARY_TOKENS, "{label}");
        assert_eq!(outcome.plan.insertions().len(), 1, "{label}");
        assert_eq!(summary.sources, outcome.dropped, "{label}");
        // The same call gives the same text.
        let (_, again) = trim_with_summary(&conv, target, &options, run);
        assert_eq!(again.map(|s| s.text), Some(summary.text), "{label}");
      }
    }
  }
}

/// The example of docs/summaries.md: sweagent-ctf-i-got-id.json at half its size.
#[test]
fn the_documented_example() {
  let msgs = load("sweagent-ctf-i-got-id.json");
  let conv = Conversation::new(&msgs, Encoding::O200kBase);
  assert_eq!(conv.total_tokens(), 14_091);
  let target = conv.total_tokens() / 2;
  let run = |t: usize| {
    trim_by_priority(
      &conv,
      None,
      &PriorityOptions { target_tokens: t, ..PriorityOptions::default() },
    )
  };
  let options =
    SummaryOptions { max_tokens: DEFAULT_MAX_SUMMARY_TOKENS, insert: true, reserve_max: false };
  let (t, summary) = trim_with_summary(&conv, target, &options, run);
  let summary = summary.expect("a summary");
  assert_eq!((target, t.outcome.total_tokens, t.outcome.dropped.len()), (7_045, 7_028, 22));
  assert_eq!(msgs.len() - t.outcome.dropped.len() + 1, 22);
  assert_eq!((summary.inserted_before, summary.tokens), (Some(1), 499));
  let plain = run(target);
  assert_eq!((plain.outcome.total_tokens, msgs.len() - plain.outcome.dropped.len()), (7_032, 24));
  let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/summaries.md"))
    .expect("docs/summaries.md");
  let example = doc.split("## Example").nth(1).expect("the example section");
  let block = example.split("```text\n").nth(1).and_then(|b| b.split("\n```").next());
  assert_eq!(block, Some(summary.text.as_str()));
}
