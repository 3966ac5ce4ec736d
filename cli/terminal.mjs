// Terminal output: colour only when stdout is a terminal and NO_COLOR is unset (FORCE_COLOR
// forces it), bar charts in block characters with colour and in `#` without.

/** Whether to colour output written to `stream`. */
export function useColour(stream, env = process.env) {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' && env.FORCE_COLOR !== '0') return true
  return Boolean(stream.isTTY)
}

const CODES = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
  gray: [90, 39],
}

/** The styling functions: ANSI when `colour`, the identity otherwise. */
export function palette(colour) {
  const style = {}
  for (const [name, [on, off]] of Object.entries(CODES)) {
    style[name] = colour ? (s) => `\x1b[${on}m${s}\x1b[${off}m` : (s) => String(s)
  }
  return style
}

export const ROLE_COLOURS = { system: 'magenta', developer: 'magenta', user: 'blue', assistant: 'green', tool: 'yellow' }

export const TIER_COLOURS = {
  SYSTEM: 'magenta',
  AGENT_INSTRUCTIONS: 'magenta',
  CURRENT_TASK: 'blue',
  MODIFIED_FILES: 'cyan',
  RECENT_TURNS: 'green',
  RECENT_FILE_READS: 'green',
  OLD_HISTORY: 'yellow',
  STALE_TOOL_OUTPUTS: 'red',
  SUMMARIZED: 'gray',
}

export const DECISION_COLOURS = { kept: 'green', placeholder: 'yellow', cut: 'yellow', dropped: 'red' }

const EIGHTHS = ['', '▏', '▎', '▍', '▌', '▋', '▊', '▉']

/** A bar of `value / max` of `width` columns: block characters in colour, `#` in plain text. */
export function bar(value, max, width, colour) {
  if (max <= 0 || value <= 0) return ''
  const cells = (value / max) * width
  if (!colour) return '#'.repeat(Math.max(1, Math.round(cells)))
  const whole = Math.floor(cells)
  const rest = EIGHTHS[Math.round((cells - whole) * 8)] ?? ''
  return '█'.repeat(whole) + (whole === 0 && rest === '' ? '▏' : rest)
}

/** `1234567` as `1,234,567`. */
export function num(n) {
  return Math.round(n).toLocaleString('en-US')
}

/** `part / whole` as a percentage with one decimal. */
export function pct(part, whole) {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '0.0%'
}

/** Pads `s` to `width` columns (on the left when `right`). */
export function pad(s, width, right = false) {
  s = String(s)
  return right ? s.padStart(width) : s.padEnd(width)
}

/** The first line of `text`, at most `width` characters, with an ellipsis when cut. */
export function preview(text, width) {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}
