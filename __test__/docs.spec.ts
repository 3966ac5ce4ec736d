import test from 'ava'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { ct } from './helpers.js'
import { root } from './cli-run.js'
// @ts-expect-error: a plain ESM script without type declarations
import { render } from '../scripts/configuration-doc.mjs'

const read = (path: string) => readFileSync(join(root, path), 'utf8')

test('docs/configuration.md is generated from the current index.d.ts', (t) => {
  t.is(read('docs/configuration.md'), (render as (s: string) => string)(read('index.d.ts')), 'run node scripts/configuration-doc.mjs')
})

test('docs/configuration.md documents every export of the addon', (t) => {
  const doc = read('docs/configuration.md')
  const exported = Object.keys(ct).filter((name) => !name.startsWith('__'))
  t.true(exported.length > 20)
  for (const name of exported) t.true(doc.includes(`### ${name}\n`) || doc.includes(`| \`${name}\` |`), name)
})

test('every option with a @default in index.d.ts has it in the reference', (t) => {
  const dts = read('index.d.ts')
  const plain = (s: string) => s.replace(/[`\\]/g, '').replace(/'/g, '"')
  const rows = read('docs/configuration.md').split('\n').filter((l) => l.startsWith('| `')).map(plain)
  const defaults = [...dts.matchAll(/@default (.+)\n\s*\*\/\n\s*(\w+)\??:/g)].map((m) => [m[2], m[1].trim()])
  t.true(defaults.length > 30)
  for (const [name, value] of defaults) {
    t.true(rows.some((row) => row.startsWith(`| ${name} |`) && row.includes(`| ${plain(value)} |`)), `${name} = ${value}`)
  }
})

test('the README links every page of docs/ and keeps its two quick-start commands', (t) => {
  const readme = read('README.md')
  t.true(readme.includes('npm ci && npm run demo'))
  t.true(readme.includes('npm ci && npm test'))
  for (const page of ['configuration', 'integration', 'prompt-caching', 'cli']) {
    t.true(readme.includes(`docs/${page}.md`), page)
    t.true(existsSync(join(root, 'docs', `${page}.md`)), page)
  }
  // Every relative link of the integration guide points at a file that exists.
  const guide = read('docs/integration.md')
  for (const [, target] of guide.matchAll(/\]\((\.\.\/[^)#]+|[\w-]+\.md)\)/g)) {
    t.true(existsSync(join(root, 'docs', target)), target)
  }
})
