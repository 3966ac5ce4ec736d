/**
 * Which file a tool result is about and what was done to it: the rules of the addon's
 * `src/analysis/file_ops.rs`, in TypeScript (the seed's `extractFilePath`/`detectOperation`, extended to
 * the call's arguments, editor sub-commands and the SWE-agent/OpenHands result headers).
 *
 * Kind: the editor `command` sub-command, else the tool name's words, else the result header.
 * Path: the call's `path`/`file_path`/`filePath`/`file`/`filename` argument, else the result
 * header, else a JSON result's field, else a line starting with `File:`/`Path:`. Relative paths
 * are joined to SWE-agent's `(Current directory: D)` footer. No kind or no path: no operation.
 */
import { callArguments, type Conversation, contentText, isToolResult, toolName } from './conversation.js'
import { isAlphanumeric, isLowercase, isNumeric, isUppercase, lines, parseObject, trim, trimEnd, trimStart } from './text.js'

export type FileOpKind = 'read' | 'create' | 'edit' | 'delete'

export interface FileOp {
  path: string
  kind: FileOpKind
  failed: boolean
}

export const PATH_ARGUMENTS = ['path', 'file_path', 'filePath', 'file', 'filename']
const PATH_FIELDS = ['path', 'file', 'filePath', 'file_path']
const FAILURE_PREFIXES = [
  'ERROR',
  'Error:',
  'Ran into [Errno',
  'Your proposed edit has introduced',
  '[Your proposed edit has introduced',
  '[No exact match found',
]
/** Tool-name words and the kind they imply, in order; `true`: the word must be exactly the keyword. */
const NAME_RULES: Array<[FileOpKind, Array<[string, boolean]>]> = [
  ['create', [['create', false], ['write', false], ['overwrite', false]]],
  ['edit', [['edit', false], ['modify', false], ['insert', false], ['replace', false]]],
  ['delete', [['delete', false], ['remove', false], ['rm', true]]],
  ['read', [['read', false], ['view', false], ['get', true], ['open', true], ['cat', true]]],
]

export const modifies = (kind: FileOpKind) => kind !== 'read'

/** The file operation of message `i`, if it is a tool result about a file. */
export function fileOperation(conv: Conversation, i: number): FileOp | undefined {
  const message = conv.messages[i]
  if (!message || !isToolResult(message)) return undefined
  const text = contentText(message)
  if (trimStart(text).startsWith("Here's the files and directories")) return undefined
  const args = parseObject(callArguments(conv, i))
  const header = resultHeader(text)
  const name = toolName(conv, i)
  const kind =
    (args && editorCommand(args)) ?? (name !== undefined ? kindForToolName(name) : undefined) ?? header?.kind
  if (!kind) return undefined
  let path = (args && stringField(args, PATH_ARGUMENTS)) ?? header?.path ?? jsonResultPath(text) ?? labelledPath(text)
  if (path === undefined) return undefined
  const dir = currentDirectory(text)
  if (dir !== undefined && isRelative(path)) path = join(dir, path)
  const failed = message.is_error === true || message.isError === true || reportsFailure(text)
  return { path, kind, failed }
}

/** The kind of file operation a tool's name implies, if any. */
export function kindForToolName(name: string): FileOpKind | undefined {
  const words = nameWords(name)
  for (const [kind, keywords] of NAME_RULES) {
    if (words.some((w) => keywords.some(([k, exact]) => (exact ? w === k : w.startsWith(k))))) return kind
  }
  return undefined
}

function nameWords(name: string): string[] {
  const words: string[] = []
  let word = ''
  let prevLower = false
  for (const c of name) {
    if (!isAlphanumeric(c)) {
      if (word !== '') words.push(word)
      word = ''
      prevLower = false
      continue
    }
    if (isUppercase(c) && prevLower && word !== '') {
      words.push(word)
      word = ''
    }
    prevLower = isLowercase(c) || isNumeric(c)
    word += c.toLowerCase()
  }
  if (word !== '') words.push(word)
  return words
}

function editorCommand(args: Record<string, unknown>): FileOpKind | undefined {
  switch (args.command) {
    case 'view':
      return 'read'
    case 'create':
      return 'create'
    case 'str_replace':
    case 'insert':
    case 'undo_edit':
      return 'edit'
    default:
      return undefined
  }
}

