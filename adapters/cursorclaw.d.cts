// context-trim/cursorclaw: CursorClaw's `src/max-context-tokens.ts` API (seed 002), counting as
// CursorClaw counts. See docs/migrating.md#cursorclaw.
import type { AnyMessageInput, MaxContextTokensOptions, PrefixSummary } from '../index.js'

/** The messages CursorClaw's `applyMaxContextTokens` takes; a role the library does not know is refused at run time. */
export interface CursorClawMessage {
  role: string
  content: string
}

/** The roles `truncationPriority` lists: **listed first, dropped first**. */
export type TruncationRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool'

/**
 * Caps `messages` at `maxContextTokens`, as `context-trim`'s {@link applyMaxContextTokens}
 * does (the last message always kept, nothing reordered, oldest first without a priority, the
 * role listed first dropped first, a tool call dropped with its results), with CursorClaw's
 * counting by default: `ceil(chars / 4)` of each message's content (tool-call names and
 * arguments included), no framing and no reply priming, i.e. `{ encoding: 'approximate',
 * framing: false }`. An options object may set `encoding`, `model` or `framing` itself, and
 * takes every option of `context-trim`'s `applyMaxContextTokens` (`keepFirstSystem`,
 * `minKeep`, `dropOrder`, `format`).
 *
 * ```ts
 * import { applyMaxContextTokens } from 'context-trim/cursorclaw'
 * const capped = applyMaxContextTokens(messages, model.maxContextTokens, model.truncationPriority)
 * ```
 */
export declare function applyMaxContextTokens<M extends AnyMessageInput | CursorClawMessage>(
  messages: M[],
  maxContextTokens: number,
  truncationPriority?: TruncationRole[] | MaxContextTokensOptions,
): M[]

/**
 * CursorClaw's estimate of a text: one token per four characters, rounded up
 * (`countTokens(text, { encoding: 'approximate' })`). Characters are Unicode scalar values,
 * where CursorClaw counts UTF-16 code units: the two differ for characters outside the Basic
 * Multilingual Plane (emoji) only.
 */
export declare function estimateTokens(text: string): number

/**
 * CursorClaw's summary of earlier turns (TU.4), as `context-trim`'s {@link summarizePrefix}:
 * every message but the last becomes one `system` message, `Summary of earlier turns:` and
 * `User: …` / `Agent: …` entries separated by blank lines (`(none)` when there is nothing before
 * the last message), cut to `4 × maxSummaryTokens` characters; `remainingMessages` is the last
 * message alone (the caller's object).
 *
 * ```ts
 * import { applyMaxContextTokens, summarizePrefix } from 'context-trim/cursorclaw'
 * const { summaryMessage, remainingMessages } = summarizePrefix(messages, 200)
 * const capped = applyMaxContextTokens([summaryMessage, ...remainingMessages], cap)
 * ```
 */
export declare function summarizePrefix<M extends AnyMessageInput | CursorClawMessage>(
  messages: M[],
  maxSummaryTokens: number,
): Omit<PrefixSummary, 'remainingMessages'> & { remainingMessages: M[] }
