#!/usr/bin/env node
// `npm run smoke:arm64`: loads the linux-arm64-gnu binary in a real arm64 Node.js under
// user-mode emulation and checks that it computes exactly what the linux-x64-gnu binary
// computes on x64 Node: scripts/smoke.cjs on every bundled transcript, outputs compared byte
// for byte.
//
// Everything comes from Debian's packages and lands under target/arm64-emu/ (nothing is
// installed on the machine, no dpkg architecture is added):
// - qemu-aarch64-static: from PATH if there, else `apt-get download qemu-user-static`,
//   unpacked with `dpkg-deb -x`;
// - arm64 Node.js: `nodejs:arm64` and its arm64 libraries, fetched with `apt-get` run against
//   a private state folder set to the arm64 architecture, unpacked into a sysroot that qemu
//   uses as its library prefix (`-L`, like QEMU_LD_PREFIX).
// Both apps load context-trim through the generated loader from an install-like
// node_modules (the root package + the platform package), so the loader's arch detection
// is exercised too.
import { spawnSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { binaryFile, binaryPath, packageDir, platformNamed, root } from './platforms.mjs'

const emu = join(root, 'target', 'arm64-emu')
const aptDir = join(emu, 'apt')
const sysroot = join(emu, 'sysroot')
const transcriptsDir = join(root, 'samples', 'transcripts')

function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options })
  if (r.error) throw new Error(`${cmd} ${args.join(' ')}: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exited with ${r.status ?? r.signal}\n${r.stderr}`)
  return r
}

function onPath(cmd) {
  return spawnSync(cmd, ['--version'], { encoding: 'utf8' }).status === 0 ? cmd : null
}

/** apt-get with a private state folder, so the machine's dpkg and apt state are untouched. */
function aptGet(arch, args) {
  for (const d of ['lists/partial', 'cache/archives/partial']) mkdirSync(join(aptDir, arch, d), { recursive: true })
  const status = join(aptDir, arch, 'status')
  if (!existsSync(status)) writeFileSync(status, '')
  return run('apt-get', [
    '-q',
    '-o', `APT::Architecture=${arch}`,
    '-o', `APT::Architectures::=${arch}`,
    '-o', `Dir::State::Lists=${join(aptDir, arch, 'lists')}`,
    '-o', `Dir::State::status=${status}`,
    '-o', `Dir::Cache=${join(aptDir, arch, 'cache')}`,
    '-o', 'Debug::NoLocking=1',
    '-o', 'APT::Sandbox::User=root',
    ...args,
  ])
}

/** Downloads `packages` (with their dependencies) for `arch` and unpacks them into `into`. */
function fetchDebs(arch, packages, into) {
  aptGet(arch, ['update'])
  aptGet(arch, ['install', '--download-only', '--no-install-recommends', '-y', ...packages])
  const archives = join(aptDir, arch, 'cache', 'archives')
  const debs = readdirSync(archives).filter((f) => f.endsWith('.deb'))
  mkdirSync(into, { recursive: true })
  for (const deb of debs) run('dpkg-deb', ['-x', join(archives, deb), into])
  return debs
}

/** qemu-aarch64(-static): the machine's, or Debian's qemu-user-static unpacked here. */
function ensureQemu() {
  const found = onPath('qemu-aarch64-static') ?? onPath('qemu-aarch64')
  if (found) return found
  const local = join(emu, 'qemu', 'usr', 'bin', 'qemu-aarch64-static')
  if (!existsSync(local)) {
    console.log('fetching qemu-user-static (amd64) from Debian into target/arm64-emu/qemu')
    fetchDebs('amd64', ['qemu-user-static'], join(emu, 'qemu'))
  }
  return local
}

/** Debian's arm64 Node.js and its libraries, unpacked into target/arm64-emu/sysroot. */
function ensureArm64Node() {
  const node = join(sysroot, 'usr', 'bin', 'node')
  if (!existsSync(node)) {
    console.log('fetching nodejs:arm64 and its libraries from Debian into target/arm64-emu/sysroot')
    const debs = fetchDebs('arm64', ['nodejs'], sysroot)
    console.log(`  ${debs.length} packages: ${debs.map((d) => d.split('_')[0]).join(' ')}`)
  }
  return node
}

/**
 * An app folder whose node_modules holds the root package and one platform package. The app has
 * its own package.json: without one, Node looks for the package the app is in further up,
 * finds the repository's (named context-trim, with `exports`), and `require('context-trim')`
 * resolves to the repository itself (a package's self-reference), not to node_modules.
 */
