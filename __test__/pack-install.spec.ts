// What a user gets from `npm i context-trim` on linux-x64-gnu: the root package and the
// platform package are packed with `npm pack`, installed with `npm install <the two tarballs>`
// (offline: nothing comes from the registry) into an empty project with no Rust toolchain on
// PATH, then used with require, import, the types under tsc --strict and `npx context-trim`.
// A second project installs the root package alone, as npm does when it skips the platform
// package, and gets the loader's error naming that package. The binary is the one `npm test`
// builds first (`npm run build`, at the repository root).
import test from 'ava'
import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

import { ct, transcript, transcriptsDir } from './helpers.js'
// Plain .mjs scripts (run by npm scripts with no compile step; typed by their .d.mts).
import { checkBinary, checkLicense, checkLoader, checkPackageJson, checkPlatformLists } from '../scripts/check-artifacts.mjs'
import { cleanEnv, DEFAULT_OUT_DIR, packPackage, packPlatform, parseArgs, UsageError, USAGE, type Pack } from '../scripts/pack-platforms.mjs'
import { platformNamed, platforms, root, rootPackage } from '../scripts/platforms.mjs'

const require = createRequire(import.meta.url)
const platform = platformNamed('linux-x64-gnu')
const rootBinary = join(root, 'context-trim.linux-x64-gnu.node')
const work = mkdtempSync(join(tmpdir(), 'context-trim-pack-'))
const app = join(work, 'app')
const bare = join(work, 'root-only')
const sample = join(transcriptsDir, 'openhands-ponyc-4595.json')

/** PATH without the Rust toolchain (rustup's ~/.cargo/bin and anything naming cargo or rustup). */
const pathWithoutRust = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((d) => !/[/\\]\.cargo[/\\]|[/\\]\.rustup[/\\]|cargo|rustup/i.test(`${d}/`))
  .join(delimiter)
const env = cleanEnv({ PATH: pathWithoutRust })
delete env.NAPI_RS_NATIVE_LIBRARY_PATH

function inApp(cmd: string, args: string[], cwd = app): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd, env, encoding: 'utf8' })
}

/** An empty project in `dir` with the tarballs installed: `npm install --offline <tarballs>`. */
function installInto(dir: string, tarballs: string[]): SpawnSyncReturns<string> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
  return inApp('npm', ['install', '--offline', '--no-audit', '--no-fund', ...tarballs], dir)
}

let rootPack: Pack
let platformPack: Pack
let install: SpawnSyncReturns<string>
let bareInstall: SpawnSyncReturns<string>

test.before(() => {
  if (!existsSync(rootBinary)) throw new Error(`${rootBinary} is missing: run \`npm run build\` (npm test does)`)
  rootPack = packPackage(root, join(work, 'packs'))
  platformPack = packPlatform(platform, join(work, 'packs'), rootBinary)
  install = installInto(app, [rootPack.path, platformPack.path])
  bareInstall = installInto(bare, [rootPack.path])
})

test.after.always(() => {
  rmSync(work, { recursive: true, force: true })
})

test('the binary npm test built is a linux-x64-gnu addon exporting the napi symbol', (t) => {
  const { facts, problems } = checkBinary(platform, rootBinary, { release: false })
  t.deepEqual(problems, [])
  t.is(facts?.arch, 'x86-64')
  t.is(facts?.libc, 'glibc')
  t.true(facts?.exports.includes('napi_register_module_v1'))
})

test('the artifact check names the file and the mismatch when a binary is not its platform', (t) => {
  const { problems } = checkBinary(platformNamed('linux-arm64-musl'), rootBinary)
  t.true(problems.includes('context-trim.linux-x64-gnu.node: architecture is x86-64, expected aarch64'), problems.join('\n'))
  t.true(problems.some((p) => p.startsWith('context-trim.linux-x64-gnu.node: links glibc (DT_NEEDED: ')), problems.join('\n'))
  const macos = checkBinary(platformNamed('darwin-arm64'), rootBinary).problems
  t.deepEqual(macos, ['context-trim.linux-x64-gnu.node: is elf, expected a thin 64-bit Mach-O'])
})

test('the artifact check names the package.json field that is wrong and what it should be', (t) => {
  const good = JSON.parse(readFileSync(join(root, 'npm', 'linux-arm64-musl', 'package.json'), 'utf8'))
  t.deepEqual(checkPackageJson(platformNamed('linux-arm64-musl'), good), [])
  const bad = { ...good, version: '0.0.1', cpu: ['x64'], libc: undefined, main: 'index.node' }
  t.deepEqual(checkPackageJson(platformNamed('linux-arm64-musl'), bad), [
    `npm/linux-arm64-musl/package.json: version is "0.0.1", expected "${rootPackage.version}"`,
    'npm/linux-arm64-musl/package.json: cpu is ["x64"], expected ["arm64"]',
    'npm/linux-arm64-musl/package.json: libc is missing, expected ["musl"]',
    'npm/linux-arm64-musl/package.json: main is "index.node", expected "context-trim.linux-arm64-musl.node"',
  ])
})

