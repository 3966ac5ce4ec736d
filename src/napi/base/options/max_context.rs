//! The role caps' options ({@link MaxContextTokensOptions}), shared by `applyMaxContextTokens`
//! and `CacheAwareTrimmer`.

use napi_derive::napi;

use crate::error::Result as CoreResult;
use crate::model::message::Role;
use crate::model::tokens::Encoding;
use crate::strategy::roles::MaxContextOptions;

use super::super::saturate;
use super::{integer_option, Nested};

/// The options objects inside [`MaxContextTokensOptions`].
pub(crate) const MAX_CONTEXT_NESTED: &[Nested] = &[Nested { name: "minKeep", fields: &[] }];

/// Options of {@link applyMaxContextTokens}.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct MaxContextTokensOptions {
  /// The order in which roles are dropped when over the cap: **the role listed first is dropped
  /// first**. `['assistant', 'user', 'system']` drops assistant messages first, then user
  /// messages, then system messages. Roles not listed are dropped last. Within a role the
  /// oldest goes first. A tool call and its results count as `assistant`. Without it, messages
  /// are dropped oldest first whatever their role.
  /// @default undefined (oldest first)
  #[napi(ts_type = "Array<'system' | 'developer' | 'user' | 'assistant' | 'tool'>")]
  pub truncation_priority: Option<Vec<String>>,
  /// The same as `truncationPriority`, under a name that cannot be misread: listed first,
  /// dropped first. Giving both with different lists is an error.
  /// @default undefined (oldest first)
  #[napi(ts_type = "Array<'system' | 'developer' | 'user' | 'assistant' | 'tool'>")]
  pub drop_order: Option<Vec<String>>,
  /// Never drop the first `system` (or `developer`) message.
  /// @default false
  pub keep_first_system: Option<bool>,
  /// For each role, keep at least its last N messages, e.g. `{ user: 2 }`.
  /// @default {}
  pub min_keep: Option<MinKeep>,
  /// A model name that picks the encoding (see {@link TokenOptions.model}).
  pub model: Option<String>,
  /// The encoding, which wins over `model`.
  /// @default 'o200k_base'
  #[napi(ts_type = "TokenEncoding")]
  pub encoding: Option<String>,
  /// `false` counts each message as its content, tool-call names and arguments only, with no
  /// reply priming (CursorClaw's budget); `true` adds the chat framing of the
  /// OpenAI cookbook (3 tokens a message, its role, its name, 1 per tool call, and 3 of reply
  /// priming a request), which is what OpenAI bills. See README's token counting.
  /// @default true
  pub framing: Option<bool>,
  /// The message format (see {@link TokenOptions.format}).
  /// @default 'auto'
  #[napi(ts_type = "MessageFormat")]
  pub format: Option<String>,
}

/// Per role, how many of its last messages {@link applyMaxContextTokens} keeps at least.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub struct MinKeep {
  /// Last `system` messages to keep.
  /// @default 0
  pub system: Option<f64>,
  /// Last `developer` messages to keep.
  /// @default 0
  pub developer: Option<f64>,
  /// Last `user` messages to keep.
  /// @default 0
  pub user: Option<f64>,
  /// Last `assistant` messages to keep (with their tool results).
  /// @default 0
  pub assistant: Option<f64>,
  /// Last `tool` messages to keep (with their calls).
  /// @default 0
  pub tool: Option<f64>,
}

/// The options of a role cap, every default filled in (a `CacheAwareTrimmer`'s `roles`).
#[napi(object, object_from_js = false)]
pub struct ResolvedMaxContextTokensOptions {
  /// The roles in the order they are dropped, the first listed first (empty: oldest first).
  #[napi(ts_type = "Array<'system' | 'developer' | 'user' | 'assistant' | 'tool'>")]
  pub drop_order: Vec<String>,
  /// Whether the first `system` (or `developer`) message is never dropped.
  pub keep_first_system: bool,
  /// Per role, how many of its last messages are kept at least.
  pub min_keep: ResolvedMinKeep,
}

/// Per role, how many of its last messages are kept at least, every role filled in.
#[napi(object, object_from_js = false)]
pub struct ResolvedMinKeep {
  /// Last `system` messages kept.
  pub system: u32,
  /// Last `developer` messages kept.
  pub developer: u32,
  /// Last `user` messages kept.
  pub user: u32,
  /// Last `assistant` messages kept.
  pub assistant: u32,
  /// Last `tool` messages kept.
  pub tool: u32,
}

impl From<&MaxContextOptions> for ResolvedMaxContextTokensOptions {
  fn from(o: &MaxContextOptions) -> Self {
    let kept = |role: Role| {
      saturate(o.min_keep.iter().filter(|(r, _)| *r == role).map(|(_, n)| *n).max().unwrap_or(0))
    };
    ResolvedMaxContextTokensOptions {
      drop_order: o.drop_order.iter().map(|r| r.as_str().to_string()).collect(),
      keep_first_system: o.keep_first_system,
      min_keep: ResolvedMinKeep {
        system: kept(Role::System),
        developer: kept(Role::Developer),
        user: kept(Role::User),
        assistant: kept(Role::Assistant),
        tool: kept(Role::Tool),
      },
    }
  }
}

impl MaxContextTokensOptions {
  /// The core options and encoding.
  pub(crate) fn normalize(&self) -> CoreResult<(MaxContextOptions, Encoding)> {
    let drop_order = MaxContextOptions::drop_order_from(
      self.truncation_priority.as_deref(),
      self.drop_order.as_deref(),
    )?;
    let mut min_keep = Vec::new();
    if let Some(m) = &self.min_keep {
      for (role, count) in [
        (Role::System, m.system),
        (Role::Developer, m.developer),
        (Role::User, m.user),
        (Role::Assistant, m.assistant),
        (Role::Tool, m.tool),
      ] {
        if let Some(c) = count {
          let name = format!("minKeep.{}", role.as_str());
          min_keep.push((role, integer_option(&name, c, 0.0)?));
        }
      }
    }
    let options = MaxContextOptions {
      drop_order,
      keep_first_system: self.keep_first_system.unwrap_or(false),
      min_keep,
    };
    let encoding = Encoding::resolve(self.model.as_deref(), self.encoding.as_deref())?
      .with_framing(self.framing);
    Ok((options, encoding))
  }
}
