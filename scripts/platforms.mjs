// The platforms context-trim ships prebuilt binaries for, and what each binary and its
// `npm/<platform>/package.json` must look like. One table, read by build-all, check-artifacts,
// smoke-arm64 and the pack-and-install test. It is written out by hand (not derived from the
// napi CLI's own triple parser) so that the checks are independent of the tool that builds.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The root package.json. */
export const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** `napi.binaryName`: every binary is `<binaryName>.<platform>.node`. */
export const binaryName = rootPackage.napi.binaryName

/**
 * The glibc that the Linux gnu binaries are linked against (zig's versioned target
 * `<triple>.2.17`): the same floor as the CI workflow's `--use-napi-cross` toolchain.
 */
export const glibcFloor = '2.17'

/**
 * Every target of `napi.targets`.
 * - `triple`: the Rust target; `buildTarget`: what `napi build --target` is given (a glibc pin
 *   for the gnu targets); `where`: `here` (build-all) or `ci` (only the CI workflow builds it).
 * - `os`/`cpu`/`libc`: the fields npm matches against `process.platform`/`arch`/the libc.
 * - `format`: `elf` with `machine` (e_machine) or `macho` with `cputype` and `minMacos`, the
 *   oldest macOS it loads on: the CI workflow's MACOSX_DEPLOYMENT_TARGET (10.13) for x64, and
 *   11.0, the first macOS on Apple silicon, for arm64. build-all passes it to the build as
 *   MACOSX_DEPLOYMENT_TARGET (zig's own default would be 13.0).
 */
export const platforms = [
  {
    platform: 'linux-x64-gnu',
    triple: 'x86_64-unknown-linux-gnu',
    buildTarget: `x86_64-unknown-linux-gnu.${glibcFloor}`,
    where: 'here',
    os: 'linux',
    cpu: 'x64',
    libc: 'glibc',
    format: 'elf',
    machine: 'x86-64',
  },
  {
    platform: 'linux-x64-musl',
    triple: 'x86_64-unknown-linux-musl',
    buildTarget: 'x86_64-unknown-linux-musl',
    where: 'here',
    os: 'linux',
    cpu: 'x64',
    libc: 'musl',
    format: 'elf',
    machine: 'x86-64',
  },
  {
    platform: 'linux-arm64-gnu',
    triple: 'aarch64-unknown-linux-gnu',
    buildTarget: `aarch64-unknown-linux-gnu.${glibcFloor}`,
    where: 'here',
    os: 'linux',
    cpu: 'arm64',
    libc: 'glibc',
    format: 'elf',
    machine: 'aarch64',
  },
  {
    platform: 'linux-arm64-musl',
    triple: 'aarch64-unknown-linux-musl',
    buildTarget: 'aarch64-unknown-linux-musl',
    where: 'here',
    os: 'linux',
    cpu: 'arm64',
    libc: 'musl',
    format: 'elf',
    machine: 'aarch64',
  },
  {
    platform: 'darwin-x64',
    triple: 'x86_64-apple-darwin',
    buildTarget: 'x86_64-apple-darwin',
    where: 'here',
    os: 'darwin',
    cpu: 'x64',
    libc: null,
    format: 'macho',
    cputype: 'x86_64',
    minMacos: '10.13',
  },
  {
    platform: 'darwin-arm64',
    triple: 'aarch64-apple-darwin',
    buildTarget: 'aarch64-apple-darwin',
    where: 'here',
    os: 'darwin',
    cpu: 'arm64',
    libc: null,
    format: 'macho',
    cputype: 'arm64',
    minMacos: '11.0',
  },
  {
    platform: 'win32-x64-msvc',
    triple: 'x86_64-pc-windows-msvc',
    buildTarget: 'x86_64-pc-windows-msvc',
    where: 'ci',
    os: 'win32',
    cpu: 'x64',
    libc: null,
    format: 'pe',
  },
  {
    platform: 'win32-arm64-msvc',
    triple: 'aarch64-pc-windows-msvc',
    buildTarget: 'aarch64-pc-windows-msvc',
    where: 'ci',
    os: 'win32',
    cpu: 'arm64',
    libc: null,
    format: 'pe',
  },
]

/** The platforms built on this machine by `npm run build:all`. */
export const localPlatforms = platforms.filter((p) => p.where === 'here')

/** The file name of a platform's binary, e.g. `context-trim.linux-x64-gnu.node`. */
export function binaryFile(p) {
  return `${binaryName}.${p.platform}.node`
}

/** The folder of a platform's npm package. */
export function packageDir(p) {
  return join(root, 'npm', p.platform)
}

/** Where a platform's binary goes: the file `npm/<platform>/package.json`'s `main` names. */
export function binaryPath(p) {
  return join(packageDir(p), binaryFile(p))
}

/** Looks a platform up by name; throws on an unknown one. */
export function platformNamed(name) {
  const p = platforms.find((q) => q.platform === name)
  if (!p) throw new Error(`unknown platform ${name} (known: ${platforms.map((q) => q.platform).join(', ')})`)
  return p
}
