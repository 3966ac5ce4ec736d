'use strict'
// context-trim/cursorclaw: CursorClaw's `src/max-context-tokens.ts` (seed 002) under its own
// names, counting as CursorClaw counts: ceil(chars / 4) of each message's content, with no
// chat framing. An app switches its import and keeps its call sites and its tests. Every
// trimming decision is the library's; only the counting defaults differ from `context-trim`'s.
// See docs/migrating.md#cursorclaw.
const core = require('../index.js')

/**
 * The options this entry point's counting adds to those given: CursorClaw's budget
 * (`encoding: 'approximate'`, `framing: false`), each only where the caller chose nothing
 * (a `model` picks the encoding, so it is not overridden by `'approximate'`).
 */
function cursorClawCounting(options) {
  const counting = { encoding: 'approximate', framing: false }
  if (options == null) return counting
  if (Array.isArray(options)) return { truncationPriority: options, ...counting }
  // Anything else that is not an options object is left to the library to refuse, by name.
  if (typeof options !== 'object') return options
  const chosen = (key) => options[key] !== undefined
  const merged = { ...options }
  if (!chosen('model') && !chosen('encoding')) merged.encoding = counting.encoding
  if (!chosen('framing')) merged.framing = counting.framing
  return merged
}

/** See adapters/cursorclaw.d.cts. */
function applyMaxContextTokens(messages, maxContextTokens, truncationPriority) {
  return core.applyMaxContextTokens(messages, maxContextTokens, cursorClawCounting(truncationPriority))
}

/** See adapters/cursorclaw.d.cts. */
function estimateTokens(text) {
  return core.countTokens(text, { encoding: 'approximate' })
}

/** See adapters/cursorclaw.d.cts. */
function summarizePrefix(messages, maxSummaryTokens) {
  return core.summarizePrefix(messages, maxSummaryTokens)
}

module.exports = { applyMaxContextTokens, estimateTokens, summarizePrefix }
