// context-trim/langchain: a LangChain.js v1 agent middleware that trims the messages of every
// model call, and the BaseMessage conversions it is made of. See docs/integration.md.
// The framework is an optional peer dependency: without it installed, its type is `any` here
// rather than an error (TS2307) in the app's type check.
// @ts-ignore
import type { AgentMiddleware } from 'langchain'
import type { TrimMiddlewareOptions } from './langchain-messages.cjs'

export * from './langchain-messages.cjs'
export type { AdapterTrimOptions, AdapterTrimReport } from './shared.cjs'

/**
 * An agent middleware (`createMiddleware`) for `createAgent({ middleware: [...] })`: before
 * every model call, the request's messages are trimmed to `options.budget` with
 * `options.strategy` (`'priority'` by default), the decisions kept across the calls of a thread
 * (`configurable.thread_id`; the 1,000 threads used last) or, without one, of a run (`cacheAware`). The agent's state keeps every message. The system prompt is sent apart from
 * the messages and is not in the budget. A bad option throws a `TypeError` with code
 * `INVALID_OPTION` here, not at the first call.
 */
export declare function trimMiddleware(options: TrimMiddlewareOptions): AgentMiddleware
