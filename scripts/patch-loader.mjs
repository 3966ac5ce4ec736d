#!/usr/bin/env node
// Run after `napi build --platform` by `npm run build` and `npm run build:debug` (scripts/build.mjs),
// or alone (`node scripts/patch-loader.mjs`): rewrites the
// one error of the generated loader (index.js) that a user meets when no binary loads. napi's
// text blames an npm bug and tells them to delete their lock file; this one names the platform
// the loader looked for, the package that holds its binary (at this version), and why npm may
// have left it out. The rest of the loader is napi's, untouched. The patch is idempotent, and
// `npm run check:artifacts` (and the pack-install test) fail on a loader that lacks it.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { platforms, root, rootPackage } from './platforms.mjs'

/** The line that marks a patched loader. */
export const PATCH_MARKER = '// context-trim: the load error below is written by scripts/patch-loader.mjs'

const GENERIC = `    const error = new Error(
      \`Cannot find native binding. \` +
        \`npm has a bug related to optional dependencies (https://github.com/npm/cli/issues/4828). \` +
        'Please try \`npm i\` again after removing both package-lock.json and node_modules directory.',
    )`

const CHECK = 'if (!nativeBinding) {\n  if (loadErrors.length > 0) {\n'

/** The function the patched loader calls to word its error; it runs only when loading failed. */
function describeFunction() {
  const name = rootPackage.name
  const version = rootPackage.version
  const supported = platforms.map((p) => p.platform)
  return `${PATCH_MARKER}
function __contextTrimMissingBinary() {
  const abi = process.platform === 'linux' ? (isMusl() ? '-musl' : '-gnu') : process.platform === 'win32' ? '-msvc' : ''
  const platform = \`\${process.platform}-\${process.arch}\${abi}\`
  const supported = ${JSON.stringify(supported)}
  if (!supported.includes(platform)) {
    return \`${name}: no prebuilt binary for \${platform} (there are binaries for \${supported.join(', ')}); build it from the repository with a Rust toolchain (npm run build)\`
  }
  const pkg = \`${name}-\${platform}\`
  let where = null
  try {
    where = require.resolve(pkg)
  } catch {}
  if (where) {
    const cause = loadErrors.find((e) => e && e.code !== 'MODULE_NOT_FOUND') || loadErrors[loadErrors.length - 1]
    return \`${name}: the binary for \${platform} is installed (\${where}) but did not load: \${cause && cause.message}\`
  }
  return (
    \`${name}: the binary for \${platform} is missing: install the package \${pkg}@${version} (npm install \${pkg}@${version}). \` +
    \`npm installs it as an optional dependency of ${name}, and skips it without an error when it cannot fetch it, with --omit=optional, or when the lock file was written on another platform.\`
  )
}
`
}

/** The loader text with the error replaced; a patched text comes back unchanged. */
export function patchLoader(text) {
  if (text.includes(PATCH_MARKER)) return text
  if (!text.includes(GENERIC) || !text.includes(CHECK)) {
    throw new Error('index.js: the load error napi generates was not found (has @napi-rs/cli changed its loader?)')
  }
  return text
    .replace(CHECK, `${describeFunction()}\n${CHECK}`)
    .replace(GENERIC, `    const error = new Error(__contextTrimMissingBinary())\n    error.code = 'ERR_CONTEXT_TRIM_BINARY'`)
}

/** Patches the repository's index.js in place; returns what it did, in one line. */
export function patchLoaderFile(file = join(root, 'index.js')) {
  const text = readFileSync(file, 'utf8')
  const patched = patchLoader(text)
  if (patched !== text) writeFileSync(file, patched)
  return `patch-loader: index.js ${patched === text ? 'was already patched' : 'patched'}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(patchLoaderFile())
