// The headless Chromium the browser tests open, from the project's own npm install: the
// `@sparticuz/chromium` devDependency ships a Linux x64 Chromium build inside its tarball
// (brotli-compressed, with the SwiftShader GL libraries and a font). Nothing is downloaded:
// the first call unpacks those files into node_modules/.cache/context-trim/, and later calls,
// in this process or another, reuse them.
import { spawnSync } from 'node:child_process'
import { chmodSync, createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { createBrotliDecompress, brotliDecompressSync } from 'node:zlib'

const require = createRequire(import.meta.url)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Where the browser is, and the environment it needs (its fontconfig). */
export interface Browser {
  executablePath: string
  env: Record<string, string>
}

/** Unpacks `<name>.tar.br` into `dir` with the system's tar (every Linux has one). */
function untar(archive: string, dir: string): void {
  const r = spawnSync('tar', ['-x', '-C', dir], { input: brotliDecompressSync(readFileSync(archive)) })
  if (r.error || r.status !== 0) throw new Error(`tar -x of ${archive} failed: ${r.error?.message ?? r.stderr.toString()}`)
}

/** The folder and version of an installed package whose `exports` do not expose package.json. */
function packageOf(name: string): { dir: string; version: string } {
  for (let dir = dirname(require.resolve(name)); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json')
    if (!existsSync(file)) continue
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version: string }
    if (manifest.name === name) return { dir, version: manifest.version }
  }
  throw new Error(`${name}: no package.json above ${require.resolve(name)}`)
}

/**
 * The Chromium of `@sparticuz/chromium`, unpacked once per version. It is built for Linux x64
 * only: elsewhere this throws, naming the platform.
 */
export async function packagedChromium(): Promise<Browser> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the browser tests use @sparticuz/chromium, which ships Chromium for linux-x64 only (this is ${process.platform}-${process.arch})`)
  }
  const { version, dir: pkg } = packageOf('@sparticuz/chromium')
  const bin = join(pkg, 'bin')
  const dir = join(root, 'node_modules', '.cache', 'context-trim', `chromium-${version}`)
  const env = { FONTCONFIG_FILE: join(dir, 'fonts.conf') }
  const executablePath = join(dir, 'chromium')
  if (existsSync(executablePath)) return { executablePath, env }

  // Unpacked beside the final folder and renamed into place, so a concurrent run never sees a
  // half-written browser: the first rename wins and the others discard their copy.
  const scratch = `${dir}.${process.pid}.${Date.now()}`
  mkdirSync(scratch, { recursive: true })
  try {
    await pipeline(createReadStream(join(bin, 'chromium.br')), createBrotliDecompress(), createWriteStream(join(scratch, 'chromium')))
    chmodSync(join(scratch, 'chromium'), 0o755)
    untar(join(bin, 'swiftshader.tar.br'), scratch)
    untar(join(bin, 'fonts.tar.br'), scratch)
    // The package's own fonts.conf names the AWS Lambda folders; this one names ours.
    const fontsConf = `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(dir, 'fonts')}</dir>\n  <cachedir>${join(dir, 'fonts-cache')}</cachedir>\n</fontconfig>\n`
    writeFileSync(join(scratch, 'fonts.conf'), fontsConf)
    try {
      renameSync(scratch, dir)
    } catch (e) {
      if (!existsSync(executablePath)) throw e
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  return { executablePath, env }
}
