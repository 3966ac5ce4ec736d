#!/usr/bin/env node
// Run by `npm version` (after `napi version`, which bumps npm/<platform>/package.json only):
// rewrites the root package.json's optionalDependencies so that it names every platform
// package of scripts/platforms.mjs at the root's version, which is what `npm install
// context-trim` resolves to a binary. Then `npm install && node scripts/complete-lockfile.mjs`
// brings package-lock.json along (see docs/platforms.md, "Publishing a release").
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { platforms, root } from './platforms.mjs'

const file = join(root, 'package.json')
// Read afresh: `npm version` has just written the new version.
const pkg = JSON.parse(readFileSync(file, 'utf8'))
pkg.optionalDependencies = Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p.platform}`, pkg.version]).sort(([a], [b]) => (a < b ? -1 : 1)))
writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`)
console.log(`sync-optional-dependencies: ${platforms.length} platform packages at ${pkg.version}`)
