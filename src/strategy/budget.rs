//! `trimConversation`'s pipeline: rolling context's rules first (old tool outputs become
//! placeholders, long ones are cut, errors and small outputs are kept), then, if the request
//! still does not fit, a budget strategy on what they left.
//!
//! Nothing changes when the request already fits, as in nanocoder's `trimConversation`.
//!
//! The rolling pass may leave the current view of each file whole ([`Views`]): the read of a
//! file that no later change or covering read superseded, and a result about a modified file
//! ([`ContentPriority::RecentFileReads`] and [`ContentPriority::ModifiedFiles`]). Rolling
//! context turns every output older than `maxAge` steps into a placeholder; on real runs the
//! agent edits against views far older than that (docs/history/recall-rounds.md, fourth
//! round). The strategy after it may still shorten them.

use crate::analysis::classify::{classify_conversation, ClassifyOptions, ContentPriority};
use crate::analysis::file_tracker::FileTracker;
use crate::model::conversation::Conversation;
use crate::model::message::Message;
use crate::plan::{replaced_message, Action, Plan};
use crate::strategy::priority::PriorityTrim;
use crate::strategy::rolling::{truncate_old_tool_outputs_leaving, TruncationConfig};
use crate::strategy::Outcome;

/// Which results the rolling pass leaves whole as current views of files: as
/// [`classify_conversation`] ranks them with these options and tracker.
#[derive(Clone, Copy)]
pub struct Views<'v> {
  /// The classification's thresholds and markers.
  pub classify: &'v ClassifyOptions,
  /// What decides which files are modified (`None`: the conversation's own operations).
  pub tracker: Option<&'v FileTracker>,
}

impl Views<'_> {
  /// Whether each message of `conv` is a current view of a file.
  fn of(&self, conv: &Conversation<'_>) -> Vec<bool> {
    classify_conversation(conv, self.tracker, self.classify)
      .iter()
      .map(|c| {
        matches!(c.priority, ContentPriority::RecentFileReads | ContentPriority::ModifiedFiles)
      })
      .collect()
  }
}

