// Every public entry point of the addon that reads messages or options, called in one uniform
// way, for the hostile-input suite. `index.d.ts is covered` in hostile.spec.ts fails when an
// exported function is missing here.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { ct } from './helpers.js'

/** An entry point as the hostile suite calls it. */
export interface EntryPoint {
  name: string
  /** Calls the entry point with `messages` and `options` (defaults when undefined), and benign other arguments. */
  call: (messages: unknown, options?: unknown) => unknown
  /** The name its options argument has in error messages, if it takes one. */
  options?: 'options' | 'config'
  /** Whether its options take `format`. */
  formats: boolean
  /** Whether its options take `encoding`/`model` (it counts tokens). */
  counts: boolean
  /** Whether it counts tokens exactly with no way to ask for the `approximate` encoding. */
  exact?: boolean
  /**
   * Whether its work grows with turns × messages (`simulate` replays every turn and trims each
   * with `every-turn`): it gets 2,000 tiny messages instead of a million (5 s in a debug build;
   * 10,000 take a minute).
   */
  quadratic?: boolean
  /** The messages it returns, if it returns messages (kept ones are the caller's own objects). */
  returned?: (result: unknown) => unknown[]
}

/** A budget small enough that trimming happens on every test conversation. */
export const SMALL_BUDGET = 50

const asMessages = (r: unknown) => r as unknown[]
const trimmed = (r: unknown) => (r as { messages: unknown[] }).messages
/** A scratch folder for the pruner's archive (removed by the suites that prune). */
export const scratch = mkdtempSync(join(tmpdir(), 'context-trim-hostile-'))
const pruner = new ct.ContextPruner({ archivePath: join(scratch, 'archive.md'), maxTokens: 200, keepRecentMessages: 1 })
const cacheAware = new ct.CacheAwareTrimmer({ contextWindow: 400, encoding: 'approximate' })
const rolling = new ct.RollingContext({ enabled: true, config: { maxAge: 0, smallOutputTokens: 0, encoding: 'approximate' } })

/** A window counting in the encoding `options` names (so that its methods accept them); other
 * types are left for the method to reject. */
function windowFor(options: unknown) {
  const o = options !== null && typeof options === 'object' && !Array.isArray(options) ? (options as Record<string, unknown>) : {}
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined)
  return new ct.ContextWindow({ encoding: text(o.encoding), model: text(o.model) } as never)
}

/**
 * `simulate`'s options: the required `contextWindow` (and the approximate encoding) underneath
 * what the test passes. An object's own properties are copied as descriptors, so a getter that
 * throws is still called by the addon, not here; anything else is passed as it is.
 */
function withWindow(options: unknown): unknown {
  const base = { contextWindow: 400, encoding: 'approximate' }
  if (options === undefined) return base
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return options
  return Object.create(base, Object.getOwnPropertyDescriptors(options))
}

