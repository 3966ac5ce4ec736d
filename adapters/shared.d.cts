// The options and reports both framework adapters share.
import type { CacheAwareTrimResult, CacheAwareTrimmerOptions } from '../index.js'

/** What the adapters' trimming is configured with: a budget and a strategy (the library's). */
export type AdapterTrimOptions = Omit<CacheAwareTrimmerOptions, 'contextWindow' | 'format'> & {
  /**
   * The tokens the messages sent to the model may take, as `estimateTokens` counts them
   * (messages and 3 tokens of reply priming), less `reserve`. A system prompt the framework
   * sends apart from the messages, the tool schemas and the reply are not counted: leave room
   * for them with `reserve`.
   */
  budget: number
  /**
   * The tokens of `budget` left to the rest of the request, which the adapter does not see or
   * count: the tool schemas, a system prompt the framework sends apart from the messages. The
   * messages are trimmed to `budget − reserve` (at least 1).
   * @default 0
   */
  reserve?: number
  /**
   * Whether the decisions are kept across the model calls of one conversation (a
   * `CacheAwareTrimmer`): below `highWater × budget` the request grows with the same prefix,
   * so the provider's prompt cache stays valid, and a trim goes down to `lowWater × budget`.
   * With `false`, every call is trimmed afresh to the budget (`highWater`, `lowWater` and
   * `clearAtLeast` then do not apply and are rejected).
   * @default true
   */
  cacheAware?: boolean
}

/** What each trim decided, as `CacheAwareTrimmer#trim` reports it (without the messages). */
export type AdapterTrimReport = Omit<CacheAwareTrimResult, 'messages'>