/// Trims `conv` to `target` tokens: unchanged when it fits; else [`truncate_old_tool_outputs`]
/// with `rolling` (leaving `views` whole when given), and `strategy` on its result when that
/// still does not fit. The strategy's decisions win: a message it keeps keeps what the rolling
/// pass made of it; one it replaces or drops is replaced or dropped.
pub fn trim_after_rolling(
  conv: &Conversation<'_>,
  rolling: &TruncationConfig,
  views: Option<Views<'_>>,
  target: usize,
  strategy: impl FnOnce(&Conversation<'_>) -> PriorityTrim,
) -> PriorityTrim {
  let untouched = |plan: Plan| PriorityTrim {
    outcome: Outcome::new(conv, plan, target),
    classification: Vec::new(),
  };
  if conv.total_tokens() <= target {
    return untouched(Plan::keep_all(conv.len()));
  }
  // The current views stay whole: of a message of several results, those of its results.
  let rolled = truncate_old_tool_outputs_leaving(conv, rolling, |read| Some(views?.of(read)));
  if rolled.is_identity() {
    return strategy(conv);
  }
  if rolled.total_tokens(conv) <= target {
    return untouched(rolled);
  }
  let replaced: Vec<Option<Message>> = rolled
    .actions()
    .iter()
    .enumerate()
    .map(|(i, a)| match a {
      Action::Replace(r) => Some(replaced_message(conv.message(i), r)),
      Action::Keep | Action::Drop => None,
    })
    .collect();
  let refs = conv.messages().iter().zip(&replaced).map(|(m, r)| r.as_ref().unwrap_or(m)).collect();
  let after = Conversation::from_refs(refs, conv.encoding()).with_format(conv.format());
  let second = strategy(&after);
  let mut plan = Plan::keep_all(conv.len());
  for (i, action) in second.outcome.plan.actions().iter().enumerate() {
    match action {
      Action::Keep => {
        if let Action::Replace(r) = rolled.action(i) {
          plan.replace(i, (**r).clone());
        }
      }
      // A message the rolling pass shortened result by result keeps its texts where the
      // strategy's replacement keeps a result.
      Action::Replace(r) => plan.replace(
        i,
        match rolled.action(i) {
          Action::Replace(earlier) => r.after(earlier),
          Action::Keep | Action::Drop => (**r).clone(),
        },
      ),
      Action::Drop => plan.drop_message(i),
    }
  }
  for (at, message) in second.outcome.plan.insertions() {
    plan.insert_before(*at, message.clone());
  }
  PriorityTrim { outcome: Outcome::new(conv, plan, target), classification: second.classification }
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::strategy::priority::{trim_with_placeholders, PriorityOptions};
  use crate::strategy::rolling::truncate_old_tool_outputs;
  use crate::testing::{call, result};

  fn session(steps: usize) -> Vec<Message> {
    let mut m = vec![Message::text(Role::User, "do the task")];
    for k in 0..steps {
      let id = k.to_string();
      m.push(call(&id, "bash", r#"{"command":"make"}"#));
      m.push(result(&id, &format!("build line {k} of many\n").repeat(60)));
    }
    m.push(Message::text(Role::User, "go on"));
    m
  }

  fn priority(target: usize) -> impl FnOnce(&Conversation<'_>) -> PriorityTrim {
    move |c| {
      trim_with_placeholders(
        c,
        None,
        &PriorityOptions { target_tokens: target, ..Default::default() },
      )
    }
  }

  #[test]
  fn a_request_that_fits_is_left_alone() {
    let msgs = session(8);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let t = trim_after_rolling(
      &conv,
      &TruncationConfig::default(),
      None,
      conv.total_tokens(),
      priority(0),
    );
    assert!(t.outcome.plan.is_identity());
  }

  #[test]
  fn old_outputs_become_placeholders_before_the_strategy_runs() {
    let msgs = session(8);
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = TruncationConfig::default();
    let rolled = truncate_old_tool_outputs(&conv, &config);
    // A budget the rolling pass meets alone: its plan, untouched.
    let t = trim_after_rolling(&conv, &config, None, rolled.total_tokens(&conv), priority(0));
    assert_eq!(t.outcome.plan, {
      let mut p = rolled.clone();
      p.conform(&conv);
      p
    });
    // A tighter one: the strategy shortens the recent outputs too, keeping the old placeholders.
    let target = rolled.total_tokens(&conv) - 100;
    let t = trim_after_rolling(&conv, &config, None, target, priority(target));
    assert!(t.outcome.total_tokens <= target);
    for i in rolled.replaced() {
      assert!(matches!(t.outcome.plan.action(i), Action::Replace(_)), "{i}");
    }
    assert!(t.outcome.plan.replaced().len() > rolled.replaced().len());
    assert_eq!(t.outcome.total_tokens, t.outcome.plan.total_tokens(&conv));
  }

  #[test]
  fn the_current_view_of_a_file_outlives_max_age() {
    // The agent reads a.py whole, then runs eight builds: by rolling context's rules the read
    // is old and becomes a placeholder; as a view of a file it stays whole.
    let mut msgs = vec![
      Message::text(Role::User, "do the task"),
      call("r", "read_file", r#"{"path":"/w/a.py"}"#),
      result("r", &"def f(x):\n    return x\n".repeat(80)),
    ];
    msgs.extend(session(8).into_iter().skip(1));
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = TruncationConfig::default();
    let classify = ClassifyOptions::default();
    let views = Views { classify: &classify, tracker: None };
    let rolled = truncate_old_tool_outputs(&conv, &config);
    assert!(matches!(rolled.action(2), Action::Replace(_)), "rolling context's own rule");
    let target = rolled.total_tokens(&conv) + conv.tokens(2);
    let t = trim_after_rolling(&conv, &config, Some(views), target, priority(target));
    assert!(matches!(t.outcome.plan.action(2), Action::Keep));
    assert!(t.outcome.total_tokens <= target);
    // The old build outputs are placeholders all the same.
    assert!(matches!(t.outcome.plan.action(4), Action::Replace(_)));
    let without = trim_after_rolling(&conv, &config, None, target, priority(target));
    assert!(matches!(without.outcome.plan.action(2), Action::Replace(_)));
  }
}

#[cfg(test)]
mod parallel_tests {
  use super::*;
  use crate::model::tokens::{message_tokens, Encoding};
  use crate::strategy::priority::{trim_by_priority, PriorityOptions};
  use crate::strategy::rolling::truncate_old_tool_outputs;

  /// A message of two results that the rolling pass shortens one of (the other, an error report,
  /// it keeps) and the strategy then the other: the output keeps both shortenings.
  #[test]
  fn a_result_the_strategy_keeps_keeps_what_the_rolling_pass_made_of_it() {
    let lines = |p: &str| crate::testing::lines(p, 600);
    let value = serde_json::json!([
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "A", "name": "bash", "input": {"command": "make"}},
        {"type": "tool_use", "id": "B", "name": "bash", "input": {"command": "ls -R"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "A", "content": lines("Error: AAA"), "is_error": true},
        {"type": "tool_result", "tool_use_id": "B", "content": lines("BBB")}]},
      {"role": "assistant", "content": "ok"}
    ]);
    let (_, msgs) = crate::model::format::parse_messages(&value, None).unwrap();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = TruncationConfig { max_tokens_per_output: 300, ..TruncationConfig::default() };
    let rolled = truncate_old_tool_outputs(&conv, &config);
    let Action::Replace(first) = rolled.action(2) else { panic!("the rolling pass cuts B") };
    assert!(first.result_text(0).is_none() && first.result_text(1).is_some());
    let target = rolled.total_tokens(&conv) - 500;
    let options = PriorityOptions { target_tokens: target, ..Default::default() };
    let t =
      trim_after_rolling(&conv, &config, None, target, |c| trim_by_priority(c, None, &options));
    let Action::Replace(r) = t.outcome.plan.action(2) else { panic!("replaced") };
    assert!(r.result_text(0).is_some_and(|a| a.contains(" tokens cut ")), "the strategy cuts A");
    assert_eq!(r.result_text(1), first.result_text(1), "B as the rolling pass cut it");
    let after = crate::plan::replaced_message(&msgs[2], r);
    assert_eq!(r.tokens, message_tokens(&after, Encoding::O200kBase));
    assert!(t.outcome.total_tokens <= target);
  }

  /// The current view of a file read beside a build stays whole, the build's old output
  /// becomes its placeholder: the results of one message are left whole one by one.
  #[test]
  fn the_current_view_beside_an_old_output_stays_whole_alone() {
    use crate::testing::lines;
    let mut value = vec![
      serde_json::json!({"role": "user", "content": "fix a.py"}),
      serde_json::json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "r", "name": "read_file", "input": {"path": "/w/a.py"}},
        {"type": "tool_use", "id": "m", "name": "bash", "input": {"command": "make"}}]}),
      serde_json::json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "r", "content": lines("def f", 120)},
        {"type": "tool_result", "tool_use_id": "m", "content": lines("build", 120)}]}),
    ];
    for k in 0..8 {
      let id = format!("b{k}");
      value.push(serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "bash", "input": {"command": format!("make test{k}")}}]}));
      value.push(serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": lines(&format!("test{k}"), 60)}]}));
    }
    let (_, msgs) =
      crate::model::format::parse_messages(&serde_json::Value::Array(value), None).unwrap();
    let conv = Conversation::new(&msgs, Encoding::O200kBase);
    let config = TruncationConfig::default();
    let classify = ClassifyOptions::default();
    let views = Views { classify: &classify, tracker: None };
    let target = conv.total_tokens() - 100;
    let options = PriorityOptions { target_tokens: target, ..Default::default() };
    let t = trim_after_rolling(&conv, &config, Some(views), target, |c| {
      trim_by_priority(c, None, &options)
    });
    let Action::Replace(r) = t.outcome.plan.action(2) else {
      panic!("the build output is replaced")
    };
    assert_eq!(r.result_text(0), None, "the view of a.py stays whole");
    assert!(r.result_text(1).is_some_and(|p| p.starts_with("[content truncated - ")), "{r:?}");
    assert!(t.outcome.total_tokens <= target);
  }
}
