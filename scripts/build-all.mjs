#!/usr/bin/env node
// `npm run build:all [-- <platform>...]`: builds the release addon for every platform that
// can be built on a Linux x64 machine (see scripts/platforms.mjs) and puts each binary where
// `napi artifacts` and `npm/<platform>/package.json`'s `main` expect it:
// `npm/<platform>/<binaryName>.<platform>.node`. Windows is built by the CI workflow only
// (docs/platforms.md says why).
//
// Idempotent: it installs only what is missing (zig from PyPI, cargo-zigbuild from crates.io,
// the rustup targets), and Cargo rebuilds only what changed. Builds run one at a time, under
// `nice -n 19` with CARGO_BUILD_JOBS=1 unless the caller set CARGO_BUILD_JOBS: the machines
// this runs on are small and shared.
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs'
import { delimiter, join } from 'node:path'

import { binaryFile, binaryPath, localPlatforms, platformNamed, root } from './platforms.mjs'
import { patchDeclarations } from './patch-declarations.mjs'
import { patchLoader } from './patch-loader.mjs'

/** The zig that the CI workflow pins (mlugg/setup-zig); the PyPI package `ziglang` ships it. */
const ZIG_VERSION = process.env.ZIG_VERSION ?? '0.14.1'
/** The cargo-zigbuild this was tried with. */
const ZIGBUILD_VERSION = process.env.CARGO_ZIGBUILD_VERSION ?? '0.24.1'

const env = { ...process.env, CARGO_BUILD_JOBS: process.env.CARGO_BUILD_JOBS ?? '1' }

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env, cwd: root, ...options })
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exited with ${r.status ?? r.signal}`)
}

function output(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, cwd: root })
  return r.status === 0 ? r.stdout.trim() : null
}

function step(text) {
  console.log(`\n== ${text}`)
}

/** zig on PATH, or the one in the PyPI package `ziglang` (installed if missing). */
function ensureZig() {
  const onPath = output('zig', ['version'])
  if (onPath) {
    if (onPath !== ZIG_VERSION) console.log(`zig ${onPath} on PATH (the CI workflow uses ${ZIG_VERSION})`)
    return onPath
  }
  const locate = ['-c', 'import ziglang, os; print(os.path.dirname(ziglang.__file__))']
  let dir = output('python3', locate)
  if (!dir) {
    console.log(`installing zig ${ZIG_VERSION} from PyPI (ziglang)`)
    run('python3', ['-m', 'pip', 'install', '--quiet', `ziglang==${ZIG_VERSION}`])
    dir = output('python3', locate)
    if (!dir) throw new Error('pip installed ziglang but python3 cannot import it')
  }
  env.PATH = `${dir}${delimiter}${env.PATH}`
  const version = output('zig', ['version'])
  if (!version) throw new Error(`no runnable zig in ${dir}`)
  return version
}

/** cargo-zigbuild, installed from crates.io if missing. */
function ensureZigbuild() {
  // `cargo zigbuild --version` is not accepted (it is `cargo build`'s parser); the binary is.
  let version = output('cargo-zigbuild', ['--version'])
  if (!version) {
    console.log(`installing cargo-zigbuild ${ZIGBUILD_VERSION} from crates.io (a few minutes, once)`)
    run('nice', ['-n', '19', 'cargo', 'install', 'cargo-zigbuild', '--locked', '--version', ZIGBUILD_VERSION])
    version = output('cargo-zigbuild', ['--version'])
    if (!version) throw new Error('cargo install cargo-zigbuild succeeded but `cargo zigbuild` does not run')
  }
  return version
}

/** The rustup targets of the platforms to build. */
function ensureTargets(platforms) {
  const installed = (output('rustup', ['target', 'list', '--installed']) ?? '').split('\n')
  const missing = platforms.map((p) => p.triple).filter((t) => !installed.includes(t))
  if (missing.length) run('rustup', ['target', 'add', ...missing])
}

/**
 * One release build through cargo-zigbuild, into a staging folder under target/ (so that the
 * index.js/index.d.ts napi writes beside the binary never touch the committed ones), then the
 * binary is copied into its npm package.
 */
function build(p) {
  const staging = join(root, 'target', 'platforms', p.platform)
  mkdirSync(staging, { recursive: true })
  const started = Date.now()
  const buildEnv = p.minMacos ? { ...env, MACOSX_DEPLOYMENT_TARGET: p.minMacos } : env
  run('nice', [
    '-n',
    '19',
    join(root, 'node_modules', '.bin', 'napi'),
    'build',
    '--platform',
    '--release',
    '--target',
    p.buildTarget,
    '-x',
    '--output-dir',
    staging,
  ], { env: buildEnv })
  const built = join(staging, binaryFile(p))
  if (!existsSync(built)) throw new Error(`napi build finished but ${built} is missing`)
  copyFileSync(built, binaryPath(p))
  for (const generated of ['index.js', 'index.d.ts']) {
    const fresh = join(staging, generated)
    // The committed loader is napi's with its load error rewritten by patch-loader.mjs, and
    // the declarations napi's with the classes' type parameters of patch-declarations.mjs.
    const text = existsSync(fresh) ? readFileSync(fresh, 'utf8') : null
    const patch = generated === 'index.js' ? patchLoader : patchDeclarations
    const expected = text !== null ? patch(text) : text
    if (expected !== null && expected !== readFileSync(join(root, generated), 'utf8')) {
      console.warn(`warning: ${generated} generated for ${p.platform} differs from the committed one: run \`npm run build:debug\` and commit it`)
    }
  }
  return { platform: p.platform, seconds: (Date.now() - started) / 1000, bytes: statSync(binaryPath(p)).size }
}

function main() {
  const names = process.argv.slice(2)
  const platforms = names.length ? names.map(platformNamed) : localPlatforms
  const remote = platforms.filter((p) => p.where !== 'here')
  if (remote.length) {
    throw new Error(`${remote.map((p) => p.platform).join(', ')}: built by the CI workflow only, not here (see docs/platforms.md)`)
  }
  step('toolchain')
  console.log(`zig ${ensureZig()}`)
  console.log(ensureZigbuild())
  ensureTargets(platforms)
  console.log(`rustup targets: ${platforms.map((p) => p.triple).join(' ')}`)
  console.log(`CARGO_BUILD_JOBS=${env.CARGO_BUILD_JOBS}, nice -n 19`)

  const results = []
  for (const p of platforms) {
    step(`${p.platform} (${p.buildTarget})`)
    results.push(build(p))
  }
  step('built')
  for (const r of results) {
    console.log(`${r.platform.padEnd(18)} ${String(r.bytes).padStart(10)} bytes  ${r.seconds.toFixed(0).padStart(4)} s  npm/${r.platform}/`)
  }
}

try {
  main()
} catch (e) {
  console.error(`build:all failed: ${e.message}`)
  process.exit(1)
}
