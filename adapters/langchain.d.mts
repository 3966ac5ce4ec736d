// context-trim/langchain for ES modules: the same declarations, with the middleware type of
// langchain's ES module build.
import type { AgentMiddleware } from 'langchain'
import type { TrimMiddlewareOptions } from './langchain-messages.cjs'

export * from './langchain-messages.cjs'
export type { AdapterTrimOptions, AdapterTrimReport } from './shared.cjs'

/** See langchain.d.cts. */
export declare function trimMiddleware(options: TrimMiddlewareOptions): AgentMiddleware
