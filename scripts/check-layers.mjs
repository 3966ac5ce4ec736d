#!/usr/bin/env node
// The layering check: reads every `crate::…` and `super::…` path of the crate (in `use` lines and
// inline, tests included) and fails on one that points up the order of the floors:
//
//   error ← model ← analysis ← strategy, plan ← output, simulate ← napi base ← napi API
//
// A module may use its own floor and those below it; the napi API modules (`src/napi/api/`) may
// not use one another (what two of them share belongs in the base floor, or in the core).
// `testing` and `fuzzing` are test support: anything may use them, and they are not checked;
// nor are a file's `#[cfg(test)]` modules and uses (a test may check its floor through a higher
// one, as supersession's rules are checked through the deduplicator that writes them out).
//
// Usage: node scripts/check-layers.mjs [root]   (exit code 1 and one line per wrong import)
// As a module: check(files) with files a Map of 'src/…/x.rs' → text, returns the violations.
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The floors, lowest first; a module path's floor is that of its longest listed prefix. */
export const FLOORS = [
  ['error', 0],
  ['model', 1],
  ['analysis', 2],
  ['strategy', 3],
  ['plan', 3],
  ['output', 4],
  ['simulate', 4],
  ['napi', 5],
  ['napi::base', 5],
  ['napi::api', 6],
]
const FLOOR_NAMES = ['error', 'model', 'analysis', 'strategy/plan', 'output', 'napi base', 'napi API']
/** Modules anything may use and that are not checked themselves. */
const SUPPORT = new Set(['testing', 'fuzzing'])

/** The module path of a source file: `src/model/cut.rs` → `model::cut`, `src/lib.rs` → ``. */
export function modulePath(file) {
  const parts = file.replace(/\\/g, '/').replace(/^src\//, '').replace(/\.rs$/, '').split('/')
  if (parts[parts.length - 1] === 'mod' || parts[parts.length - 1] === 'lib') parts.pop()
  return parts.join('::')
}

/** The floor of a module path, or undefined for the crate root and test support. */
export function floorOf(path) {
  const segments = path.split('::')
  if (path === '' || SUPPORT.has(segments[0])) return undefined
  let best
  for (const [prefix, floor] of FLOORS) {
    if (path === prefix || path.startsWith(prefix + '::')) {
      if (!best || prefix.length > best[0].length) best = [prefix, floor]
    }
  }
  return best ? best[1] : undefined
}

/** The API module a napi path is in (`napi::api::classify::x` → `napi::api::classify`). */
function apiModule(path) {
  const m = /^napi::api::([a-z0-9_]+)/.exec(path)
  return m ? `napi::api::${m[1]}` : undefined
}

/** The tokens of Rust source, without comments, strings and character literals. */
export function tokens(text) {
  const out = []
  let i = 0
  let line = 1
  const n = text.length
  while (i < n) {
    const c = text[i]
    if (c === '\n') {
      line++
      i++
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < n && text[i] !== '\n') i++
    } else if (c === '/' && text[i + 1] === '*') {
      let depth = 1
      i += 2
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') (depth++, (i += 2))
        else if (text[i] === '*' && text[i + 1] === '/') (depth--, (i += 2))
        else {
          if (text[i] === '\n') line++
          i++
        }
      }
    } else if ((c === 'r' || c === 'b') && /^(br|r)#*"/.test(text.slice(i, i + 260))) {
      // A raw string: r"…", r#"…"#, br#"…"#.
      const m = /^(br|r)(#*)"/.exec(text.slice(i, i + 260))
      const close = '"' + m[2]
      let j = text.indexOf(close, i + m[0].length)
      if (j < 0) j = n
      for (let k = i; k < j; k++) if (text[k] === '\n') line++
      i = j + close.length
    } else if (c === '"' || (c === 'b' && text[i + 1] === '"')) {
      i += c === 'b' ? 2 : 1
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\') i++
        if (text[i] === '\n') line++
        i++
      }
      i++
    } else if (c === "'") {
      // A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
      const m = /^'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'/u.exec(text.slice(i, i + 12))
      if (m) i += m[0].length
      else {
        i++
        while (i < n && /[A-Za-z0-9_]/.test(text[i])) i++
      }
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i
      while (j < n && /[A-Za-z0-9_]/.test(text[j])) j++
      out.push({ t: text.slice(i, j), line })
      i = j
    } else if (c === ':' && text[i + 1] === ':') {
      out.push({ t: '::', line })
      i += 2
    } else if (/\s/.test(c)) {
      i++
    } else {
      out.push({ t: c, line })
      i++
    }
  }
  return out
}

