'use strict'
// What the framework adapters share: their options, checked with the library's own wording,
// and a CacheAwareTrimmer per conversation (a fresh one per call when `cacheAware` is false).
// No trimming decision is made here: every one is the library's.
const { CacheAwareTrimmer } = require('../index.js')

/** The CacheAwareTrimmer options that only make sense across calls. */
const CACHE_ONLY = ['highWater', 'lowWater', 'clearAtLeast']

function typeName(value) {
  if (value === null) return 'null'
  return Array.isArray(value) ? 'array' : typeof value
}

/** A TypeError coded like the library's own option errors. */
function invalidOption(message) {
  const error = new TypeError(message)
  error.code = 'INVALID_OPTION'
  return error
}

/** The adapter's own options, beside the CacheAwareTrimmer's it passes on. */
const OWN = ['budget', 'reserve', 'cacheAware', 'onTrim']
/** The CacheAwareTrimmer options the adapter sets itself and refuses from the caller. */
const SET_HERE = ['contextWindow', 'format']

let trimmerOptionNames
/**
 * The options `CacheAwareTrimmer` takes, in the library's own list: the one its unknown-option
 * error gives for a key no option is near (the empty key), read once.
 */
function trimmerOptions() {
  if (trimmerOptionNames === undefined) {
    try {
      new CacheAwareTrimmer({ contextWindow: 1, '': 0 })
    } catch (e) {
      trimmerOptionNames = /the options here are (.*)$/.exec(e.message)?.[1].split(', ')
    }
    trimmerOptionNames ??= []
  }
  return trimmerOptionNames
}

/**
 * The library's error for an options object with a key that is no option, in the adapter's
 * terms: the options it lists (or the one it suggests) are the adapter's, `budget`,
 * `cacheAware` and `onTrim` among them, without those it sets itself (`contextWindow`,
 * `format`) or refuses (the cache-only ones when `cacheAware` is false). Other errors, and an
 * unknown key inside a nested option (`truncation.maxAg`), are the library's as they are.
 */
function inAdapterTerms(error, cacheAware, alsoRefused) {
  const m = error?.code === 'INVALID_OPTION' && /^([^.:\s]+): is not an option(?: \(did you mean (\w+)\?\))?/.exec(error.message)
  if (!m) return error
  const refused = [...SET_HERE, ...(cacheAware ? [] : CACHE_ONLY), ...alsoRefused]
  const own = [...OWN, ...trimmerOptions()].filter((k) => !refused.includes(k)).sort()
  if (m[2] !== undefined && own.includes(m[2])) return error
  return invalidOption(`${m[1]}: is not an option; the options here are ${own.join(', ')}`)
}

/** How many conversations named by a string (LangChain thread ids) keep their trimmer. */
const NAMED_CONVERSATIONS = 1000

/**
 * One trimmer per conversation, keyed by an object that lives as long as the conversation
 * (the AI SDK's `steps` array of one call, the first message of a LangChain run) or by a
 * string that names it (a LangChain thread id: the trimmers of the 1,000 threads used last
 * are kept).
 */
class Conversations {
  /**
   * @param {object} options the adapter's options
   * @param {string} format the message format the adapter hands to the library
   * @param {string[]} refused the adapter's own options this entry point refuses (left out of
   *   an unknown option's error)
   */
  constructor(options, format, refused = []) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw invalidOption(`options: must be an object, got ${typeName(options)}`)
    }
    const { budget, reserve = 0, cacheAware = true, onTrim, ...rest } = options
    if (budget === undefined) throw invalidOption('budget: is required')
    if (typeof budget !== 'number') throw invalidOption(`budget: must be a number, got ${typeName(budget)}`)
    if (!Number.isSafeInteger(budget) || budget < 1) {
      throw invalidOption(`budget: must be an integer of at least 1, got ${budget}`)
    }
    if (typeof reserve !== 'number') throw invalidOption(`reserve: must be a number, got ${typeName(reserve)}`)
    if (!Number.isSafeInteger(reserve) || reserve < 0 || reserve >= budget) {
      throw invalidOption(`reserve: must be an integer from 0 to budget - 1 (${budget - 1}), got ${reserve}`)
    }
    if (typeof cacheAware !== 'boolean') {
      throw invalidOption(`cacheAware: must be a boolean, got ${typeName(cacheAware)}`)
    }
    if (onTrim !== undefined && typeof onTrim !== 'function') {
      throw invalidOption(`onTrim: must be a function, got ${typeName(onTrim)}`)
    }
    if (rest.format !== undefined) throw invalidOption(`format: cannot be set here: the adapter reads ${format} messages`)
    if (rest.contextWindow !== undefined) throw invalidOption('contextWindow: cannot be set here: set budget')
    if (!cacheAware) {
      for (const key of CACHE_ONLY) {
        if (rest[key] !== undefined) throw invalidOption(`${key}: applies with cacheAware only, cacheAware is false`)
      }
    }
    // Without the cache policy, every call plans afresh straight to the budget: a new trimmer
    // whose marks are the budget itself and which re-plans whatever it frees.
    // What the messages may take: the budget less what the rest of the request needs.
    const contextWindow = budget - reserve
    this.trimmerOptions = cacheAware
      ? { ...rest, contextWindow, format }
      : { ...rest, contextWindow, format, highWater: 1, lowWater: 1, clearAtLeast: 0 }
    // Checks every other option now, with the library's messages, not at the first model call.
    try {
      new CacheAwareTrimmer(this.trimmerOptions)
    } catch (e) {
      throw inAdapterTerms(e, cacheAware, refused)
    }
    this.cacheAware = cacheAware
    this.onTrim = onTrim
    this.trimmers = new WeakMap()
    this.named = new Map()
  }

  /** The trimmer for the conversation `key` identifies (a new one for any other key). */
  trimmer(key) {
    if (!this.cacheAware) return new CacheAwareTrimmer(this.trimmerOptions)
    if (typeof key === 'string') {
      // Map keeps insertion order: re-inserting on use makes the first key the least recent.
      const trimmer = this.named.get(key) ?? new CacheAwareTrimmer(this.trimmerOptions)
      this.named.delete(key)
      this.named.set(key, trimmer)
      if (this.named.size > NAMED_CONVERSATIONS) this.named.delete(this.named.keys().next().value)
      return trimmer
    }
    if (key === null || typeof key !== 'object') return new CacheAwareTrimmer(this.trimmerOptions)
    let trimmer = this.trimmers.get(key)
    if (!trimmer) {
      trimmer = new CacheAwareTrimmer(this.trimmerOptions)
      this.trimmers.set(key, trimmer)
    }
    return trimmer
  }

  /** Trims `messages` with the trimmer of `key` and reports it to `onTrim` with `context`. */
  trim(key, messages, context) {
    const result = this.trimmer(key).trim(messages)
    if (this.onTrim) {
      const { messages: _sent, ...report } = result
      this.onTrim({ ...context, ...report })
    }
    return result
  }
}

module.exports = { Conversations, NAMED_CONVERSATIONS, invalidOption, typeName }
