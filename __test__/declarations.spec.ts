// The generated index.d.ts gets the class type parameters napi-rs cannot declare
// (scripts/patch-declarations.mjs, run by every build): `ContextWindow<W>` (issue 43).
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import test from 'ava'

import { CLASS_PARAMETERS, patchDeclarations } from '../scripts/patch-declarations.mjs'

const dts = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'index.d.ts'), 'utf8')

test('the built index.d.ts declares every class with its type parameters, and patching it again changes nothing', (t) => {
  for (const [plain, generic] of CLASS_PARAMETERS) {
    t.true(dts.includes(generic), generic)
    t.false(dts.includes(plain), plain)
  }
  t.is(patchDeclarations(dts), dts)
})

test('a generated header gets its parameters; a class it cannot find fails the build', (t) => {
  const [[plain, generic]] = CLASS_PARAMETERS
  t.is(patchDeclarations(`// x\n${plain}\n  length: number\n}\n`), `// x\n${generic}\n  length: number\n}\n`)
  t.throws(() => patchDeclarations('export declare class Other {}\n'), { message: /ContextWindow \{` not found in index.d.ts: .*update CLASS_PARAMETERS/ })
})
