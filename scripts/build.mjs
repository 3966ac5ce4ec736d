#!/usr/bin/env node
// `npm run build [-- <napi build options>]` and `npm run build:debug`: `napi build --platform`
// with the options given (e.g. `--release`, `--target <triple>`), then scripts/patch-loader.mjs
// on the index.js it generated and scripts/patch-declarations.mjs on its index.d.ts. A script
// rather than `napi build … && node patch-loader.mjs`, so that the options npm appends after
// `--` reach napi, not the patch.
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

import { patchDeclarationsFile } from './patch-declarations.mjs'
import { patchLoaderFile } from './patch-loader.mjs'
import { root } from './platforms.mjs'

const require = createRequire(import.meta.url)
// The napi CLI of the devDependencies, run by this Node (no shell, so it works on Windows too).
const napi = join(dirname(require.resolve('@napi-rs/cli/package.json')), 'dist', 'cli.js')
const r = spawnSync(process.execPath, [napi, 'build', '--platform', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' })
if (r.error) throw r.error
if (r.status !== 0) process.exit(r.status ?? 1)
console.log(patchLoaderFile())
console.log(patchDeclarationsFile())
