// context-trim/langchain for ES modules: the same declarations, with the middleware type of
// langchain's ES module build.
// The framework is an optional peer dependency: without it installed, its type is `any` here
// rather than an error (TS2307) in the app's type check.
// @ts-ignore
import type { AgentMiddleware } from 'langchain'
import type { TrimMiddlewareOptions } from './langchain-messages.cjs'

export * from './langchain-messages.cjs'
export type { AdapterTrimOptions, AdapterTrimReport } from './shared.cjs'

/** See langchain.d.cts. */
export declare function trimMiddleware(options: TrimMiddlewareOptions): AgentMiddleware