test('the artifact check finds a loader generated for another version', (t) => {
  t.deepEqual(checkLoader(), [])
  t.deepEqual(checkLoader('// napi\'s loader, not patched\nif (bindingPackageVersion !== \'' + rootPackage.version + '\') {}'), [
    "index.js: has napi's generic load error, not the one naming the platform package (run `npm run build:debug`, which runs scripts/patch-loader.mjs)",
  ])
  t.deepEqual(checkLoader("if (bindingPackageVersion !== '0.0.9' && process.env.X) {}"), [
    `index.js: checks platform packages against version 0.0.9, expected ${rootPackage.version} (run \`npm run build:debug\` after a version bump)`,
  ])
})

test('the root tarball holds the loader, the types, the LICENSE and the transcripts with their notices, but no binary', (t) => {
  const files = rootPack.files.map((f) => f.path)
  t.true(files.includes('index.js'))
  t.true(files.includes('index.d.ts'))
  t.true(files.includes('package.json'))
  t.true(files.includes('LICENSE'))
  t.true(files.includes('samples/transcripts/LICENSE-NOTICES.md'))
  // Every bundled transcript is traced to its source, whose notice LICENSE-NOTICES.md carries.
  const sources = readFileSync(join(transcriptsDir, 'SOURCES.md'), 'utf8')
  const transcripts = files.filter((f) => f.startsWith('samples/transcripts/') && f.endsWith('.json'))
  t.true(transcripts.length > 0)
  t.deepEqual(
    transcripts.filter((f) => !sources.includes(f.slice('samples/transcripts/'.length))),
    [],
  )
  t.deepEqual(
    files.filter((f) => f.endsWith('.node')),
    [],
  )
})

test('the linux-x64-gnu tarball holds its package.json, README, LICENSE and binary only', (t) => {
  t.is(platformPack.filename, `context-trim-linux-x64-gnu-${rootPackage.version}.tgz`)
  t.deepEqual(platformPack.files.map((f) => f.path).sort(), ['LICENSE', 'README.md', 'context-trim.linux-x64-gnu.node', 'package.json'])
  t.deepEqual(platforms.flatMap(checkLicense), [])
})

test('the packed root package declares every platform package at its own version', (t) => {
  const packed = JSON.parse(inApp('tar', ['-xzOf', rootPack.path, 'package/package.json']).stdout) as { optionalDependencies: Record<string, string> }
  t.deepEqual(packed.optionalDependencies, Object.fromEntries(platforms.map((p) => [`context-trim-${p.platform}`, rootPackage.version])))
  t.deepEqual(checkPlatformLists(), [])
})

test('npm run pack:platforms packs the root and the host package from a plain npm run build', (t) => {
  const r = spawnSync('npm', ['run', 'pack:platforms', '--', 'linux-x64-gnu'], { cwd: root, env: cleanEnv(), encoding: 'utf8' })
  t.is(r.status, 0, r.stderr)
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('context-trim'))
  t.deepEqual(
    lines.map((l) => l.split(/\s+/)[0]),
    [`context-trim-${rootPackage.version}.tgz`, `context-trim-linux-x64-gnu-${rootPackage.version}.tgz`],
  )
  t.true(existsSync(join(root, 'target', 'packs', `context-trim-linux-x64-gnu-${rootPackage.version}.tgz`)))
})

test('npm run pack:platforms -- --out-dir puts the tarballs in that folder, relative to where npm was run', (t) => {
  const packed = [`context-trim-${rootPackage.version}.tgz`, `context-trim-linux-x64-gnu-${rootPackage.version}.tgz`]
  const from = join(work, 'caller')
  mkdirSync(from, { recursive: true })
  // npm runs the script in the package's folder; a relative --out-dir is from the caller's.
  const r = spawnSync('npm', ['--prefix', root, 'run', 'pack:platforms', '--', '--out-dir', 'out/packs', 'linux-x64-gnu'], { cwd: from, env: cleanEnv(), encoding: 'utf8' })
  t.is(r.status, 0, r.stderr)
  t.deepEqual(readdirSync(join(from, 'out', 'packs')).sort(), packed)
  t.true(r.stdout.includes(`2 tarballs in ${join(from, 'out', 'packs')}`), r.stdout)
  t.true(r.stdout.includes(`npm install ${packed.map((f) => join(from, 'out', 'packs', f)).join(' ')}`), r.stdout)
  // npm pack's own name for it, and the = form.
  const r2 = spawnSync('node', ['scripts/pack-platforms.mjs', `--pack-destination=${join(work, 'dest')}`, 'linux-x64-gnu'], { cwd: root, env: cleanEnv(), encoding: 'utf8' })
  t.is(r2.status, 0, r2.stderr)
  t.deepEqual(readdirSync(join(work, 'dest')).sort(), packed)
})

