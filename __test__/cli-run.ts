import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import test from 'ava'

const here = dirname(fileURLToPath(import.meta.url))
export const root = join(here, '..')
export const cliPath = join(root, 'cli', 'context-trim.mjs')

/** What a run of the CLI printed and returned. */
export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs `node cli/context-trim.mjs ...args` from the repository root, with stdout and stderr
 * piped (not terminals) and without the colour variables of the calling environment. The child
 * runs asynchronously, so a slow one never blocks the test runner.
 */
export function runCli(args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== 'NO_COLOR' && k !== 'FORCE_COLOR') env[k] = v
  }
  const child = spawn(process.execPath, [cliPath, ...args], { cwd: root, env: { ...env, ...options.env } })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => void (stdout += s))
  child.stderr.setEncoding('utf8').on('data', (s: string) => void (stderr += s))
  child.stdin.on('error', () => {}) // a child that exits before reading its input
  child.stdin.end(options.input ?? '')
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

const tempDirs: string[] = []
test.after.always('remove the temporary directories', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

/** A fresh temporary directory, removed when the test file's tests are done. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'context-trim-cli-'))
  tempDirs.push(dir)
  return dir
}

type Main = (argv: string[], streams: { out: { write(s: string): void; isTTY?: boolean }; err: { write(s: string): void; isTTY?: boolean } }) => number

/**
 * Runs the CLI's `main` inside this process (sharing the addon's token cache, so that a test
 * running many commands on the same transcripts does not re-tokenise them in every child).
 * Its streams are not terminals. Standard input is not available: use {@link runCli} for `-`.
 */
export async function runCliInProcess(args: string[]): Promise<CliRun> {
  const { main } = (await import(pathToFileURL(cliPath).href)) as { main: Main }
  let stdout = ''
  let stderr = ''
  const code = main(args, { out: { write: (s) => void (stdout += s), isTTY: false }, err: { write: (s) => void (stderr += s), isTTY: false } })
  return { code, stdout, stderr }
}
