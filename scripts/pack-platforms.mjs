#!/usr/bin/env node
// `npm run pack:platforms [-- [--out-dir <dir>] <platform>...]`: `npm pack` of the root package
// and of every platform package whose binary is built (by default all built here), into
// target/packs/ or the folder `--out-dir` names (`--help` says how).
// A platform's binary is taken from `npm/<platform>/` (`npm run build:all`) or else from the
// repository root, where `npm run build` leaves the host's: `npm run build && npm run
// pack:platforms -- linux-x64-gnu` needs nothing more. These are the tarballs `npm publish`
// would upload; __test__/pack-install.spec.ts installs two of them into an empty project.
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { checkLoader } from './check-artifacts.mjs'
import { binaryFile, binaryPath, localPlatforms, packageDir, platformNamed, platforms, root } from './platforms.mjs'

/** The environment without the `npm_*` variables an enclosing `npm run`/`npm test` sets. */
export function cleanEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')))
  return { ...env, ...extra }
}

/**
 * `npm pack` of the package in `dir` into `destination`. Returns npm's description of the
 * tarball: `{ filename, path, size, files: [{ path, size }] }`.
 */
export function packPackage(dir, destination) {
  mkdirSync(destination, { recursive: true })
  const r = spawnSync('npm', ['pack', '--json', '--pack-destination', destination], { cwd: dir, encoding: 'utf8', env: cleanEnv() })
  if (r.status !== 0) throw new Error(`npm pack in ${dir} failed (${r.status ?? r.error?.message}): ${r.stderr}`)
  const [info] = JSON.parse(r.stdout)
  return { filename: info.filename, path: join(destination, info.filename), size: info.size, files: info.files }
}

/**
 * `npm pack` of a platform package. With `binary` (another build of the same platform, e.g.
 * the one `npm run build` leaves at the root), the package folder is copied to a scratch
 * folder with that binary in it, so the repository is not touched.
 */
export function packPlatform(p, destination, binary = binaryPath(p)) {
  if (!existsSync(binary)) throw new Error(`${binary}: missing (run \`npm run build\` for this machine's platform, \`npm run build:all\` for every one)`)
  if (binary === binaryPath(p)) return packPackage(packageDir(p), destination)
  const scratch = mkdtempSync(join(tmpdir(), `pack-${p.platform}-`))
  try {
    for (const f of readdirSync(packageDir(p)).filter((f) => !f.endsWith('.node'))) {
      copyFileSync(join(packageDir(p), f), join(scratch, f))
    }
    copyFileSync(binary, join(scratch, binaryFile(p)))
    return packPackage(scratch, destination)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/** The built binary of a platform: `npm/<platform>/`'s, else the one `npm run build` left at the root. */
export function builtBinary(p) {
  const atRoot = join(root, binaryFile(p))
  return existsSync(binaryPath(p)) || !existsSync(atRoot) ? binaryPath(p) : atRoot
}

/** Where the tarballs go when no `--out-dir` is given. */
export const DEFAULT_OUT_DIR = join(root, 'target', 'packs')

export const USAGE = `usage: npm run pack:platforms -- [--out-dir <dir>] [<platform>...]

Packs the root package and each platform package whose binary is built (the named platforms,
else every one built here) with \`npm pack\`, and prints the tarballs' names and sizes.

  --out-dir <dir>   the folder the tarballs go to, made if missing (default: target/packs/);
                    a relative path is taken from the folder npm was run in.
                    --pack-destination <dir> is the same (npm pack's name for it).
  -h, --help        print this and exit
  <platform>        one of: ${platforms.map((p) => p.platform).join(', ')}`

/** A bad command line: main prints the message and the usage. */
export class UsageError extends Error {}

/**
 * Reads the command line: `{ help, outDir, platforms }`, `outDir` absolute (a relative one is
 * taken from `cwd`). Throws an error saying what is wrong with a bad option or value.
 */
export function parseArgs(argv, cwd = process.cwd()) {
  const names = []
  let outDir = DEFAULT_OUT_DIR
  let help = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const flag = /^(--out-dir|--pack-destination)(?:=(.*))?$/s.exec(arg)
    if (flag) {
      const value = flag[2] ?? argv[++i]
      if (value === undefined || value === '' || (flag[2] === undefined && value.startsWith('-'))) {
        throw new UsageError(`${flag[1]} needs a folder, e.g. ${flag[1]} ./packs`)
      }
      outDir = resolve(cwd, value)
      if (existsSync(outDir) && !statSync(outDir).isDirectory()) throw new UsageError(`${flag[1]} ${value}: ${outDir} exists and is not a folder`)
    } else if (arg === '-h' || arg === '--help') {
      help = true
    } else if (arg.startsWith('-')) {
      throw new UsageError(`unknown option ${arg} (--out-dir <dir>, --help)`)
    } else {
      names.push(arg)
    }
  }
  const chosen = names.map((name) => {
    try {
      return platformNamed(name)
    } catch (e) {
      throw new UsageError(e.message)
    }
  })
  return { help, outDir, platforms: chosen }
}

function main() {
  // `npm run pack:platforms` starts the script in the package's folder; INIT_CWD is where npm
  // was run from (a variable a script run otherwise may have inherited, so only then).
  const fromNpm = process.env.npm_lifecycle_event === 'pack:platforms' && process.env.INIT_CWD
  const args = parseArgs(process.argv.slice(2), fromNpm || process.cwd())
  if (args.help) {
    console.log(USAGE)
    return
  }
  const chosen = args.platforms.length ? args.platforms : localPlatforms.filter((p) => existsSync(builtBinary(p)))
  if (chosen.length === 0) throw new Error('no binary is built (run `npm run build` or `npm run build:all`)')
  const loader = checkLoader()
  if (loader.length) throw new Error(loader.join('; '))
  const destination = args.outDir
  const packs = [packPackage(root, destination), ...chosen.map((p) => packPlatform(p, destination, builtBinary(p)))]
  for (const pack of packs) {
    console.log(`${pack.filename.padEnd(40)} ${String(pack.size).padStart(9)} B  ${pack.files.length} files`)
  }
  console.log(`\n${packs.length} tarballs in ${destination}; to install them in a project:`)
  console.log(`  npm install ${packs.map((pack) => pack.path).join(' ')}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main()
  } catch (e) {
    console.error(`pack:platforms failed: ${e.message}`)
    if (e instanceof UsageError) console.error(`\n${USAGE}`)
    process.exit(1)
  }
}