test('pack:platforms --help says how to choose the folder; a bad --out-dir is a clear error with the usage', (t) => {
  const run = (...args: string[]) => spawnSync('node', ['scripts/pack-platforms.mjs', ...args], { cwd: root, env: cleanEnv(), encoding: 'utf8' })
  const help = run('--help')
  t.is(help.status, 0, help.stderr)
  t.is(help.stdout.trim(), USAGE)
  t.true(USAGE.includes('--out-dir <dir>') && USAGE.includes('--pack-destination <dir>') && USAGE.includes('linux-x64-gnu'))
  const file = join(work, 'a-file')
  writeFileSync(file, 'not a folder')
  const cases: Array<[string[], string]> = [
    [['--out-dir'], '--out-dir needs a folder, e.g. --out-dir ./packs'],
    [['--out-dir', '--help'], '--out-dir needs a folder, e.g. --out-dir ./packs'],
    [['--pack-destination='], '--pack-destination needs a folder, e.g. --pack-destination ./packs'],
    [['--out-dir', file], `--out-dir ${file}: ${file} exists and is not a folder`],
    [['--outdir', 'x'], 'unknown option --outdir (--out-dir <dir>, --help)'],
  ]
  for (const [args, message] of cases) {
    const r = run(...args)
    t.is(r.status, 1, args.join(' '))
    t.is(r.stdout, '', args.join(' '))
    t.is(r.stderr, `pack:platforms failed: ${message}\n\n${USAGE}\n`, args.join(' '))
    t.throws(() => parseArgs(args), { instanceOf: UsageError, message }, args.join(' '))
  }
  t.throws(() => parseArgs(['linux-x64-gun']), { instanceOf: UsageError, message: /^unknown platform linux-x64-gun \(known: / })
  t.deepEqual(parseArgs([]), { help: false, outDir: DEFAULT_OUT_DIR, platforms: [] })
  t.deepEqual(parseArgs(['--out-dir', 'p', 'linux-x64-gnu'], '/tmp/x'), { help: false, outDir: '/tmp/x/p', platforms: [platform] })
})

test('both tarballs install offline into an empty project with no Rust toolchain on PATH', (t) => {
  t.is(spawnSync('cargo', ['--version'], { env }).error?.message, 'spawnSync cargo ENOENT')
  t.is(spawnSync('rustc', ['--version'], { env }).error?.message, 'spawnSync rustc ENOENT')
  t.is(install.status, 0, install.stderr)
  const installed = readdirSync(join(app, 'node_modules')).filter((f) => !f.startsWith('.'))
  t.deepEqual(installed.sort(), ['context-trim', 'context-trim-linux-x64-gnu'])
  t.deepEqual(
    readdirSync(join(app, 'node_modules', 'context-trim')).filter((f) => f.endsWith('.node')),
    [],
  )
})

test('require loads the binary from the platform package and counts like the repository build', (t) => {
  const script = `
    const ct = require('context-trim')
    const messages = require(${JSON.stringify(sample)})
    console.log(JSON.stringify({
      hello: ct.countTokens('hello world'),
      estimate: ct.estimateTokens(messages),
      steps: ct.countSteps(messages),
      native: Object.keys(require.cache).filter((f) => f.endsWith('.node')),
    }))`
  const r = inApp('node', ['-e', script])
  t.is(r.status, 0, r.stderr)
  const messages = transcript('openhands-ponyc-4595.json')
  t.deepEqual(JSON.parse(r.stdout), {
    hello: 2,
    estimate: ct.estimateTokens(messages),
    steps: ct.countSteps(messages),
    native: [join(app, 'node_modules', 'context-trim-linux-x64-gnu', 'context-trim.linux-x64-gnu.node')],
  })
})

test('npx context-trim --help runs the installed CLI', (t) => {
  const r = inApp('npx', ['--offline', 'context-trim', '--help'])
  t.is(r.status, 0, r.stderr)
  t.true(r.stdout.startsWith('context-trim: '), r.stdout)
  t.true(r.stdout.includes('usage:'), r.stdout)
})

test('without its platform package the loader names the platform and the package to install', (t) => {
  t.is(bareInstall.status, 0, bareInstall.stderr)
  t.deepEqual(readdirSync(join(bare, 'node_modules')).filter((f) => !f.startsWith('.')), ['context-trim'])
  const r = inApp('node', ['-e', "try { require('context-trim') } catch (e) { console.log(JSON.stringify([e.code, e.message])) }"], bare)
  t.is(r.status, 0, r.stderr)
  const v = rootPackage.version
  t.deepEqual(JSON.parse(r.stdout), [
    'ERR_CONTEXT_TRIM_BINARY',
    `context-trim: the binary for linux-x64-gnu is missing: install the package context-trim-linux-x64-gnu@${v} (npm install context-trim-linux-x64-gnu@${v}). ` +
      'npm installs it as an optional dependency of context-trim, and skips it without an error when it cannot fetch it, with --omit=optional, or when the lock file was written on another platform.',
  ])
})

test('the installed package gives context-trim/cursorclaw, counting as CursorClaw', (t) => {
  const script = `
    import { applyMaxContextTokens, estimateTokens } from 'context-trim/cursorclaw'
    const messages = ['x', 'y', 'z'].map((c) => ({ role: 'user', content: c.repeat(200) }))
    console.log(JSON.stringify([estimateTokens('abcde'), applyMaxContextTokens(messages, 100).length]))`
  const r = inApp('node', ['--input-type=module', '-e', script])
  t.is(r.status, 0, r.stderr)
  t.deepEqual(JSON.parse(r.stdout), [2, 2])
})

test('import gives the named exports and the default export', (t) => {
  const script = `
    import ct, { countTokens, estimateTokens } from 'context-trim'
    console.log(JSON.stringify([countTokens('hello world', { model: 'gpt-4' }), estimateTokens([{ role: 'user', content: 'hi' }]), ct.countTokens === countTokens]))`
  const r = inApp('node', ['--input-type=module', '-e', script])
  t.is(r.status, 0, r.stderr)
  t.deepEqual(JSON.parse(r.stdout), [2, ct.estimateTokens([{ role: 'user', content: 'hi' }]), true])
})

/** Runs the repository's tsc on `files` inside the installed project. */
function tsc(files: Record<string, string>): SpawnSyncReturns<string> {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(app, name), text)
  const tsconfig = {
    compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', types: [], skipLibCheck: false },
    files: Object.keys(files),
  }
  const config = `tsconfig.${Object.keys(files)[0]}.json`
  writeFileSync(join(app, config), JSON.stringify(tsconfig))
  return inApp('node', [require.resolve('typescript/bin/tsc'), '-p', config])
}