function stringField(map: Record<string, unknown>, keys: string[]): string | undefined {
  for (const k of keys) {
    const v = Object.hasOwn(map, k) ? map[k] : undefined
    if (typeof v === 'string') {
      const p = cleanPath(v)
      if (p !== undefined) return p
    }
  }
  return undefined
}

/** Trims a path and the quotes or backticks around it; undefined when nothing is left. */
function cleanPath(raw: string): string | undefined {
  let p = trim(raw)
  for (const q of ['`', '"', "'"]) {
    if (p.length >= 2 && p.startsWith(q) && p.endsWith(q)) p = trim(p.slice(1, -1))
  }
  return p === '' ? undefined : p
}

interface Header {
  path: string
  kind?: FileOpKind
}

const OPENHANDS_HEADERS: Array<[string, string, FileOpKind]> = [
  ["Here's the result of running `cat -n` on ", ':', 'read'],
  ['The file ', ' has been edited.', 'edit'],
  ['File created successfully at: ', '', 'create'],
  ['Last edit to ', ' undone successfully.', 'edit'],
]

function resultHeader(text: string): Header | undefined {
  const first = lines(trimStart(text))[0] ?? ''
  for (const [prefix, suffix, kind] of OPENHANDS_HEADERS) {
    if (!first.startsWith(prefix)) continue
    const rest = first.slice(prefix.length)
    let raw: string | undefined = rest
    if (suffix !== '') {
      const e = rest.lastIndexOf(suffix)
      raw = e >= 0 ? rest.slice(0, e) : undefined
    }
    const path = raw === undefined ? undefined : cleanPath(raw)
    if (path !== undefined) return { path, kind }
  }
  for (const line of lines(text)) {
    if (!line.startsWith('[File: ')) continue
    const trimmed = trimEnd(line.slice('[File: '.length))
    if (!trimmed.endsWith(']')) continue
    const rest = trimmed.slice(0, -1)
    const open = rest.lastIndexOf(' (')
    if (open >= 0) {
      const info = rest.slice(open + 2)
      if (info.endsWith(')')) {
        const inner = info.slice(0, -1)
        const at = inner.indexOf(' lines total')
        if (at >= 0) {
          const n = inner.slice(0, at)
          const after = inner.slice(at + ' lines total'.length)
          if (n !== '' && /^[0-9]+$/.test(n)) {
            const kind: FileOpKind = after === ' after edit' ? 'edit' : 'read'
            const path = cleanPath(rest.slice(0, open))
            if (path !== undefined) return { path, kind }
            continue
          }
        }
      }
    }
    const path = cleanPath(rest)
    if (path !== undefined) return { path }
  }
  return undefined
}

function jsonResultPath(text: string): string | undefined {
  const map = parseObject(text)
  return map && stringField(map, PATH_FIELDS)
}

function labelledPath(text: string): string | undefined {
  for (const line of lines(text)) {
    const rest = line.startsWith('File:') ? line.slice(5) : line.startsWith('Path:') ? line.slice(5) : undefined
    if (rest === undefined) continue
    const p = cleanPath(rest)
    if (p !== undefined) return p
  }
  return undefined
}

function currentDirectory(text: string): string | undefined {
  const all = lines(text)
  for (let k = all.length - 1; k >= 0; k--) {
    const line = trim(all[k])
    if (!line.startsWith('(Current directory: ') || !line.endsWith(')')) continue
    const dir = trim(line.slice('(Current directory: '.length, -1))
    if (dir.startsWith('/')) return dir
  }
  return undefined
}

function isRelative(path: string): boolean {
  const windowsDrive = path.length >= 2 && /^[A-Za-z]:/.test(path)
  return !(path.startsWith('/') || path.startsWith('~') || path.startsWith('\\') || windowsDrive)
}

function join(dir: string, path: string): string {
  let rel = path
  while (rel.startsWith('./')) rel = rel.slice(2)
  return `${dir.replace(/\/+$/, '')}/${rel}`
}

function reportsFailure(text: string): boolean {
  const start = trimStart(text)
  return FAILURE_PREFIXES.some((p) => start.startsWith(p))
}
