/**
 * The three JavaScript token counters the baselines run on, all `o200k_base`, and the
 * per-message token count of the addon (the OpenAI cookbook's overheads) written on top of them.
 *
 * Every counter treats special-token text such as `<|endoftext|>` as ordinary text, as the addon
 * does (and as the chat APIs do with user content).
 */
import { createRequire } from 'node:module'

import { decode as gptDecode, encode as gptEncode, countTokens as gptCount } from 'gpt-tokenizer/encoding/o200k_base'
import { Tiktoken as JsTiktoken } from 'js-tiktoken/lite'
import o200kRanks from 'js-tiktoken/ranks/o200k_base'

import type { Message } from '../../index.js'

/** A token counter: what a TypeScript trimmer is parameterised by. */
export interface Counter {
  /** `js-tiktoken`, `gpt-tokenizer`, `tiktoken (WASM)`. */
  name: string
  /** Tokens of `text`. */
  count(text: string): number
  /** The tokens of `text` (for cutting a text to a number of tokens). */
  encode(text: string): number[]
  /** The text of `tokens`. */
  decode(tokens: number[]): string
  /** Milliseconds it took to load the encoding. */
  loadMs: number
}

/** The names of the counters, in the order the benchmark reports them. */
export const COUNTER_NAMES = ['js-tiktoken', 'gpt-tokenizer', 'tiktoken (WASM)'] as const
export type CounterName = (typeof COUNTER_NAMES)[number]

const NO_SPECIAL = new Set<string>()

function timed<T>(load: () => T): [T, number] {
  const start = performance.now()
  const value = load()
  return [value, performance.now() - start]
}

/** Loads a counter (the encoding is loaded once; later calls reuse it). */
export function loadCounter(name: CounterName): Counter {
  switch (name) {
    case 'js-tiktoken': {
      const [enc, loadMs] = timed(() => new JsTiktoken(o200kRanks))
      return {
        name,
        loadMs,
        // No allowed and no disallowed special tokens: special-token text is ordinary text.
        count: (t) => (t === '' ? 0 : enc.encode(t, [], []).length),
        encode: (t) => enc.encode(t, [], []),
        decode: (tokens) => enc.decode(tokens),
      }
    }
    case 'gpt-tokenizer': {
      // gpt-tokenizer builds its o200k tables on first use: time that first use.
      const [, loadMs] = timed(() => gptCount('warm up', { disallowedSpecial: NO_SPECIAL }))
      return {
        name,
        loadMs,
        count: (t) => (t === '' ? 0 : gptCount(t, { disallowedSpecial: NO_SPECIAL })),
        encode: (t) => gptEncode(t, { disallowedSpecial: NO_SPECIAL }),
        decode: (tokens) => gptDecode(tokens),
      }
    }
    case 'tiktoken (WASM)': {
      const require = createRequire(import.meta.url)
      const [enc, loadMs] = timed(() => {
        const tiktoken = require('tiktoken') as typeof import('tiktoken')
        return tiktoken.get_encoding('o200k_base')
      })
      const text = new TextDecoder()
      return {
        name,
        loadMs,
        count: (t) => (t === '' ? 0 : enc.encode_ordinary(t).length),
        encode: (t) => Array.from(enc.encode_ordinary(t)),
        decode: (tokens) => text.decode(enc.decode(Uint32Array.from(tokens))),
      }
    }
  }
}

// The addon's per-message overheads (src/model/tokens.rs), after the OpenAI cookbook "How to count
// tokens with tiktoken" and tiktoken-rs `num_tokens_from_messages`.
export const TOKENS_PER_MESSAGE = 3
export const TOKENS_PER_NAME = 1
export const TOKENS_PER_TOOL_CALL = 1
export const REPLY_PRIMING = 3
export const IMAGE_PART_TOKENS = 765

/** The tokens of a content value, as the addon counts them (each image part is 765). */
export function contentTokens(counter: Counter, content: Message['content']): number {
  if (typeof content === 'string') return counter.count(content)
  if (!Array.isArray(content)) return 0
  let n = 0
  for (const p of content) {
    const part = p as { type: string; text?: unknown; refusal?: unknown }
    switch (part.type) {
      case 'image_url':
      case 'image':
      case 'input_image':
        n += IMAGE_PART_TOKENS
        break
      case 'refusal':
        if (typeof part.refusal === 'string') n += counter.count(part.refusal)
        break
      default:
        if (typeof part.text === 'string') n += counter.count(part.text)
    }
  }
  return n
}

/** The tokens of one message with its framing, as the addon's `estimateMessageTokens`. */
export function messageTokens(counter: Counter, m: Message): number {
  let n = TOKENS_PER_MESSAGE + counter.count(m.role) + contentTokens(counter, m.content)
  if (typeof m.name === 'string') n += counter.count(m.name) + TOKENS_PER_NAME
  for (const c of m.tool_calls ?? []) {
    const args = c.function.arguments
    const text = typeof args === 'string' ? args : args == null ? '' : JSON.stringify(args)
    n += counter.count(c.function.name) + counter.count(text) + TOKENS_PER_TOOL_CALL
  }
  return n
}

/** The tokens of a request, as the addon's `estimateTokens`: messages plus reply priming. */
export function requestTokens(counter: Counter, messages: Message[]): number {
  if (messages.length === 0) return 0
  let n = REPLY_PRIMING
  for (const m of messages) n += messageTokens(counter, m)
  return n
}
