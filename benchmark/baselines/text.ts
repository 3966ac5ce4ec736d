/**
 * Rust `str` semantics the baselines need to make the same decisions as the addon: `lines()`,
 * `trim*()` on Unicode white space, `char::is_alphanumeric` and friends.
 */

/** Rust `str::lines`: split at `\n`, drop one `\r` before it, no empty last line after a final `\n`. */
export function lines(text: string): string[] {
  if (text === '') return []
  const out = text.split('\n')
  if (out[out.length - 1] === '') out.pop()
  return out.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
}

// Rust's `char::is_whitespace`: the Unicode White_Space property.
const WS = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]'
const LEADING = new RegExp(`^${WS}+`)
const TRAILING = new RegExp(`${WS}+$`)

export const trimStart = (s: string) => s.replace(LEADING, '')
export const trimEnd = (s: string) => s.replace(TRAILING, '')
export const trim = (s: string) => trimEnd(trimStart(s))

/** Rust `char::is_alphanumeric` on the first code point of `s`. */
export const isAlphanumeric = (c: string) => /^[\p{Alphabetic}\p{N}]/u.test(c)
export const isUppercase = (c: string) => /^\p{Uppercase}/u.test(c)
export const isLowercase = (c: string) => /^\p{Lowercase}/u.test(c)
export const isNumeric = (c: string) => /^\p{N}/u.test(c)

/** Parses JSON text that starts (after white space) with `{` into an object, as `serde_json`. */
export function parseObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined || !trimStart(text).startsWith('{')) return undefined
  try {
    const v: unknown = JSON.parse(text)
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}
