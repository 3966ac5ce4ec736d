#!/usr/bin/env node
// `npm run check:artifacts [-- <platform>...]`: checks every platform package under npm/ and
// every binary built here (scripts/platforms.mjs):
// - the binary is there, is the right format and architecture (ELF x86-64/aarch64, Mach-O
//   x86_64/arm64), links the right C library (glibc: needs libc.so.6 and no symbol version
//   above the glibc floor; musl: needs musl's libc.so), exports `napi_register_module_v1`
//   (read from the ELF .dynsym / the Mach-O dyld export trie by scripts/binary-format.mjs, no
//   external tool), is stripped, and on darwin-arm64 carries a valid code signature, without
//   which macOS on Apple silicon refuses to load it;
// - `npm/<platform>/package.json` has the right name, version (the root's), os, cpu, libc,
//   main and files; npm/, `napi.targets` and this table list the same platforms; and the
//   generated index.js expects the platform packages at the root's version.
// Prints one line per binary; on any mismatch prints `<file>: <what is wrong>` and exits 1.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

import { compareVersions, inspectBinary } from './binary-format.mjs'
import { PATCH_MARKER } from './patch-loader.mjs'
import { binaryFile, binaryPath, glibcFloor, localPlatforms, packageDir, platformNamed, platforms, root, rootPackage } from './platforms.mjs'

/** The symbol Node.js looks up to register a napi module. */
export const NAPI_SYMBOL = 'napi_register_module_v1'

const rel = (file) => relative(root, file)

/**
 * Checks one binary against its platform. Returns `{ facts, problems }`: `facts` is what was
 * read (for the summary), `problems` are `<file>: <mismatch>` strings. `release: false` is for
 * a development build of this machine (`npm run build`): it is then neither required to be
 * stripped nor to keep to the glibc floor, which only the zig builds of build:all pin.
 */
export function checkBinary(p, file = binaryPath(p), { release = true } = {}) {
  const where = rel(file)
  if (!existsSync(file)) return { facts: null, problems: [`${where}: missing (run \`npm run build:all\`)`] }
  let info
  try {
    info = inspectBinary(readFileSync(file), where)
  } catch (e) {
    return { facts: null, problems: [e.message] }
  }
  const problems = []
  const facts = { platform: p.platform, bytes: statSync(file).size, ...info }
  const expect = (ok, text) => {
    if (!ok) problems.push(`${where}: ${text}`)
  }
  if (p.format === 'elf') {
    expect(info.format === 'elf', `is ${info.format}, expected an ELF shared object`)
    if (info.format !== 'elf') return { facts, problems }
    expect(info.arch === p.machine, `architecture is ${info.arch}, expected ${p.machine}`)
    expect(info.type === 'shared object', `is ${info.type}, expected a shared object (ET_DYN)`)
    expect(info.libc === p.libc, `links ${info.libc} (DT_NEEDED: ${info.needed.join(', ') || 'none'}), expected ${p.libc}`)
    if (p.libc === 'glibc') {
      const newest = info.glibcVersions.at(-1)
      facts.glibc = newest?.slice(6) ?? 'any'
      const tooNew = info.glibcVersions.filter((v) => compareVersions(v.slice(6), glibcFloor) > 0)
      expect(!release || tooNew.length === 0, `needs ${tooNew.join(', ')}, newer than the glibc floor ${glibcFloor}`)
    } else {
      expect(info.glibcVersions.length === 0, `has glibc symbol versions (${info.glibcVersions.join(', ')}) in a musl build`)
    }
  } else if (p.format === 'macho') {
    expect(info.format === 'macho', `is ${info.format}, expected a thin 64-bit Mach-O`)
    if (info.format !== 'macho') return { facts, problems }
    expect(info.arch === p.cputype, `cputype is ${info.arch}, expected ${p.cputype}`)
    expect(info.filetype === 'dylib' || info.filetype === 'bundle', `is a Mach-O ${info.filetype}, expected a dylib or bundle`)
    expect(
      info.minMacos !== null && compareVersions(info.minMacos, p.minMacos) <= 0,
      `needs macOS ${info.minMacos ?? '(no version load command)'}, expected ${p.minMacos} or older (MACOSX_DEPLOYMENT_TARGET)`,
    )
    if (p.cputype === 'arm64') expect(info.signature !== null, 'has no code signature: macOS on Apple silicon will not load it')
    if (info.signature) {
      const s = info.signature
      expect(s.valid, `code signature does not match the file (${s.error ?? `page ${s.badPage} hash differs`}): it was changed after signing`)
    }
  } else {
    problems.push(`${where}: ${p.platform} is not built here`)
    return { facts, problems }
  }
  const symbol = p.format === 'macho' ? `_${NAPI_SYMBOL}` : NAPI_SYMBOL
  expect(info.exports.includes(symbol), `does not export ${symbol} (exports: ${info.exports.slice(0, 5).join(', ') || 'nothing'})`)
  expect(!release || info.stripped === true, 'is not stripped (the release profile strips symbols)')
  return { facts, problems }
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b)
const show = (v) => (v === undefined ? 'missing' : JSON.stringify(v))

/** Checks one `npm/<platform>/package.json`; returns `<file>: <mismatch>` strings. */
export function checkPackageJson(p, pkg, where = rel(join(packageDir(p), 'package.json'))) {
  const problems = []
  const expect = (field, actual, wanted) => {
    if (!same(actual, wanted)) problems.push(`${where}: ${field} is ${show(actual)}, expected ${show(wanted)}`)
  }
  expect('name', pkg.name, `${rootPackage.name}-${p.platform}`)
  expect('version', pkg.version, rootPackage.version)
  expect('os', pkg.os, [p.os])
  expect('cpu', pkg.cpu, [p.cpu])
  expect('libc', pkg.libc, p.libc ? [p.libc] : undefined)
  expect('main', pkg.main, binaryFile(p))
  expect('files', pkg.files, [binaryFile(p)])
  expect('license', pkg.license, rootPackage.license)
  return problems
}

