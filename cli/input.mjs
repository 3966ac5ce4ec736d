// Reading a conversation for the CLI: a JSON array, an object with `messages`, JSON Lines, or
// stdin. Every failure is a CliError whose message is the one line the user sees.
import { readFileSync, writeFileSync } from 'node:fs'

/** An error the CLI reports as one line on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  constructor(message, exitCode = 1) {
    super(message)
    this.exitCode = exitCode
  }
}

const READ_ERRORS = {
  ENOENT: 'no such file',
  EISDIR: 'is a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
}

/** Reads `path` (`-` is stdin) as UTF-8 text. */
export function readInput(path) {
  try {
    return readFileSync(path === '-' ? 0 : path, 'utf8')
  } catch (e) {
    throw new CliError(`cannot read ${displayName(path)}: ${READ_ERRORS[e.code] ?? e.message}`)
  }
}

/** The name of an input in messages: the path, or `<stdin>`. */
export function displayName(path) {
  return path === '-' ? '<stdin>' : path
}

/**
 * Parses the text of a conversation. Returns `{ form, messages, wrapper?, lines? }`: `form` is
 * `'array'`, `'object'` (with `wrapper`, the object holding `messages`) or `'jsonl'` (with
 * `lines`, the 1-based line of each message).
 */
export function parseConversation(text, name) {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
  if (text.trim() === '') throw new CliError(`${name}: empty input (expected a JSON array of messages, an object with "messages", or JSON Lines)`)
  let data
  try {
    data = JSON.parse(text)
  } catch (e) {
    if (looksLikeJsonLines(text)) return parseJsonLines(text, name)
    throw malformed(name, text, 1, e)
  }
  if (Array.isArray(data)) return { form: 'array', messages: data }
  if (isObject(data) && Array.isArray(data.messages)) return { form: 'object', messages: data.messages, wrapper: data }
  if (isObject(data) && typeof data.role === 'string') return { form: 'jsonl', messages: [data], lines: [firstLine(text)] }
  const got = isObject(data) ? (data.messages === undefined ? 'an object without "messages"' : `"messages" of type ${typeName(data.messages)}`) : typeName(data)
  throw new CliError(`${name}: expected a JSON array of messages, an object with a "messages" array, or JSON Lines, got ${got}`)
}

/**
 * Serialises messages in the form they were read in (a request body keeps its other fields, its
 * `system` included). A value nested too deeply for JSON.stringify is a CliError naming `name`
 * and the message holding it: `inputIndex(i)` is the input's index of `messages[i]`.
 */
export function formatConversation(parsed, messages, { name = 'input', inputIndex = (i) => i } = {}) {
  try {
    if (parsed.form === 'jsonl') return messages.map((m) => JSON.stringify(m)).join('\n') + '\n'
    const data = parsed.form === 'object' ? { ...parsed.wrapper, messages } : messages
    return JSON.stringify(data, null, 2) + '\n'
  } catch (e) {
    if (!(e instanceof RangeError)) throw e
    const i = messages.findIndex((m) => !stringifies(m))
    const what = i === -1 ? 'a field' : `messages[${inputIndex(i)}]`
    throw new CliError(`${name}: ${what} is nested too deeply to be written as JSON (JSON.stringify: ${e.message})`)
  }
}

function stringifies(value) {
  try {
    JSON.stringify(value, null, 2)
    return true
  } catch {
    return false
  }
}

/**
 * A request body's top-level `system` field (`{system, messages}`, as Anthropic's API and the AI
 * SDK take the system prompt), read as a first system message so that it is counted: returns
 * `parsed` with it before the messages and `systemField: true`, or `parsed` as it is without the
 * field. Reports number the messages of the request, so that the field is #0 and the body's
 * `messages[i]` is #(i + 1); errors name the body's own fields ({@link inInputTerms}).
 */
export function withSystemField(parsed, name) {
  const system = parsed.form === 'object' ? parsed.wrapper.system : undefined
  if (system === undefined) return parsed
  const blocks = Array.isArray(system) && system.every((b) => isObject(b) && b.type === 'text' && typeof b.text === 'string')
  if (typeof system !== 'string' && !blocks) {
    const got = Array.isArray(system) ? 'an array with something other than text blocks' : typeName(system)
    throw new CliError(`${name}: system: must be a string or an array of text blocks, got ${got}`)
  }
  return { ...parsed, messages: [{ role: 'system', content: system }, ...parsed.messages], systemField: true }
}

