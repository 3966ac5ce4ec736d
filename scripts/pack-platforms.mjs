#!/usr/bin/env node
// `npm run pack:platforms [-- <platform>...]`: `npm pack` of the root package and of every
// platform package whose binary is built (by default all built here), into target/packs/.
// A platform's binary is taken from `npm/<platform>/` (`npm run build:all`) or else from the
// repository root, where `npm run build` leaves the host's: `npm run build && npm run
// pack:platforms -- linux-x64-gnu` needs nothing more. These are the tarballs `npm publish`
// would upload; __test__/pack-install.spec.ts installs two of them into an empty project.
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { checkLoader } from './check-artifacts.mjs'
import { binaryFile, binaryPath, localPlatforms, packageDir, platformNamed, root } from './platforms.mjs'

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

function main() {
  const names = process.argv.slice(2)
  const chosen = names.length ? names.map(platformNamed) : localPlatforms.filter((p) => existsSync(builtBinary(p)))
  if (chosen.length === 0) throw new Error('no binary is built (run `npm run build` or `npm run build:all`)')
  const loader = checkLoader()
  if (loader.length) throw new Error(loader.join('; '))
  const destination = join(root, 'target', 'packs')
  const packs = [packPackage(root, destination), ...chosen.map((p) => packPlatform(p, destination, builtBinary(p)))]
  for (const pack of packs) {
    console.log(`${pack.filename.padEnd(40)} ${String(pack.size).padStart(9)} B  ${pack.files.length} files`)
  }
  console.log(`\n${packs.length} tarballs in ${destination}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    main()
  } catch (e) {
    console.error(`pack:platforms failed: ${e.message}`)
    process.exit(1)
  }
}
