// Issue 43: the TypeScript snippets of the README and docs/integration.md type-check as written,
// under `tsc --strict`, against the real SDKs (`openai`, `@anthropic-ai/sdk`, `ai`, `langchain`)
// and the package's own types. What a snippet leaves to the reader (a system prompt, the app's
// tools, its `runTool`) is declared before it, typed as the SDK types it.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import test from 'ava'
import { typeErrors as strictErrors } from './typecheck.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The ```ts blocks of a markdown file, in order. */
function snippets(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1])
}

const OPENAI = `import type OpenAIType from 'openai'
import type { ChatCompletionMessageFunctionToolCall, ChatCompletionTool } from 'openai/resources/chat/completions'
declare const systemPrompt: string
declare const task: string
declare const tools: ChatCompletionTool[]
declare function runTool(call: ChatCompletionMessageFunctionToolCall | OpenAIType.Chat.Completions.ChatCompletionMessageToolCall): Promise<string>
`
const AI_SDK = `import type { LanguageModel, ToolSet } from 'ai'
declare const model: LanguageModel
declare const system: string
declare const prompt: string
declare const tools: ToolSet
`

/** What each snippet leaves to the reader, by file and position (1-based). */
const PRELUDES: Record<string, Record<number, string>> = {
  'docs/integration.md': {
    1: OPENAI,
    2: `${OPENAI}import OpenAI from 'openai'
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions'
import { ContextWindow } from 'context-trim'
declare const client: OpenAI
declare const model: string
declare const budget: number
declare const start: ChatCompletionMessageParam[]
`,
    3: AI_SDK,
    4: `${AI_SDK}import { streamText, type ModelMessage } from 'ai'
declare const chatId: string
declare const messages: ModelMessage[]
`,
    5: AI_SDK,
    6: `import type { Message } from 'context-trim'
declare const client: { chat(messages: Message[], tools: unknown): Promise<unknown> }
declare const tools: unknown
`,
    7: `import type { StructuredTool } from '@langchain/core/tools'
declare const tools: StructuredTool[]
declare const systemPrompt: string
`,
    8: `import type { BaseMessage } from '@langchain/core/messages'
declare const history: BaseMessage[]
`,
    9: `declare const rawBody: string
declare const upstream: string
declare const headers: Record<string, string>
`,
  },
  'README.md': {},
}

/** `tsc --strict` diagnostics of every snippet of `file`, each as `file#k: message`. */
function typeErrors(file: string): string[] {
  const files = new Map<string, string>()
  snippets(file).forEach((code, k) => {
    const prelude = PRELUDES[file]?.[k + 1] ?? ''
    // Each snippet is a module of its own (an `export {}` makes one of a snippet without imports),
    // at the package's root, where `context-trim` resolves to the package itself, as in an app.
    files.set(join(root, `snippet-${k + 1}.mts`), `${prelude}\n${code}\nexport {}\n`)
  })
  return strictErrors({ files }).map((e) => `${file}#${e.file.match(/snippet-(\d+)/)![1]}: ${e.message}`)
}

for (const file of Object.keys(PRELUDES)) {
  test(`the TypeScript snippets of ${file} type-check as written`, (t) => {
    t.true(snippets(file).length > 0)
    t.deepEqual(typeErrors(file), [])
  })
}

/**
 * `tsc --strict` diagnostics, without `skipLibCheck`, of an app importing `imports` (module
 * specifiers of the package, from an ES module or a CommonJS one, `ext`) while the packages
 * `hidden` are not installed: only those of the package's own declarations.
 */
function declarationErrors(imports: string[], hidden: string[], ext: 'mts' | 'cts' = 'mts'): string[] {
  const app = join(root, `hidden-framework-app.${ext}`)
  const code = imports.map((m, k) => `import * as m${k} from '${m}'\nvoid m${k}\n`).join('')
  const own = (path: string) => path === app || path.startsWith(join(root, 'adapters'))
  return strictErrors({ files: new Map([[app, code]]), libCheck: true, hidden }, own).map((e) => `${e.file.slice(root.length + 1)}: ${e.message}`)
}

test('the adapters declarations type-check without their framework installed (no skipLibCheck)', (t) => {
  for (const ext of ['mts', 'cts'] as const) {
    t.deepEqual(declarationErrors(['context-trim/langchain'], ['langchain'], ext), [], ext)
    t.deepEqual(declarationErrors(['context-trim/ai-sdk'], ['ai'], ext), [], ext)
  }
  // The check can fail: a package it hides is not found.
  t.true(declarationErrors(['langchain'], ['langchain']).some((e) => /Cannot find module 'langchain'/.test(e)))
})