function stageApp(platform) {
  const p = platformNamed(platform)
  if (!existsSync(binaryPath(p))) throw new Error(`${binaryPath(p)}: missing (run \`npm run build:all\`)`)
  const app = join(emu, `app-${platform}`)
  rmSync(app, { recursive: true, force: true })
  const pkg = join(app, 'node_modules', 'context-trim')
  mkdirSync(pkg, { recursive: true })
  for (const f of ['package.json', 'index.js', 'index.d.ts']) copyFileSync(join(root, f), join(pkg, f))
  cpSync(packageDir(p), join(app, 'node_modules', `context-trim-${platform}`), {
    recursive: true,
    filter: (src) => !src.endsWith('.node') || src.endsWith(binaryFile(p)),
  })
  copyFileSync(join(root, 'scripts', 'smoke.cjs'), join(app, 'smoke.cjs'))
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: `context-trim-smoke-${platform}`, private: true }, null, 2) + '\n')
  return app
}

function smoke(label, cmd, args, app, transcripts) {
  const started = Date.now()
  // Raw bytes, not decoded text: the comparison is byte for byte.
  const r = spawnSync(cmd, [...args, 'smoke.cjs', ...transcripts], { cwd: app, maxBuffer: 256 * 1024 * 1024 })
  if (r.error || r.status !== 0) throw new Error(`${label} run failed (${r.error?.message ?? r.status ?? r.signal}): ${r.stderr}`)
  const header = JSON.parse(r.stderr.toString('utf8').trim().split('\n')[0])
  console.log(`${label}: node ${header.node} (${header.arch}), ${((Date.now() - started) / 1000).toFixed(1)} s, ${r.stdout.length} bytes of output`)
  console.log(`  loaded ${header.native.map((f) => f.slice(app.length + 1)).join(', ')}`)
  return { header, stdout: r.stdout }
}

function main() {
  const qemu = ensureQemu()
  const node = ensureArm64Node()
  const qemuVersion = run(qemu, ['--version']).stdout.split('\n')[0]
  console.log(qemuVersion)
  const transcripts = readdirSync(transcriptsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(transcriptsDir, f))

  const x64App = stageApp('linux-x64-gnu')
  const x64 = smoke('x64  ', process.execPath, [], x64App, transcripts)
  const armApp = stageApp('linux-arm64-gnu')
  const arm = smoke('arm64', qemu, ['-L', sysroot, node], armApp, transcripts)

  const problems = []
  if (x64.header.arch !== 'x64') problems.push(`the x64 run reports arch ${x64.header.arch}`)
  if (arm.header.arch !== 'arm64') problems.push(`the emulated run reports arch ${arm.header.arch}`)
  // Each run loads its app's platform package, not the repository's binary.
  for (const [run, app, platform] of [[x64, x64App, 'linux-x64-gnu'], [arm, armApp, 'linux-arm64-gnu']]) {
    const binary = join(app, 'node_modules', `context-trim-${platform}`, binaryFile(platformNamed(platform)))
    if (!run.header.native.includes(binary)) problems.push(`the ${platform} run did not load ${binary} (it loaded ${run.header.native.join(', ')})`)
  }
  if (!x64.stdout.equals(arm.stdout)) {
    const a = x64.stdout.toString('utf8').split('\n')
    const b = arm.stdout.toString('utf8').split('\n')
    const line = a.findIndex((l, i) => l !== b[i])
    problems.push(`outputs differ at line ${line + 1}: x64 ${JSON.stringify(a[line])} vs arm64 ${JSON.stringify(b[line])}`)
  }
  if (problems.length) {
    for (const problem of problems) console.error(`smoke:arm64: ${problem}`)
    process.exit(1)
  }
  const report = JSON.parse(x64.stdout.toString('utf8'))
  const counted = report.filter((r) => r.transcript).map((r) => `${r.transcript} ${r.estimateTokens.o200k_base}`)
  console.log(`\nsmoke:arm64: identical output (${x64.stdout.length} bytes) on ${transcripts.length} transcripts`)
  console.log(`  estimateTokens (o200k_base): ${counted.join(', ')}`)
}

try {
  main()
} catch (e) {
  console.error(`smoke:arm64 failed: ${e.message}`)
  process.exit(1)
}