/** Every entry point that takes an array of messages. */
export const messageEntryPoints: EntryPoint[] = [
  { name: 'estimateTokens', call: (m, o) => ct.estimateTokens(m as never, o as never), options: 'options', formats: true, counts: true },
  { name: 'countSteps', call: (m) => ct.countSteps(m as never), formats: false, counts: false },
  {
    name: 'summarizePrefix',
    call: (m) => ct.summarizePrefix(m as never, SMALL_BUDGET),
    formats: false,
    counts: false,
    returned: (r) => (r as { remainingMessages: unknown[] }).remainingMessages,
  },
  {
    name: 'tagMessagesWithStep',
    call: (m) => ct.tagMessagesWithStep(m as never),
    formats: false,
    counts: false,
    returned: (r) => (r as Array<{ message: unknown }>).map((x) => x.message),
  },
  {
    name: 'classifyMessages',
    call: (m, o) => ct.classifyMessages(m as never, o as never),
    options: 'options',
    formats: true,
    counts: true,
    returned: (r) => (r as Array<{ message: unknown }>).map((x) => x.message),
  },
  { name: 'validateConversation', call: (m, o) => ct.validateConversation(m as never, o as never), options: 'options', formats: true, counts: false },
  { name: 'repairConversation', call: (m, o) => ct.repairConversation(m as never, o as never), options: 'options', formats: true, counts: false, returned: trimmed },
  {
    name: 'applyMaxContextTokens',
    call: (m, o) => ct.applyMaxContextTokens(m as never, SMALL_BUDGET, o as never),
    options: 'options',
    formats: true,
    counts: true,
    returned: asMessages,
  },
  {
    name: 'applyMaxContextTokensAsync',
    call: (m, o) => ct.applyMaxContextTokensAsync(m as never, SMALL_BUDGET, o as never),
    options: 'options',
    formats: true,
    counts: true,
    returned: asMessages,
  },
  { name: 'trimByAge', call: (m, o) => ct.trimByAge(m as never, SMALL_BUDGET, o as never), options: 'options', formats: true, counts: true, returned: asMessages },
  {
    name: 'trimByPriority',
    call: (m, o) => ct.trimByPriority(m as never, (o ?? { targetTokens: SMALL_BUDGET }) as never),
    options: 'options',
    formats: false,
    counts: true,
    returned: trimmed,
  },
  {
    name: 'trimWithPlaceholders',
    call: (m, o) => ct.trimWithPlaceholders(m as never, (o ?? { targetTokens: SMALL_BUDGET }) as never),
    options: 'options',
    formats: false,
    counts: true,
    returned: trimmed,
  },
  {
    name: 'trimConversation',
    call: (m, o) => ct.trimConversation(m as never, SMALL_BUDGET, (o ?? { strategy: 'priority-based' }) as never),
    options: 'options',
    formats: false,
    counts: true,
    returned: asMessages,
  },
  {
    name: 'truncateOldToolOutputs',
    call: (m, o) => ct.truncateOldToolOutputs(m as never, (o ?? { maxAge: 0, smallOutputTokens: 0 }) as never),
    options: 'config',
    formats: false,
    counts: true,
    returned: asMessages,
  },
  {
    name: 'truncateOldToolOutputsAsync',
    call: (m, o) => ct.truncateOldToolOutputsAsync(m as never, (o ?? { maxAge: 0, smallOutputTokens: 0 }) as never),
    options: 'config',
    formats: false,
    counts: true,
    returned: asMessages,
  },
  {
    name: 'trimByPriorityAsync',
    call: (m, o) => ct.trimByPriorityAsync(m as never, (o ?? { targetTokens: SMALL_BUDGET }) as never),
    options: 'options',
    formats: false,
    counts: true,
    returned: trimmed,
  },
  {
    name: 'trimWithPlaceholdersAsync',
    call: (m, o) => ct.trimWithPlaceholdersAsync(m as never, (o ?? { targetTokens: SMALL_BUDGET }) as never),
    options: 'options',
    formats: false,
    counts: true,
    returned: trimmed,
  },
  {
    name: 'trimConversationAsync',
    call: (m, o) => ct.trimConversationAsync(m as never, SMALL_BUDGET, (o ?? { strategy: 'priority-based' }) as never),
    options: 'options',
    formats: false,
    counts: true,
    returned: asMessages,
  },
  {
    name: 'enforceContextLimit',
    call: (m, o) => ct.enforceContextLimit(m as never, SMALL_BUDGET, o as never),
    options: 'options',
    formats: true,
    counts: true,
    returned: trimmed,
  },
  {
    name: 'enforceContextLimitAsync',
    call: (m, o) => ct.enforceContextLimitAsync(m as never, SMALL_BUDGET, o as never),
    options: 'options',
    formats: true,
    counts: true,
    returned: trimmed,
  },
  { name: 'deduplicateToolResults', exact: true, call: (m, o) => ct.deduplicateToolResults(m as never, (o ?? { deduplicationThreshold: 0 }) as never), options: 'options', formats: false, counts: false, returned: trimmed },
  { name: 'deduplicateToolResultsAsync', exact: true, call: (m, o) => ct.deduplicateToolResultsAsync(m as never, (o ?? { deduplicationThreshold: 0 }) as never), options: 'options', formats: false, counts: false, returned: trimmed },
  { name: 'ContextPruner#prune', exact: true, call: (m, o) => pruner.prune(m as never, null, o as never), options: 'options', formats: false, counts: false, returned: trimmed },
  { name: 'ContextPruner#measure', exact: true, call: (m) => pruner.measure(m as never), formats: false, counts: false },
  // A trimmer remembers its last plan: hostile inputs may change what it keeps, never crash it.
  {
    name: 'ContextWindow#append',
    call: (m, o) => {
      const window = windowFor(o)
      window.append(m as never)
      return window.trim((o ?? { targetTokens: SMALL_BUDGET }) as never)
    },
    options: 'options',
    formats: false,
    counts: true,
    returned: trimmed,
  },
  {
    name: 'ContextWindow#reset',
    call: (m, o) => {
      const window = windowFor(o)
      window.reset(m as never)
      return window.truncate((o ?? { maxAge: 0, smallOutputTokens: 0 }) as never)
    },
    options: 'config',
    formats: false,
    counts: true,
    returned: asMessages,
  },
  { name: 'CacheAwareTrimmer#trim', call: (m) => cacheAware.trim(m as never), formats: false, counts: false, returned: trimmed },
  { name: 'RollingContext#prepare', call: (m) => rolling.prepare(m as never), formats: false, counts: false, returned: asMessages },
  { name: 'simulate', call: (m, o) => ct.simulate(m as never, withWindow(o) as never), options: 'options', formats: true, counts: true, quadratic: true },
  { name: 'simulateAsync', call: (m, o) => ct.simulateAsync(m as never, withWindow(o) as never), options: 'options', formats: true, counts: true, quadratic: true },
  { name: 'FileTracker.fromMessages', call: (m, o) => ct.FileTracker.fromMessages(m as never, o as never), options: 'options', formats: false, counts: false },
]

/** Entry points that take something else than a message array: [name, what they take]. */
export const otherEntryPoints: Array<[string, string]> = [
  ['countTokens', 'text'],
  ['estimateMessageTokens', 'one message'],
  ['classifyMessage', 'one message'],
  ['setTokenCacheCapacity', 'a number'],
  ['setMessageCacheCapacity', 'a number'],
  ['tokenCacheStats', 'nothing'],
  ['messageCacheStats', 'nothing'],
  ['trimByPriorityJson', 'a JSON body'],
  ['trimWithPlaceholdersJson', 'a JSON body'],
]

/** Classes: their methods taking messages are in `messageEntryPoints`, the others are checked apart. */
export const classes = ['CacheAwareTrimmer', 'ContextPruner', 'ContextWindow', 'FileTracker', 'RollingContext']

/** The outcome of a call that may throw or return a Promise that rejects. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

export async function outcome(f: () => unknown): Promise<Outcome> {
  try {
    return { ok: true, value: await f() }
  } catch (error) {
    return { ok: false, error }
  }
}
