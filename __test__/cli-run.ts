import { spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

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
 * piped (not terminals) and without the colour variables of the calling environment.
 */
export function runCli(args: string[], options: { input?: string; env?: Record<string, string> } = {}): CliRun {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== 'NO_COLOR' && k !== 'FORCE_COLOR') env[k] = v
  }
  const r = spawnSync(process.execPath, [cliPath, ...args], {
    cwd: root,
    input: options.input ?? '',
    env: { ...env, ...options.env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** A fresh temporary directory. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'context-trim-cli-'))
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
