// No panic reaches JavaScript: every binding entry point is compiled with `catch_unwind`, so a
// panic becomes a JavaScript error, and a test hook (on the native binding, not exported by
// index.js) proves it at run time.
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

import test from 'ava'

import { ct, transcriptsDir } from './helpers.js'

const napiDir = join(transcriptsDir, '..', '..', 'src', 'napi')

/**
 * The functions of a Rust source that carry a `#[napi…]` attribute without `catch_unwind`, and
 * how many carry one with it. Attributes on structs, enums, impls and consts are skipped; a bare
 * `#[napi]` on a function counts as missing it.
 */
export function napiFunctions(source: string): { guarded: string[]; unguarded: string[] } {
  const lines = source.split('\n')
  const guarded: string[] = []
  const unguarded: string[] = []
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*#\[napi\b/.test(lines[i])) continue
    // The whole attribute, which may span lines.
    let attribute = lines[i]
    let depth = (attribute.match(/\[/g) ?? []).length - (attribute.match(/\]/g) ?? []).length
    while (depth > 0 && i + 1 < lines.length) {
      i++
      attribute += lines[i]
      depth += (lines[i].match(/\[/g) ?? []).length - (lines[i].match(/\]/g) ?? []).length
    }
    // The item it applies to: the next line that is not another attribute, a comment or blank.
    let j = i + 1
    while (j < lines.length && /^\s*(#\[|\/\/|$)/.test(lines[j])) j++
    const item = lines[j] ?? ''
    const fn = item.match(/^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)/)
    if (!fn) continue
    // A `module_exports` hook runs once as the module is registered; JavaScript cannot call it.
    if (/\bmodule_exports\b/.test(attribute)) continue
    ;(/\bcatch_unwind\b/.test(attribute) ? guarded : unguarded).push(fn[1])
  }
  return { guarded, unguarded }
}

test('the scanner finds functions whose napi attribute lacks catch_unwind', (t) => {
  const source = [
    '#[napi(catch_unwind)]',
    'pub fn good() {}',
    '#[napi]',
    'pub fn bare() {}',
    '/// docs',
    '#[napi(',
    '  js_name = "x",',
    '  ts_args_type = "a: string"',
    ')]',
    '#[allow(dead_code)]',
    'pub(crate) fn multi_line() {}',
    '#[napi(',
    '  catch_unwind,',
    '  ts_return_type = "M[]"',
    ')]',
    'pub fn multi_good<\'env>() {}',
    '#[napi(module_exports)]',
    'pub fn hook(exports: Object) {}',
    '#[napi(object)]',
    'pub struct Options {}',
    '#[napi(constructor)]',
    '  pub fn new() -> Self {}',
  ].join('\n')
  t.deepEqual(napiFunctions(source), { guarded: ['good', 'multi_good'], unguarded: ['bare', 'multi_line', 'new'] })
})

test('every #[napi] function of the binding has catch_unwind', (t) => {
  let guarded = 0
  // Both floors: src/napi/base/ and src/napi/api/, with their subfolders.
  const files = readdirSync(napiDir, { recursive: true, encoding: 'utf8' }).map((f) => f.split('\\').join('/'))
  for (const file of files.filter((f) => f.endsWith('.rs')).sort()) {
    const found = napiFunctions(readFileSync(join(napiDir, file), 'utf8'))
    t.deepEqual(found.unguarded, [], `src/napi/${file}: #[napi] without catch_unwind`)
    guarded += found.guarded.length
  }
  // Every exported function of index.d.ts is one of them (and the scan is not vacuous).
  const exported = readFileSync(join(napiDir, '..', '..', 'index.d.ts'), 'utf8').match(/^export declare function /gm) ?? []
  t.true(guarded >= exported.length, `${guarded} guarded functions for ${exported.length} exported`)
})

/** Loads the addon in a child process, with or without the test hook's variable set. */
function inChild(hook: boolean): { status: number | null; signal: string | null; stderr: string; out: unknown } {
  const index = JSON.stringify(join(napiDir, '..', '..', 'index.js'))
  const script = `const ct = require(${index})
let caught = null
if (typeof ct.panicForTests === 'function') {
  try { ct.panicForTests(); caught = 'returned' } catch (e) { caught = [e instanceof Error, e.message] }
}
process.stdout.write(JSON.stringify({ hook: typeof ct.panicForTests, caught, count: ct.countTokens('hello world') }))`
  const env = { ...process.env }
  delete env.CONTEXT_TRIM_TEST_PANIC
  if (hook) env.CONTEXT_TRIM_TEST_PANIC = '1'
  const child = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8' })
  return { status: child.status, signal: child.signal, stderr: child.stderr, out: child.status === 0 ? JSON.parse(child.stdout) : null }
}

test('a panic inside the addon becomes a JavaScript error and the process lives on', (t) => {
  const child = inChild(true)
  t.is(child.signal, null, child.stderr)
  t.is(child.status, 0, child.stderr)
  t.like(child.out, { hook: 'function', count: 2 })
  const { caught } = child.out as { caught: [boolean, string] }
  t.true(caught[0], 'an Error')
  t.regex(caught[1], /context-trim test panic/)
})

test('the test hook is not part of the API: nothing exported or typed starts with __test, and the hook exists only with its variable', (t) => {
  t.deepEqual(Object.keys(ct).filter((k) => k.startsWith('__test') || k === 'panicForTests'), [])
  const root = join(napiDir, '..', '..')
  for (const file of ['index.js', 'index.d.ts']) {
    t.false(/__test|panicForTests/.test(readFileSync(join(root, file), 'utf8')), file)
  }
  const child = inChild(false)
  t.is(child.status, 0, child.stderr)
  t.deepEqual(child.out, { hook: 'undefined', caught: null, count: 2 })
})
