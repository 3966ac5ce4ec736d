// The BaseMessage conversions of context-trim/langchain. They are typed structurally, so that
// the CommonJS and the ES module builds of @langchain/core are both accepted.
import type { AdapterTrimOptions, AdapterTrimReport } from './shared.cjs'
import type { Message } from '../index.js'

/**
 * What context-trim reads from a LangChain `BaseMessage` (`HumanMessage`, `AIMessage` with
 * `tool_calls`, `ToolMessage`, `SystemMessage`, `ChatMessage`).
 */
export interface BaseMessageLike {
  readonly type: string
  content: unknown
}

/**
 * The messages in the library's OpenAI Chat Completions shape, one for each BaseMessage, in
 * order: `human` → `user`, `ai` → `assistant` with its `tool_calls` (`args` as `arguments`),
 * `tool` → `tool` (`status: 'error'` as `is_error`), `system` → `system`, a `ChatMessage` by its
 * role. Text and image blocks stay text and image parts; any other block (reasoning, files…)
 * is counted as its JSON text, and an AI message's `tool_use` blocks are left to `tool_calls`.
 * Pass the result to any context-trim function, then its messages to {@link fromOpenAIMessages},
 * which finds each message's BaseMessage by a symbol-keyed field (`JSON.stringify` leaves it out).
 *
 * @throws TypeError with code `INVALID_MESSAGE` naming the index of a message of another
 * type (`remove`, `function`…), `INVALID_MESSAGES` when `messages` is not an array.
 */
export declare function toOpenAIMessages(messages: readonly BaseMessageLike[]): Message[]

/**
 * The messages a context-trim function returned for `toOpenAIMessages(originals)`, as
 * BaseMessages, in order: a kept message is the original object (`===`), a shortened one a new
 * message of the same class with the library's content and every other field of the original.
 *
 * @throws TypeError with code `INVALID_MESSAGE` for a message that was not converted from
 * `originals` (the same array) by `toOpenAIMessages`: an inserted summary has no BaseMessage to
 * map back to. `INVALID_MESSAGES` when an argument is not an array.
 */
export declare function fromOpenAIMessages<M extends BaseMessageLike>(trimmed: readonly Message[], originals: readonly M[]): M[]

/** Options of {@link trimBaseMessages}: a budget and a strategy, trimmed afresh on every call. */
export type TrimBaseMessagesOptions = Omit<AdapterTrimOptions, 'cacheAware' | 'highWater' | 'lowWater' | 'clearAtLeast'> & {
  /** Called with what was decided. */
  onTrim?: (report: AdapterTrimReport) => void
}

/**
 * `messages` trimmed to `options.budget` with `options.strategy` (`'priority'` by default):
 * what was decided, and the BaseMessages to send (kept ones are your own objects). The input
 * is not modified.
 */
export declare function trimBaseMessages<M extends BaseMessageLike>(
  messages: readonly M[],
  options: TrimBaseMessagesOptions,
): AdapterTrimReport & { messages: M[] }

/** Options of `trimMiddleware`. */
export type TrimMiddlewareOptions = AdapterTrimOptions & {
  /** Called after every model call's trim with what was decided. */
  onTrim?: (report: AdapterTrimReport) => void
}
