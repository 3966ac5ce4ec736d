// The addon in worker threads: loaded in a worker that then exits and loaded again in another,
// in workers at the same time, and in a process whose main thread never loads it. Test runners
// (ava, vitest --pool threads), worker pools and servers that recycle workers all do this.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

import test from 'ava'

import { ct, transcript } from './helpers.js'

const require = createRequire(import.meta.url)
const addon = require.resolve('../index.js')
const conversation = transcript('sweagent-marshmallow-1867-fc.json')
const target = Math.floor(ct.estimateTokens(conversation) / 2)

/**
 * What each worker runs (CommonJS): loads the addon, calls a few strategies (one of them on the
 * thread pool, awaited) and posts what they returned.
 */
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads')
const ct = require(workerData.addon)
;(async () => {
  const byAge = ct.trimByAge(workerData.messages, workerData.target)
  const placeholders = ct.trimWithPlaceholders(workerData.messages, { targetTokens: workerData.target })
  const priority = await ct.trimByPriorityAsync(workerData.messages, { targetTokens: workerData.target })
  parentPort.postMessage(JSON.stringify({ byAge, placeholders: placeholders.messages, priority: priority.messages }))
})()
`

/** The same calls on this thread, to compare the workers' answers with. */
async function expected(): Promise<string> {
  const byAge = ct.trimByAge(conversation, target)
  const placeholders = ct.trimWithPlaceholders(conversation, { targetTokens: target })
  const priority = await ct.trimByPriorityAsync(conversation, { targetTokens: target })
  return JSON.stringify({ byAge, placeholders: placeholders.messages, priority: priority.messages })
}

/** Runs one worker to its exit; resolves with what it posted and its exit code. */
function runWorker(): Promise<{ posted: string[]; code: number }> {
  return new Promise((resolve, reject) => {
    const posted: string[] = []
    const worker = new Worker(workerCode, { eval: true, workerData: { addon, messages: conversation, target } })
    worker.on('message', (m: string) => posted.push(m))
    worker.on('error', reject)
    worker.on('exit', (code) => resolve({ posted, code }))
  })
}

test('workers one after another, each loading the addon after the previous one exited', async (t) => {
  const want = await expected()
  for (let i = 0; i < 4; i++) {
    const { posted, code } = await runWorker()
    t.is(code, 0, `worker ${i}`)
    t.deepEqual(posted, [want], `worker ${i}`)
  }
})

test('workers at the same time, then more after they exited', async (t) => {
  const want = await expected()
  for (let round = 0; round < 2; round++) {
    const runs = await Promise.all([runWorker(), runWorker(), runWorker()])
    for (const { posted, code } of runs) {
      t.is(code, 0)
      t.deepEqual(posted, [want])
    }
  }
})

/**
 * The child process: its main thread never loads the addon. It runs workers one after another,
 * then three at the same time, then one more, and prints every worker's answer as a JSON array.
 */
const childCode = `
import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
const { addon, messages, target, workerCode } = JSON.parse(readFileSync(0, 'utf8'))
function run() {
  return new Promise((resolve, reject) => {
    const posted = []
    const w = new Worker(workerCode, { eval: true, execArgv: [], workerData: { addon, messages, target } })
    w.on('message', (m) => posted.push(m))
    w.on('error', reject)
    w.on('exit', (code) => resolve({ posted, code }))
  })
}
const runs = []
for (let i = 0; i < 3; i++) runs.push(await run())
runs.push(...(await Promise.all([run(), run(), run()])))
runs.push(await run())
process.stdout.write(JSON.stringify(runs))
`

test('a process whose main thread never loads the addon runs it in workers in sequence and at once', async (t) => {
  const want = await expected()
  const input = JSON.stringify({ addon, messages: conversation, target, workerCode })
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', childCode], {
    encoding: 'utf8',
    input,
    maxBuffer: 64 << 20,
  })
  t.is(child.signal, null, child.stderr)
  t.is(child.status, 0, child.stderr)
  const runs = JSON.parse(child.stdout) as Array<{ posted: string[]; code: number }>
  t.is(runs.length, 7)
  for (const { posted, code } of runs) {
    t.is(code, 0)
    t.deepEqual(posted, [want])
  }
})
