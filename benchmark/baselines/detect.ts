/**
 * Whether a tool output reports an error: the rules of the addon's `src/analysis/detect.rs`.
 *
 * 1. The last non-empty line reports a non-zero `exit code N` / `exit status N`.
 * 2. A line starts (after white space and `[`) with an error marker (`Traceback (most recent
 *    call last)`, `Error:`, `error:`, `error[E`, `fatal:`, the coding agents' editor failures…)
 *    or the whole word `ERROR`.
 * 3. A line contains an error phrase (`command not found`, `No such file or directory`…).
 */
import { lines, trim, trimStart, isAlphanumeric } from './text.js'

export const ERROR_LINE_PREFIXES = [
  'Traceback (most recent call last)',
  'Error:',
  'error:',
  'error[E',
  'fatal:',
  'FATAL:',
  'panic:',
  'npm ERR!',
  'Exception in thread',
  // Failures the coding agents' file editors report (OpenHands, SWE-agent).
  'Your proposed edit has introduced new syntax error',
  'No exact match found',
  'No replacement was performed',
  'Invalid `',
]

export const ERROR_PHRASES = [
  'command not found',
  'No such file or directory',
  'Permission denied',
  'Segmentation fault',
  ': error:',
  '): error TS',
  ' panicked at ',
]

const ERROR_WORD = 'ERROR'

/** Whether `text`, a tool output, reports an error. */
export function isErrorOutput(text: string): boolean {
  const all = lines(text)
  for (let k = all.length - 1; k >= 0; k--) {
    if (trim(all[k]) === '') continue
    if (reportsFailedExit(all[k])) return true
    break
  }
  return all.some(isErrorLine)
}

function isErrorLine(line: string): boolean {
  const start = trimStart(line).replace(/^\[+/, '')
  if (ERROR_LINE_PREFIXES.some((p) => start.startsWith(p))) return true
  if (start.startsWith(ERROR_WORD)) {
    const rest = start.slice(ERROR_WORD.length)
    if (!(rest !== '' && (isAlphanumeric(rest) || rest.startsWith('_')))) return true
  }
  return ERROR_PHRASES.some((p) => line.includes(p))
}

/** ASCII-only lower case, as Rust's `to_ascii_lowercase` (same length, same offsets). */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())

function reportsFailedExit(line: string): boolean {
  const lower = asciiLower(line)
  for (const key of ['exit code', 'exit status']) {
    for (let at = lower.indexOf(key); at >= 0; at = lower.indexOf(key, at + 1)) {
      const rest = lower.slice(at + key.length).replace(/^[ :=]+/, '')
      const digits = rest.startsWith('-') ? rest.slice(1) : rest
      const n = /^[0-9]*/.exec(digits)![0]
      if (n !== '' && /[1-9]/.test(n)) return true
    }
  }
  return false
}
