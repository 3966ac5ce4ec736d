// The layering check (scripts/check-layers.mjs, run by .ci/run): the crate follows the floors,
// and an import added against their order fails, naming the file and the import.
import test from 'ava'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

import { root } from './cli-run.js'
// @ts-expect-error: a plain ESM script without type declarations
import { check, readTree } from '../scripts/check-layers.mjs'

interface Violation {
  file: string
  line: number
  import: string
  from: string
  to: string
}
const checkFiles = check as (files: Map<string, string>) => Violation[]
const tree = () => (readTree as (root: string) => Map<string, string>)(root)

/** The crate's files with `text` appended to `file` (a new file if it has none). */
function withAdded(file: string, text: string): Map<string, string> {
  const files = tree()
  files.set(file, `${files.get(file) ?? ''}\n${text}\n`)
  return files
}

test('the crate follows the floors', (t) => {
  const files = tree()
  t.true(files.size > 70)
  t.deepEqual(checkFiles(files), [])
})

test('an import against the order fails, naming the file and the import', (t) => {
  const cases: [string, string, string, string][] = [
    // file, added text, the import named, the floor it may not use
    ['src/model/message.rs', 'use crate::analysis::classify::ClassifyOptions;', 'crate::analysis::classify::ClassifyOptions', 'analysis'],
    ['src/model/cut.rs', 'use crate::{error::Error, strategy::{placeholder::PlaceholderTemplate}};', 'crate::strategy::placeholder::PlaceholderTemplate', 'strategy/plan'],
    ['src/analysis/detect.rs', 'fn f() { let _ = crate::plan::Plan::keep_all(0); }', 'crate::plan::Plan::keep_all', 'strategy/plan'],
    ['src/strategy/age.rs', 'use crate::output::validate::validate_plan;', 'crate::output::validate::validate_plan', 'output'],
    ['src/output/repair.rs', 'use crate::napi::base::read;', 'crate::napi::base::read', 'napi base'],
    ['src/napi/base/trim.rs', 'use super::super::api::priority::TrimOptions;', 'super::super::api::priority::TrimOptions', 'napi API'],
    ['src/napi/api/priority.rs', 'use crate::napi::api::classify::ClassifyMessagesOptions;', 'crate::napi::api::classify::ClassifyMessagesOptions', 'another napi API module'],
    ['src/napi/api/conversation.rs', 'use super::priority::prepare_priority;', 'super::priority::prepare_priority', 'another napi API module'],
  ]
  for (const [file, text, named, to] of cases) {
    const wrong = checkFiles(withAdded(file, text))
    t.is(wrong.length, 1, `${file}: ${text}`)
    t.like(wrong[0], { file, import: named, to }, `${file}: ${text}`)
  }
  // Each path of a use tree is an import of its own, `self` naming the module.
  const grouped = checkFiles(withAdded('src/model/cut.rs', 'use crate::{error::Error, strategy::{priority::{self, PriorityOptions}}};'))
  t.deepEqual(
    grouped.map((v) => v.import),
    ['crate::strategy::priority', 'crate::strategy::priority::PriorityOptions'],
  )
})

test('tests, comments and strings are not imports, nor a path into the module itself', (t) => {
  const added = [
    '#[cfg(test)]\nmod more_tests {\n  use crate::analysis::classify::ClassifyOptions;\n  fn f() { crate::strategy::age::trim_by_age; }\n}',
    '// use crate::analysis::classify::ClassifyOptions;\n/// [`crate::strategy::priority`]',
    'const S: &str = "use crate::analysis::x;"; const R: &str = r#"crate::output::y"#; const C: char = \'"\';',
    'fn g() { let _ = self::Message::text; let _ = super::message::Role::User; }',
  ]
  for (const text of added) t.deepEqual(checkFiles(withAdded('src/model/message.rs', text)), [], text)
})

test('the script exits with 1 and names each wrong import', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'check-layers-'))
  try {
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(dir, path)), { recursive: true })
      writeFileSync(join(dir, path), text)
    }
    write('src/lib.rs', 'pub mod model;\npub mod analysis;\npub use analysis::classify::ClassifyOptions;\n')
    write('src/model/mod.rs', 'pub mod message;\n')
    write('src/model/message.rs', 'pub struct Message;\n')
    write('src/analysis/classify.rs', 'use crate::model::message::Message;\npub struct ClassifyOptions;\n')
    const script = join(root, 'scripts', 'check-layers.mjs')
    const clean = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' })
    t.is(clean.status, 0, clean.stderr)
    // Through the crate root's re-export, inline.
    write('src/model/message.rs', 'pub struct Message;\nfn f(_: crate::ClassifyOptions) {}\n')
    const wrong = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' })
    t.is(wrong.status, 1)
    t.regex(wrong.stderr, /^src\/model\/message\.rs:2: crate::ClassifyOptions \(model may not use analysis\)$/m)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
