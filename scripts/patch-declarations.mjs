#!/usr/bin/env node
// Run after `napi build --platform` by `npm run build` and `npm run build:debug` (scripts/build.mjs),
// or alone (`node scripts/patch-declarations.mjs`): gives the classes of the generated index.d.ts
// the type parameters napi-rs cannot declare (its `ts_generic_types` reaches functions and
// methods only). `ContextWindow<W>` is the message type a window holds, so that `trim` and
// `trimWithPlaceholders` return the caller's type without naming it at every call
// (`new ContextWindow<ChatCompletionMessageParam>()`); its methods' declarations in
// src/napi/api/window.rs use `W`. Idempotent; a declaration it cannot find is an error, so a
// change of napi-rs's output fails the build instead of leaving `W` undeclared.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { root } from './platforms.mjs'

/** Each class's generated header, and the header with its type parameters. */
export const CLASS_PARAMETERS = [
  ['export declare class ContextWindow {', 'export declare class ContextWindow<W extends AnyMessageInput = Message> {'],
]

/** `text` (an index.d.ts) with every class of CLASS_PARAMETERS given its type parameters. */
export function patchDeclarations(text) {
  let out = text
  for (const [plain, generic] of CLASS_PARAMETERS) {
    if (out.includes(generic)) continue
    if (!out.includes(plain)) {
      throw new Error(
        `patch-declarations: \`${plain}\` not found in index.d.ts: napi-rs now writes the class's header otherwise; ` +
          'update CLASS_PARAMETERS in scripts/patch-declarations.mjs to the header it writes (the methods of src/napi/api/window.rs name its `W`)',
      )
    }
    out = out.replace(plain, generic)
  }
  return out
}

export function patchDeclarationsFile(file = join(root, 'index.d.ts')) {
  const text = readFileSync(file, 'utf8')
  const patched = patchDeclarations(text)
  if (patched !== text) writeFileSync(file, patched)
  return `patch-declarations: index.d.ts ${patched === text ? 'was already patched' : 'patched'}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(patchDeclarationsFile())
