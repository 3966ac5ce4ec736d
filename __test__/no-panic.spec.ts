// No panic reaches JavaScript: every binding entry point is compiled with `catch_unwind`, so a
// panic becomes a JavaScript error, and a test hook proves it at run time.
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
    '#[napi(object)]',
    'pub struct Options {}',
    '#[napi(constructor)]',
    '  pub fn new() -> Self {}',
  ].join('\n')
  t.deepEqual(napiFunctions(source), { guarded: ['good', 'multi_good'], unguarded: ['bare', 'multi_line', 'new'] })
})

test('every #[napi] function of the binding has catch_unwind', (t) => {
  let guarded = 0
  for (const file of readdirSync(napiDir).filter((f) => f.endsWith('.rs')).sort()) {
    const found = napiFunctions(readFileSync(join(napiDir, file), 'utf8'))
    t.deepEqual(found.unguarded, [], `src/napi/${file}: #[napi] without catch_unwind`)
    guarded += found.guarded.length
  }
  // Every exported function of index.d.ts is one of them (and the scan is not vacuous).
  const exported = readFileSync(join(napiDir, '..', '..', 'index.d.ts'), 'utf8').match(/^export declare function /gm) ?? []
  t.true(guarded >= exported.length, `${guarded} guarded functions for ${exported.length} exported`)
})

test('a panic inside the addon becomes a JavaScript error and the process lives on', (t) => {
  t.throws(() => ct.__testPanic(), { message: '__testPanic panics only when CONTEXT_TRIM_TEST_PANIC=1' })
  process.env.CONTEXT_TRIM_TEST_PANIC = '1'
  try {
    t.throws(() => ct.__testPanic(), { instanceOf: Error, message: /context-trim test panic/ })
  } finally {
    delete process.env.CONTEXT_TRIM_TEST_PANIC
  }
  t.is(ct.countTokens('hello world'), 2)
})
