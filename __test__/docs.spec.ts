import test from 'ava'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

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

/** The anchors of a markdown file: its headings' GitHub slugs and its `<a id>`s. */
function anchors(path: string): Set<string> {
  const text = read(path).replace(/```[\s\S]*?```/g, '')
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const [, heading] of text.matchAll(/^#{1,6} (.*)$/gm)) {
    const slug = heading.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    out.add(n ? `${slug}-${n}` : slug)
  }
  for (const [, id] of text.matchAll(/<a id="([^"]+)"><\/a>/g)) out.add(id)
  return out
}

test('every relative link of the README and docs/ (history included) names a file and an anchor that exist', (t) => {
  const pages = ['README.md', ...['docs', 'docs/history'].flatMap((d) => readdirSync(join(root, d)).filter((f) => f.endsWith('.md')).map((f) => `${d}/${f}`))]
  t.true(pages.includes('docs/history/benchmark-rounds.md'))
  const broken: string[] = []
  for (const page of pages) {
    const text = read(page).replace(/```[\s\S]*?```/g, '')
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue
      const [path, hash] = target.split('#')
      const file = path ? join(dirname(page), path) : page
      if (!existsSync(join(root, file))) broken.push(`${page}: ${target} (no such file)`)
      else if (hash && file.endsWith('.md') && !anchors(file).has(hash)) broken.push(`${page}: ${target} (no such anchor)`)
    }
  }
  t.deepEqual(broken, [])
})

test('benchmark.md and configuration.md read as references under 500 lines; benchmark.md and quality.md keep their rounds in docs/history/', (t) => {
  for (const page of ['docs/benchmark.md', 'docs/configuration.md']) {
    const lines = read(page).split('\n').length
    t.true(lines < 500, `${page}: ${lines} lines`)
  }
  for (const page of ['docs/benchmark.md', 'docs/quality.md']) t.false(/^#+ .*\bround\b/im.test(read(page)), `a round's heading in ${page}`)
  t.true(read('docs/history/benchmark-rounds.md').startsWith('# Benchmark rounds (history)\n\n**This is history.**'))
  t.true(read('docs/history/recall-rounds.md').startsWith('# Recall rounds (history)\n\n**This is history.**'))
})