/** Every path a file names: `{ path: ['crate', 'model', 'x'] | ['super', …], line, inMod }`. */
function paths(toks) {
  const found = []
  const mods = [] // inline modules: { name, depth, test }
  let depth = 0
  const inline = () => mods.map((m) => m.name)
  const inTest = () => mods.some((m) => m.test)
  // Whether the tokens from k spell `#[cfg(test)]`.
  const cfgTest = (k) => ['#', '[', 'cfg', '(', 'test', ')', ']'].every((t, j) => toks[k + j]?.t === t)
  let testItem = false
  // Reads a use tree from toks[k], calling emit for every full path; returns the index after it.
  const useTree = (k, prefix, line, emit) => {
    const path = [...prefix]
    let itself = false
    while (k < toks.length) {
      const t = toks[k].t
      if (t === '{') {
        k++
        while (k < toks.length && toks[k].t !== '}') {
          k = useTree(k, path, toks[k].line, emit)
          if (toks[k]?.t === ',') k++
        }
        return k + 1
      }
      if (t === '::') {
        k++
        continue
      }
      if (/^[A-Za-z_]/.test(t) || t === '*') {
        if (t === 'as') {
          k += 2
          break
        }
        // `{self, …}` names the prefix itself.
        if (t !== 'self' || path.length === 0) path.push(t)
        else itself = true
        k++
        if (toks[k]?.t !== '::') break
        continue
      }
      break
    }
    if (path.length > prefix.length || prefix.length === 0 || itself) emit(path, line)
    return k
  }
  for (let k = 0; k < toks.length; k++) {
    const { t, line } = toks[k]
    if (cfgTest(k)) {
      testItem = true
      k += 6
      continue
    }
    const test = testItem
    if (t !== '#' && t !== '[' && t !== ']' && t !== 'pub') testItem = false
    if (t === '{') depth++
    else if (t === '}') {
      depth--
      while (mods.length && mods[mods.length - 1].depth > depth) mods.pop()
    } else if (t === 'mod' && /^[a-z_]/.test(toks[k + 1]?.t ?? '') && toks[k + 2]?.t === '{') {
      mods.push({ name: toks[k + 1].t, depth: depth + 1, test })
    } else if (t === 'use' && toks[k - 1]?.t !== '::') {
      const inMod = inline()
      const skip = test || inTest()
      k = useTree(k + 1, [], line, (path, l) => skip || found.push({ path, line: l, inMod })) - 1
    } else if (inTest()) {
      continue
    } else if ((t === 'crate' || t === 'super' || t === 'self') && toks[k + 1]?.t === '::' && toks[k - 1]?.t !== '::') {
      const path = [t]
      let j = k + 1
      while (toks[j]?.t === '::' && /^[A-Za-z_]/.test(toks[j + 1]?.t ?? '')) {
        path.push(toks[j + 1].t)
        j += 2
      }
      found.push({ path, line, inMod: inline() })
      k = j - 1
    }
  }
  return found
}

/** The module a path points into, as a `::` path from the crate root, or undefined. */
function resolve(path, self, inMod, reexports) {
  let at
  let rest
  if (path[0] === 'crate') (at = []), (rest = path.slice(1))
  else if (path[0] === 'super' || path[0] === 'self') {
    at = [...(self ? self.split('::') : []), ...inMod]
    rest = [...path]
    while (rest[0] === 'super' || rest[0] === 'self') {
      if (rest.shift() === 'super') at.pop()
    }
  } else return undefined
  if (at.length === 0 && rest.length > 0 && reexports.has(rest[0])) return reexports.get(rest[0])
  return [...at, ...rest].join('::')
}

/** The crate root's `pub use a::b::C;` re-exports: `C` → `a::b`. */
function rootReexports(lib) {
  const map = new Map()
  if (!lib) return map
  for (const { path, inMod } of paths(tokens(lib))) {
    if (inMod.length === 0 && path.length > 1 && path[0] !== 'crate' && path[0] !== 'std') {
      map.set(path[path.length - 1], path.slice(0, -1).join('::'))
    }
  }
  return map
}

/**
 * The imports against the order in `files` (a Map of path → text, paths from the crate root's
 * parent: `src/model/cut.rs`): `{ file, line, import, from, to }` per wrong import.
 */
export function check(files) {
  const reexports = rootReexports(files.get('src/lib.rs'))
  const wrong = []
  for (const [file, text] of files) {
    if (!file.endsWith('.rs')) continue
    const self = modulePath(file)
    const from = floorOf(self)
    if (from === undefined) continue
    const seen = new Set()
    for (const { path, line, inMod } of paths(tokens(text))) {
      const target = resolve(path, self, inMod, reexports)
      if (target === undefined) continue
      // A path into the file's own module (its tests, its children) is no import across modules.
      const here = [self, ...inMod].filter(Boolean).join('::')
      if (target === self || target.startsWith(self + '::') || target === here) continue
      const to = floorOf(target)
      if (to === undefined) continue
      const api = apiModule(self)
      const crossApi = api && apiModule(target) && apiModule(target) !== api
      if (to > from || crossApi) {
        const key = `${line}:${path.join('::')}`
        if (seen.has(key)) continue
        seen.add(key)
        wrong.push({ file, line, import: path.join('::'), from: FLOOR_NAMES[from], to: crossApi ? 'another napi API module' : FLOOR_NAMES[to] })
      }
    }
  }
  return wrong
}

/** Every `.rs` file under `root/src`, keyed by its path from root (with `/`). */
export function readTree(root) {
  const files = new Map()
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name)
      if (statSync(full).isDirectory()) walk(full)
      else if (name.endsWith('.rs')) files.set(relative(root, full).split(sep).join('/'), readFileSync(full, 'utf8'))
    }
  }
  walk(join(root, 'src'))
  return files
}

export function format(v) {
  return `${v.file}:${v.line}: ${v.import} (${v.from} may not use ${v.to})`
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = process.argv[2] ?? join(fileURLToPath(import.meta.url), '..', '..')
  const files = readTree(root)
  const wrong = check(files)
  for (const v of wrong) console.error(format(v))
  if (wrong.length > 0) {
    console.error(`check-layers: ${wrong.length} import(s) against the order of the floors (see docs/architecture.md)`)
    process.exit(1)
  }
  console.log(`check-layers: ${files.size} files follow the floors`)
}
