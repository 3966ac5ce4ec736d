#!/usr/bin/env node
// `npm run smoke:runtimes`: context-trim under Bun and Deno gives byte for byte what it gives
// under Node. Runs scripts/runtime-trim.mjs (every strategy, on every bundled transcript of
// samples/transcripts/) under Node, then under the Bun and Deno of the devDependencies, and
// compares the outputs. Prints one line per runtime; on a difference names the transcript and
// the first differing byte, and exits 1. Needs the addon built (`npm run build`).
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

import { root } from './platforms.mjs'

const transcripts = join(root, 'samples', 'transcripts')
const files = readdirSync(transcripts)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => join(transcripts, f))
const program = join(root, 'scripts', 'runtime-trim.mjs')
const bin = (name) => join(root, 'node_modules', '.bin', name)

/** Each runtime: how to ask its version, and how to run the program. */
const runtimes = [
  { name: 'node', command: process.execPath, version: ['--version'], run: [program] },
  { name: 'bun', command: bin('bun'), version: ['--version'], run: [program] },
  // Deno asks for its permissions: reading the transcripts and the loader's files, loading
  // the addon (ffi) and the environment variables the napi loader reads.
  { name: 'deno', command: bin('deno'), version: ['--version'], run: ['run', '--allow-read', '--allow-ffi', '--allow-env', program] },
]

function run(command, args) {
  const r = spawnSync(command, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
  if (r.error || r.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stderr}`)
  }
  return r.stdout
}

/** Where two outputs first differ: the transcript, the byte offset, a few bytes either side. */
function difference(expected, actual) {
  let at = 0
  while (at < expected.length && expected[at] === actual[at]) at++
  const near = (s) => JSON.stringify(s.slice(Math.max(0, at - 40), at + 40))
  let transcript = '(the output is not the same JSON)'
  try {
    const a = JSON.parse(expected)
    const b = JSON.parse(actual)
    const i = a.findIndex((entry, k) => JSON.stringify(entry) !== JSON.stringify(b[k]))
    transcript = i === -1 ? '(same values, different bytes)' : a[i].transcript
  } catch {}
  return `${transcript}: first difference at byte ${at}: node ${near(expected)}, got ${near(actual)}`
}

function main() {
  let expected = null
  const problems = []
  for (const rt of runtimes) {
    const version = run(rt.command, rt.version).split('\n')[0].split(' (')[0].trim()
    const started = Date.now()
    const output = run(rt.command, [...rt.run, ...files])
    const seconds = ((Date.now() - started) / 1000).toFixed(1)
    if (expected === null) expected = output
    const same = output === expected
    if (!same) problems.push(`${rt.name}: ${difference(expected, output)}`)
    console.log(`${rt.name.padEnd(5)} ${version.padEnd(12)} ${files.length} transcripts, ${Buffer.byteLength(output)} bytes in ${seconds} s: ${same ? 'identical to node' : 'DIFFERS'}`)
  }
  if (problems.length) {
    for (const p of problems) console.error(p)
    process.exit(1)
  }
  console.log(`smoke:runtimes: bun and deno trim ${files.length} transcripts byte-identically to node`)
}

try {
  main()
} catch (e) {
  console.error(`smoke:runtimes failed: ${e.message}`)
  process.exit(1)
}
