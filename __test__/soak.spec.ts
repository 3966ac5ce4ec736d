// A short soak run (scripts/soak.ts): mixed calls of every strategy in every format, on the main
// thread and in 4 worker threads at once, every result checked. `npm run soak` runs the million.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'

import test from 'ava'

import { transcriptsDir } from './helpers.js'

const root = join(transcriptsDir, '..', '..')

test('a short soak run makes 20,000 checked calls without a failure and with flat memory', async (t) => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', '@oxc-node/core/register', 'scripts/soak.ts', '--calls', '10000', '--every', '2500', '--json'],
    { cwd: root, maxBuffer: 1 << 20 },
  )
  const summary = JSON.parse(stdout.trim().split('\n').pop() ?? '{}')
  t.is(summary.calls, 20_000)
  t.is(summary.failures, 0, summary.firstFailure ?? '')
  t.true(summary.plateau, JSON.stringify(summary))
  t.true(summary.rssPeakMb > 0)
})
