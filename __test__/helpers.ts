import { readFileSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import type { Message } from '../index.js'

const require = createRequire(import.meta.url)
/** The addon, loaded the way a CommonJS user loads it. */
export const ct: typeof import('../index.js') = require('../index.js')

const here = dirname(fileURLToPath(import.meta.url))
export const transcriptsDir = join(here, '..', 'samples', 'transcripts')

/** Every bundled transcript: [file name, messages]. */
export function transcripts(): Array<[string, Message[]]> {
  return readdirSync(transcriptsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => [f, JSON.parse(readFileSync(join(transcriptsDir, f), 'utf8')) as Message[]])
}

export function transcript(name: string): Message[] {
  return JSON.parse(readFileSync(join(transcriptsDir, name), 'utf8')) as Message[]
}

/** A deep copy, to check later that the caller's input was not mutated. */
export function snapshot<T>(value: T): T {
  return structuredClone(value)
}

/** An error thrown by the addon: a JS error with its stable `code`. */
export type CodedError = Error & { code?: string }

/** How many leading messages two requests share, compared as JSON (what a prefix cache reuses). */
export function sharedPrefix(a: readonly unknown[], b: readonly unknown[]): number {
  let i = 0
  while (i < a.length && i < b.length && JSON.stringify(a[i]) === JSON.stringify(b[i])) i++
  return i
}
