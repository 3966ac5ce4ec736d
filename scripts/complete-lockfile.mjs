#!/usr/bin/env node
// Completes package-lock.json with the per-platform optional packages that npm leaves out
// when the registry it talks to serves only some of them (this workplace's mirror serves only
// the linux-x64-gnu builds of napi-rs packages). `npm ci` refuses a lock file that lacks
// them, even though it would skip them on this platform. Each added entry carries the `os`,
// `cpu` and `libc` npm uses to skip a package, so nothing is fetched here, and on a platform
// that needs one npm resolves it by name and version from the registry.
//
// Run after `npm install`: node scripts/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs'

const PLATFORMS = {
  'android-arm-eabi': { os: ['android'], cpu: ['arm'] },
  'android-arm64': { os: ['android'], cpu: ['arm64'] },
  'darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
  'darwin-x64': { os: ['darwin'], cpu: ['x64'] },
  'darwin-universal': { os: ['darwin'] },
  'freebsd-x64': { os: ['freebsd'], cpu: ['x64'] },
  'freebsd-arm64': { os: ['freebsd'], cpu: ['arm64'] },
  'linux-arm-gnueabihf': { os: ['linux'], cpu: ['arm'], libc: ['glibc'] },
  'linux-arm-musleabihf': { os: ['linux'], cpu: ['arm'], libc: ['musl'] },
  'linux-arm64-gnu': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
  'linux-arm64-musl': { os: ['linux'], cpu: ['arm64'], libc: ['musl'] },
  'linux-ppc64-gnu': { os: ['linux'], cpu: ['ppc64'], libc: ['glibc'] },
  'linux-riscv64-gnu': { os: ['linux'], cpu: ['riscv64'], libc: ['glibc'] },
  'linux-s390x-gnu': { os: ['linux'], cpu: ['s390x'], libc: ['glibc'] },
  'linux-x64-gnu': { os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
  'linux-x64-musl': { os: ['linux'], cpu: ['x64'], libc: ['musl'] },
  'openharmony-arm64': { os: ['openharmony'], cpu: ['arm64'] },
  'wasm32-wasi': { cpu: ['wasm32'] },
  'win32-arm64-msvc': { os: ['win32'], cpu: ['arm64'] },
  'win32-ia32-msvc': { os: ['win32'], cpu: ['ia32'] },
  'win32-x64-msvc': { os: ['win32'], cpu: ['x64'] },
  // Deno's platform packages (@deno/<platform>): glibc named in full, Windows without the ABI.
  'linux-arm64-glibc': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
  'linux-x64-glibc': { os: ['linux'], cpu: ['x64'], libc: ['glibc'] },
  'win32-arm64': { os: ['win32'], cpu: ['arm64'] },
  'win32-x64': { os: ['win32'], cpu: ['x64'] },
}

const path = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(path, 'utf8'))
const packages = lock.packages
let added = 0
for (const [key, entry] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    // `<name>-<platform>` (napi-rs) or `@<scope>/<platform>` (Deno).
    const suffix = Object.keys(PLATFORMS).find((p) => dep.endsWith(`-${p}`) || dep.endsWith(`/${p}`))
    if (!suffix) continue
    // npm resolves from the nearest node_modules: the parent's own, then the root's.
    const nested = `${key}/node_modules/${dep}`
    const hoisted = `node_modules/${dep}`
    if (packages[nested] || packages[hoisted]) continue
    packages[hoisted] = {
      version,
      dev: entry.dev || undefined,
      optional: true,
      ...PLATFORMS[suffix],
    }
    added++
  }
}
const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)))
lock.packages = sorted
writeFileSync(path, JSON.stringify(lock, null, 2) + '\n')
console.log(`complete-lockfile: added ${added} platform entries`)