/**
 * An addon message about the messages {@link withSystemField} returned, in the input's terms:
 * with a system field, `messages[0]` is `system` and `messages[i]` is the body's `messages[i - 1]`.
 */
export function inInputTerms(parsed, message) {
  if (!parsed.systemField) return message
  return message.replace(/\bmessages\[(\d+)\]/g, (_, i) => (i === '0' ? 'system' : `messages[${Number(i) - 1}]`))
}

const WRITE_ERRORS = {
  ENOENT: 'no such directory',
  ENOTDIR: 'no such directory',
  EISDIR: 'is a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
}

/** Writes `text` to `path`; a failure is a CliError (exit status 1) naming the path. */
export function writeOutput(path, text) {
  try {
    writeFileSync(path, text)
  } catch (e) {
    throw new CliError(`cannot write ${path}: ${WRITE_ERRORS[e.code] ?? e.message}`)
  }
}

/** Several lines, the first of which is a JSON object on its own. */
function looksLikeJsonLines(text) {
  const lines = text.split('\n').filter((l) => l.trim() !== '')
  if (lines.length < 2 || !lines[0].trim().startsWith('{')) return false
  try {
    return isObject(JSON.parse(lines[0]))
  } catch {
    return false
  }
}

function parseJsonLines(text, name) {
  const messages = []
  const lines = []
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return
    try {
      messages.push(JSON.parse(line))
    } catch (e) {
      throw malformed(name, line, i + 1, e)
    }
    lines.push(i + 1)
  })
  return { form: 'jsonl', messages, lines }
}

function firstLine(text) {
  return text.slice(0, text.search(/\S/)).split('\n').length
}

/** The CliError for text that JSON.parse rejected: `name:line:column: malformed JSON: what`. */
function malformed(name, text, firstLineNumber, parseError) {
  let found
  try {
    found = locateJsonError(text)
  } catch {
    // Nesting too deep for the locator: V8's own message is the best there is.
  }
  if (!found) return new CliError(`${name}: malformed JSON: ${parseError.message.split('\n')[0]}`)
  const before = text.slice(0, found.at)
  const line = firstLineNumber + before.split('\n').length - 1
  const column = found.at - before.lastIndexOf('\n')
  return new CliError(`${name}:${line}:${column}: malformed JSON: ${found.what}`)
}

/**
 * Finds the first syntax error of `text` as JSON (RFC 8259): `{ at, what }` with `at` the
 * offset in UTF-16 code units, or null if the text is valid. Used only after JSON.parse
 * failed, whose messages do not always give a position.
 */
export function locateJsonError(text) {
  let i = 0
  const fail = (what, at = i) => {
    throw { at, what }
  }
  const found = () => (i >= text.length ? 'end of input' : JSON.stringify(text[i]))
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++
  }
  const string = () => {
    const start = i++
    while (i < text.length) {
      const c = text[i]
      if (c === '"') return void i++
      if (c === '\\') {
        const e = text[i + 1]
        if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6
        else fail('invalid escape in a string')
        continue
      }
      if (c < ' ') fail('unescaped control character in a string')
      i++
    }
    fail('unterminated string', start)
  }
  const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y
  const value = () => {
    space()
    const c = text[i]
    if (c === '{') return container('}', true)
    if (c === '[') return container(']', false)
    if (c === '"') return string()
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i
      if (!NUMBER.test(text)) fail('invalid number')
      i = NUMBER.lastIndex
      return
    }
    for (const literal of ['true', 'false', 'null']) {
      if (text.startsWith(literal, i)) return void (i += literal.length)
    }
    fail(`expected a value, found ${found()}`)
  }
  const container = (close, isObject) => {
    i++
    space()
    if (text[i] === close) return void i++
    for (;;) {
      if (isObject) {
        space()
        if (text[i] !== '"') fail(`expected a property name in double quotes, found ${found()}`)
        string()
        space()
        if (text[i] !== ':') fail(`expected ':' after a property name, found ${found()}`)
        i++
      }
      value()
      space()
      if (text[i] === ',') {
        i++
        continue
      }
      if (text[i] === close) return void i++
      fail(`expected ',' or '${close}' after ${isObject ? 'a property value' : 'an array element'}, found ${found()}`)
    }
  }
  try {
    value()
    space()
    if (i < text.length) fail(`unexpected ${found()} after the JSON value`)
    return null
  } catch (e) {
    if (e instanceof Error) throw e
    return e
  }
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function typeName(v) {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v
}