/**
 * Each platform package ships the root's LICENSE (npm packs a LICENSE file whatever `files`
 * says): a copy in `npm/<platform>/`, identical to the root's.
 */
export function checkLicense(p) {
  const file = join(packageDir(p), 'LICENSE')
  if (!existsSync(file)) return [`${rel(file)}: missing (copy the root LICENSE)`]
  if (readFileSync(file, 'utf8') !== readFileSync(join(root, 'LICENSE'), 'utf8')) return [`${rel(file)}: differs from the root LICENSE`]
  return []
}

/** The platform lists agree: this table, `napi.targets`, the folders of npm/, optionalDependencies. */
export function checkPlatformLists() {
  const problems = []
  const table = platforms.map((p) => p.triple).sort()
  const targets = [...rootPackage.napi.targets].sort()
  if (!same(table, targets)) {
    problems.push(`package.json: napi.targets ${show(targets)} differ from scripts/platforms.mjs ${show(table)}`)
  }
  const dirs = readdirSync(join(root, 'npm')).sort()
  const names = platforms.map((p) => p.platform).sort()
  if (!same(dirs, names)) problems.push(`npm/: holds ${show(dirs)}, expected ${show(names)}`)
  // What `npm install context-trim` resolves to a binary: every platform package, at the
  // root's version (`napi pre-publish` writes the same map at release time).
  const optional = rootPackage.optionalDependencies ?? {}
  for (const p of platforms) {
    const name = `${rootPackage.name}-${p.platform}`
    if (optional[name] !== rootPackage.version) {
      problems.push(`package.json: optionalDependencies["${name}"] is ${show(optional[name])}, expected ${show(rootPackage.version)}`)
    }
  }
  const extra = Object.keys(optional).filter((name) => !platforms.some((p) => name === `${rootPackage.name}-${p.platform}`))
  if (extra.length) problems.push(`package.json: optionalDependencies name ${show(extra)}, which are not platform packages`)
  return problems
}

/**
 * The generated loader (index.js) compares each platform package's version with the root's,
 * with the version written in at generation time: after a version bump it must be regenerated.
 */
export function checkLoader(text = readFileSync(join(root, 'index.js'), 'utf8')) {
  const versions = [...text.matchAll(/bindingPackageVersion !== '([^']*)'/g)].map((m) => m[1])
  const stale = [...new Set(versions.filter((v) => v !== rootPackage.version))]
  if (versions.length === 0) return ['index.js: has no platform package version check (is it generated by napi?)']
  if (stale.length) {
    return [`index.js: checks platform packages against version ${stale.join(', ')}, expected ${rootPackage.version} (run \`npm run build:debug\` after a version bump)`]
  }
  if (!text.includes(PATCH_MARKER)) {
    return ["index.js: has napi's generic load error, not the one naming the platform package (run `npm run build:debug`, which runs scripts/patch-loader.mjs)"]
  }
  if (!text.includes(`}@${rootPackage.version} (npm install`)) {
    return [`index.js: its load error names another version than ${rootPackage.version} (run \`npm run build:debug\`)`]
  }
  return []
}

function describe(f) {
  if (f.format === 'elf') {
    const libc = f.libc === 'glibc' ? `glibc >= ${f.glibc}` : f.libc
    return `ELF ${f.arch}, ${libc}`
  }
  const sig = f.signature ? `signed${f.signature.adhoc ? ' ad hoc' : ''}, ${f.signature.pages} pages verified` : 'unsigned'
  return `Mach-O ${f.arch} ${f.filetype}, macOS >= ${f.minMacos ?? '?'}, ${sig}`
}

function main() {
  const names = process.argv.slice(2)
  const chosen = names.length ? names.map(platformNamed) : platforms
  const problems = names.length ? [] : [...checkPlatformLists(), ...checkLoader()]
  for (const p of chosen) {
    const file = join(packageDir(p), 'package.json')
    if (!existsSync(file)) {
      problems.push(`${rel(file)}: missing`)
      continue
    }
    problems.push(...checkPackageJson(p, JSON.parse(readFileSync(file, 'utf8'))), ...checkLicense(p))
  }
  for (const p of chosen.filter((q) => localPlatforms.includes(q))) {
    const { facts, problems: found } = checkBinary(p)
    problems.push(...found)
    if (facts) {
      const n = facts.exports.length
      const symbol = `${facts.exports.some((e) => e.endsWith(NAPI_SYMBOL)) ? `exports ${NAPI_SYMBOL}` : 'NO napi symbol'} (${n} export${n === 1 ? '' : 's'})`
      console.log(`${p.platform.padEnd(17)} ${String(facts.bytes).padStart(9)} B  ${describe(facts)}; ${symbol}; ${facts.stripped ? 'stripped' : 'NOT stripped'}`)
    }
  }
  for (const p of chosen.filter((q) => !localPlatforms.includes(q))) {
    console.log(`${p.platform.padEnd(17)} package.json only: the binary is built by the CI workflow`)
  }
  if (problems.length) {
    console.error(`\ncheck:artifacts: ${problems.length} problem${problems.length === 1 ? '' : 's'}`)
    for (const problem of problems) console.error(`  ${problem}`)
    process.exit(1)
  }
  console.log(`\ncheck:artifacts: ${chosen.length} packages and ${chosen.filter((q) => localPlatforms.includes(q)).length} binaries OK`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main()
