// Every public entry point of the addon that reads messages or options, called in one uniform
// way, for the hostile-input suite. `index.d.ts is covered` in hostile.spec.ts fails when an
// exported function is missing here.
import { ct } from './helpers.js'

/** Options that an entry point accepts, as the hostile suite needs to know them. */
export interface EntryPoint {
  name: string
  /** Calls the entry point with `messages` (and `options`) and benign other arguments. */
  call: (messages: unknown, options?: unknown) => unknown
  /** Whether it takes an options object as its last argument. */
  options: boolean
  /** Whether its options take `encoding`/`model` (it counts tokens). */
  counts: boolean
  /** The caller's messages it returns, if it returns messages (kept ones are the caller's own). */
  returned?: (result: unknown) => unknown[]
}

/** A budget small enough that trimming happens on every test conversation. */
export const SMALL_BUDGET = 50

const asMessages = (r: unknown) => r as unknown[]

/** Every entry point that takes an array of messages. */
export const messageEntryPoints: EntryPoint[] = [
  { name: 'estimateTokens', call: (m, o) => ct.estimateTokens(m as never, o as never), options: true, counts: true },
  { name: 'countSteps', call: (m) => ct.countSteps(m as never), options: false, counts: false },
  {
    name: 'tagMessagesWithStep',
    call: (m) => ct.tagMessagesWithStep(m as never),
    options: false,
    counts: false,
    returned: (r) => (r as Array<{ message: unknown }>).map((x) => x.message),
  },
  { name: 'validateConversation', call: (m, o) => ct.validateConversation(m as never, o as never), options: true, counts: false },
  {
    name: 'repairConversation',
    call: (m, o) => ct.repairConversation(m as never, o as never),
    options: true,
    counts: false,
    returned: (r) => (r as { messages: unknown[] }).messages,
  },
  {
    name: 'applyMaxContextTokens',
    call: (m, o) => ct.applyMaxContextTokens(m as never, SMALL_BUDGET, o as never),
    options: true,
    counts: true,
    returned: asMessages,
  },
  {
    name: 'applyMaxContextTokensAsync',
    call: (m, o) => ct.applyMaxContextTokensAsync(m as never, SMALL_BUDGET, o as never),
    options: true,
    counts: true,
    returned: asMessages,
  },
]

/** Entry points that take something else than a message array: [name, what they take]. */
export const otherEntryPoints: Array<[string, string]> = [
  ['countTokens', 'text'],
  ['estimateMessageTokens', 'one message'],
  ['setTokenCacheCapacity', 'a number'],
  ['setMessageCacheCapacity', 'a number'],
  ['tokenCacheStats', 'nothing'],
  ['messageCacheStats', 'nothing'],
  ['__testPanic', 'nothing (test hook, see no-panic.spec.ts)'],
]

/** The outcome of a call that may throw or return a Promise that rejects. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

export async function outcome(f: () => unknown): Promise<Outcome> {
  try {
    return { ok: true, value: await f() }
  } catch (error) {
    return { ok: false, error }
  }
}