const consumer = `import { countTokens, estimateTokens, tokenCacheStats, type Message, type TokenCacheStats } from 'context-trim'
const messages: Message[] = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, tool_calls: [] }]
export const total: number = estimateTokens(messages, { model: 'gpt-4o' }) + countTokens('x', { encoding: 'cl100k_base' })
export const stats: TokenCacheStats = tokenCacheStats()
`

test('the installed types check a CommonJS and an ES module consumer with tsc --noEmit', (t) => {
  const r = tsc({ 'consumer.ts': consumer, 'consumer.mts': consumer })
  t.is(r.status, 0, r.stdout + r.stderr)
})

test('the installed types reject a wrong call', (t) => {
  const r = tsc({ 'wrong.ts': `import { countTokens, estimateTokens } from 'context-trim'\ncountTokens(42)\nestimateTokens([{ role: 'robot' }])\n` })
  t.is(r.status, 2)
  const errors = r.stdout.trim().split('\n').filter((l) => l.startsWith('wrong.ts'))
  t.is(errors.length, 2, r.stdout)
  t.is(errors[0], "wrong.ts(2,13): error TS2345: Argument of type 'number' is not assignable to parameter of type 'string'.")
  // The order tsc prints a union in depends on its internals, so the roles are checked as a set.
  const union = `wrong.ts(3,19): error TS2322: Type '"robot"' is not assignable to type '`
  t.true(errors[1].startsWith(union), errors[1])
  const roles = errors[1].slice(union.length, -2).split(' | ').sort()
  // "function" too: a provider SDK's message type (openai's) includes that deprecated role, so
  // the input type accepts it and the addon refuses it at run time (ProviderMessage).
  t.deepEqual(roles, ['"assistant"', '"developer"', '"function"', '"system"', '"tool"', '"user"'])
})
