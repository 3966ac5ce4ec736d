//! Re-plan points: how a stateless trim keeps its decisions while the history grows, so that a
//! provider's prefix cache keeps what it cached.
//!
//! An agent calls a trim before every model call, each time on a history one turn longer. A
//! trim that plans the whole history again each time cuts or drops one more early unit each
//! call, which rewrites the request from there: trimming on every call then costs two to six
//! times sending everything (docs/prompt-caching.md). Here the history is planned only up to
//! its last **re-plan point**, with the budget less one `step`; what came after is appended
//! whole. While the history grows by less than a `step`, the point stays where it is, so the
//! planned part, and the text of every decision in it, is the same as the call before: the
//! request only grows at its end, as when nothing is trimmed.
//!
//! The points depend on the messages before them alone, so no state is kept between calls:
//! point `k` is the first unit boundary at which the history's tokens reach `k × step`. A unit
//! boundary is an index that no call and its results straddle. What came after the last point
//! is less than a step (the history ends on a unit boundary), so the request fits the budget
//! whenever the planned part reaches its smaller one; when it cannot shrink that far, the
//! whole history is planned as before, and the smaller request of the two is sent.

use crate::model::conversation::Conversation;

/// The last re-plan point of `conv` for a `step` of tokens: the length of the prefix a
/// stateless trim plans, the rest being appended whole (the whole history when it ends on a
/// point). `None` when there is none (the history is shorter than a step) or `step` is 0.
pub fn last_point(conv: &Conversation<'_>, step: usize) -> Option<usize> {
  if step == 0 {
    return None;
  }
  let n = conv.len();
  // `reach`: one past the last member of the units that start before `i`; `i` is a unit
  // boundary when nothing reaches past it.
  let mut reach = 0;
  let mut tokens = 0;
  let mut epoch = 0;
  let mut point = None;
  for i in 0..=n {
    if i > 0 && reach <= i {
      let e = tokens / step;
      if e > epoch {
        (epoch, point) = (e, Some(i));
      }
    }
    if i == n {
      break;
    }
    let unit = &conv.units()[conv.unit_of(i)];
    if unit.first() == i {
      reach = reach.max(unit.members.last().map_or(i, |&last| last) + 1);
    }
    tokens += conv.tokens(i);
  }
  point
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::model::message::{Message, Role};
  use crate::model::tokens::Encoding;
  use crate::testing::{call, result};

  fn conversation() -> Vec<Message> {
    let mut messages = vec![Message::text(Role::System, "You are a coding agent.")];
    for k in 0..12 {
      messages.push(Message::text(Role::User, format!("step {k}: {}", "word ".repeat(40))));
      messages.push(call(&k.to_string(), "read_file", r#"{"path":"/w/a.ts"}"#));
      messages.push(result(&k.to_string(), &"const a = 1;\n".repeat(30)));
    }
    messages
  }

  #[test]
  fn a_point_stays_while_the_history_grows_by_less_than_a_step() {
    let messages = conversation();
    let all = Conversation::new(&messages, Encoding::O200kBase);
    let step = all.total_tokens() / 5;
    let mut previous: Option<usize> = None;
    let mut moves = 0;
    for n in 2..=messages.len() {
      let conv = Conversation::new(&messages[..n], Encoding::O200kBase);
      let point = last_point(&conv, step);
      if let Some(p) = point {
        assert!(p <= n, "a point lies within the history");
        let after: usize = (p..n).map(|i| conv.tokens(i)).sum();
        assert!(after < step, "less than a step comes after the last point");
        // A point never lands between a call and its result.
        assert!(
          p == n || !conv.shape(p).is_tool_result(),
          "point {p} splits a call from its result"
        );
      }
      if point != previous {
        moves += 1;
        if let (Some(p), Some(q)) = (previous, point) {
          assert!(q > p, "points only move forward as the history grows");
        }
      }
      previous = point;
    }
    assert!((3..=7).contains(&moves), "about one move a step, got {moves}");
  }

  #[test]
  fn no_point_without_a_step() {
    let messages = conversation();
    let conv = Conversation::new(&messages, Encoding::O200kBase);
    assert_eq!(last_point(&conv, 0), None);
    assert_eq!(last_point(&conv, conv.total_tokens() * 2), None, "shorter than a step");
  }
}
