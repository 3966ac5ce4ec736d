// Issue 43: the TypeScript snippets of the docs type-check as written, under `tsc --strict`,
// against the real SDKs (`openai`, `@anthropic-ai/sdk`, `ai`, `langchain`) and the package's own
// types. Every ```ts block of README.md and of every docs/*.md is checked (docs/history/ is a
// record, not a guide): a new doc's snippets are checked without editing this test. What a
// snippet leaves to the reader (a system prompt, the app's tools, its `runTool`, the messages it
// already holds) is declared before it, typed as the SDK or the source project types it, never
// `any`; a snippet without an entry in PRELUDES gets none. A fragment that continues an earlier
// snippet of its page (one call, its result in a comment) has that snippet's import in its
// prelude. Blocks that are not code to paste use another info string: summaries.md's ```js
// block is the shape of a message (an object literal alone), not a statement.
//
// docs/migrating.md's "before" snippets are the call sites of nanocoder and CursorClaw: their
// modules are declared below (SEED_APIS) with the signatures those projects have, so each before
// and after pair is checked as the same call site against the old API and the new one.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import test from 'ava'
import { typeErrors as strictErrors } from './typecheck.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** README.md and every page of docs/ (not docs/history/). */
const DOCS = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]

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
/** An app's history, as the OpenAI SDK types it (the default format). */
const OPENAI_MESSAGES = (name = 'messages', decl = 'const') => `import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions'
declare ${decl} ${name}: ChatCompletionMessageParam[]
`

/**
 * The APIs docs/migrating.md migrates from, as their projects declare them: nanocoder's
 * `source/types/core.ts`, `source/types/commands.ts`, `source/context/context-trimmer.ts` and
 * seed 004's `truncateOldToolOutputs` (its `TruncationConfig`, partial as its own spec passes
 * it), under nanocoder's `@/` alias; CursorClaw's `src/max-context-tokens.ts` (seed 002, TU.4's
 * `summarizePrefix`) at `./max-context-tokens.js`, next to the snippets.
 */
const SEED_APIS = new Map([
  [
    'seed-apis.d.ts',
    `// React's element (its types are not installed here), what nanocoder's commands resolve to.
interface ReactElement { type: unknown; props: unknown; key: string | null }
declare module '@/types/core' {
  export interface ImageAttachment { data: string; mediaType: string; source?: string }
  export interface ToolCall { id: string; function: { name: string; arguments: Record<string, unknown> } }
  export interface Message {
    role: 'user' | 'assistant' | 'system' | 'tool'
    content: string
    tool_calls?: ToolCall[]
    tool_call_id?: string
    name?: string
    reasoning?: string
    structuredContent?: import('ai').JSONValue
    images?: ImageAttachment[]
  }
}
declare module '@/types/commands' {
  import type { Message } from '@/types/core'
  export interface Command<T = ReactElement | void> {
    name: string
    description: string
    handler: (args: string[], messages: Message[], metadata: { provider: string; model: string; tokens: number; getMessageTokens: (message: Message) => number }) => Promise<T>
  }
}
declare module '@/context' {
  import type { Message } from '@/types/core'
  export interface TrimOptions {
    maxAge?: number
    maxTokensPerOutput?: number
    placeholder?: string
    preserveErrors?: boolean
    preserveSmallOutputs?: boolean
    smallOutputThreshold?: number
    preserveRecentTurns?: number
    strategy?: 'age-based' | 'priority-based'
    providerName?: string
    model?: string
  }
  export function trimConversation(messages: Message[], targetTokens: number, options?: Partial<TrimOptions>): Message[]
  export function enforceContextLimit(messages: Message[], maxInputTokens: number, options?: Partial<TrimOptions>): { messages: Message[]; truncated: boolean; droppedCount: number; originalTokens: number; finalTokens: number; droppedMessages?: Message[] }
}
declare module '@/commands/rolling-context' {
  import type { Command } from '@/types/commands'
  export const rollingContextCommand: Command
}
declare module '@/config/preferences' {
  export function getRollingContextEnabled(): boolean
}
declare module '@/utils/context-manager' {
  import type { Message } from '@/types/core'
  export interface TruncationConfig { maxAge: number; maxTokensPerOutput: number; placeholder: string }
  export const DEFAULT_CONFIG: TruncationConfig
  export function truncateOldToolOutputs(messages: Message[], config?: Partial<TruncationConfig>): Message[]
}
`,
  ],
  [
    'max-context-tokens.d.ts',
    `export declare function estimateTokens(text: string): number
export declare function applyMaxContextTokens(messages: Array<{ role: string; content: string }>, maxContextTokens: number, truncationPriority?: ('system' | 'user' | 'assistant')[]): Array<{ role: string; content: string }>
export interface SummarizePrefixResult { summaryMessage: { role: string; content: string }; remainingMessages: Array<{ role: string; content: string }> }
export declare function summarizePrefix(messages: Array<{ role: string; content: string }>, maxSummaryTokens: number): SummarizePrefixResult
`,
  ],
])

/** A nanocoder app's state at the call sites of docs/migrating.md. */
const NANOCODER = `import type { Message } from '@/types/core'
import type { Command } from '@/types/commands'
import type { TrimOptions } from '@/context'
import type { TruncationConfig } from '@/utils/context-manager'
declare const messages: Message[]
declare const targetTokens: number
declare const maxInputTokens: number
declare const strategy: TrimOptions['strategy']
declare const preserveRecentTurns: number
declare const providerName: string
declare const model: string
declare const contextConfig: TruncationConfig
declare const commands: { register(command: Command | Command[]): void }
`
/** A CursorClaw app's state at the call sites of docs/migrating.md. */
const CURSORCLAW = `declare const messages: Array<{ role: string; content: string }>
declare let promptMessages: Array<{ role: string; content: string }>
declare const model: { maxContextTokens: number; truncationPriority?: ('system' | 'user' | 'assistant')[]; summarizeOldTurnsMaxTokens?: number }
declare const cap: number
declare const text: string
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
  'docs/context-pruner.md': { 1: OPENAI_MESSAGES('messages', 'let') },
  'docs/context-window.md': {
    // The loop is format-agnostic: the window's messages are context-trim's `Message`s.
    1: `import type { Message, ToolCall } from 'context-trim'
declare const systemPrompt: Message
declare const agentsMd: Message
declare const task: Message
declare function callModel(messages: Message[]): Promise<Message>
declare function runTools(calls: ToolCall[]): Promise<Message[]>
`,
  },
  'docs/deduplication.md': { 1: OPENAI_MESSAGES('history') },
  'docs/formats.md': {
    4: `import type Anthropic from '@anthropic-ai/sdk'
declare const anthropic: Anthropic
declare const model: Anthropic.Model
declare const history: import('@anthropic-ai/sdk/resources/messages').MessageParam[]
`,
  },
  'docs/max-context-tokens.md': {
    1: OPENAI_MESSAGES(),
    2: `import { applyMaxContextTokens } from 'context-trim'\n${OPENAI_MESSAGES()}`,
  },
  'docs/migrating.md': {
    1: NANOCODER,
    2: NANOCODER,
    3: NANOCODER,
    4: NANOCODER,
    5: `${NANOCODER}import { getRollingContextEnabled } from '@/config/preferences'
import { truncateOldToolOutputs } from '@/utils/context-manager'
`,
    6: `${NANOCODER}declare function renderInfo(message: string): ReactElement
`,
    7: NANOCODER,
    8: NANOCODER,
    9: NANOCODER,
    10: CURSORCLAW,
    11: CURSORCLAW,
    12: CURSORCLAW,
    13: CURSORCLAW,
  },
  'docs/priority-trimming.md': {
    1: OPENAI_MESSAGES(),
    2: `import { FileTracker } from 'context-trim'
${OPENAI_MESSAGES()}declare const content: string
declare const path: string
declare const currentStep: number
declare const maxAge: number
declare const now: () => number
`,
  },
  'docs/prompt-caching-policy.md': {
    1: `import type { MessageParam } from '@anthropic-ai/sdk/resources/messages'
declare const history: MessageParam[]
`,
  },
  'docs/rolling-context.md': { 1: OPENAI_MESSAGES() },
  'docs/summaries.md': {
    1: `${OPENAI_MESSAGES('history')}declare function callMyModel(prompt: string): Promise<string>
`,
    2: OPENAI_MESSAGES(),
  },
  'docs/validation.md': {
    1: OPENAI_MESSAGES('history'),
    2: `import { repairConversation } from 'context-trim'\n`,
    3: `import { repairConversation } from 'context-trim'
import type { ChatCompletionMessageToolCall } from 'openai/resources/chat/completions'
declare const callA: ChatCompletionMessageToolCall
declare const callB: ChatCompletionMessageToolCall
`,
  },
}

/**
 * Snippets that do not type-check because of the package's types, not the doc (issue 43 part
 * 1), by doc, with their exact errors. The test fails when they change: an entry goes once the
 * types are fixed.
 */
const EXPECTED_ERRORS: Record<string, string[]> = {}

/** The docs with snippets, in order. */
const CHECKED = DOCS.filter((f) => snippets(f).length > 0)

let checked: Map<string, string[]> | undefined

/**
 * `tsc --strict` diagnostics of the snippets, by doc, each as `file#k: message`: one program for
 * all of them (the SDKs' declarations are read once), without the DOM's globals (`history`,
 * `name`…), which a Node app does not have.
 */
function typeErrors(file: string): string[] {
  if (!checked) {
    const files = new Map<string, string>()
    const labels = new Map<string, string>()
    for (const doc of CHECKED) {
      snippets(doc).forEach((code, k) => {
        const prelude = PRELUDES[doc]?.[k + 1] ?? ''
        // Each snippet is a module of its own (an `export {}` makes one of a snippet without
        // imports), at the package's root, where `context-trim` resolves to the package itself,
        // as in an app.
        const path = join(root, `${doc.replace(/[/.]/g, '-')}-snippet-${k + 1}.mts`)
        files.set(path, `${prelude}\n${code}\nexport {}\n`)
        labels.set(path, `${doc}#${k + 1}`)
      })
    }
    for (const [name, text] of SEED_APIS) files.set(join(root, name), text)
    checked = new Map(CHECKED.map((doc) => [doc, []]))
    for (const e of strictErrors({ files, lib: ['lib.es2022.d.ts'] })) {
      const label = labels.get(e.file) ?? e.file
      const doc = label.split('#')[0]
      checked.set(doc, [...(checked.get(doc) ?? []), `${label}: ${e.message}`])
    }
  }
  return checked.get(file) ?? []
}

for (const file of CHECKED) {
  test(`the TypeScript snippets of ${file} type-check as written`, (t) => {
    t.deepEqual(typeErrors(file), EXPECTED_ERRORS[file] ?? [])
  })
}

test('the source projects\' declarations docs/migrating.md is checked against type-check', (t) => {
  t.deepEqual(typeErrors(join(root, 'seed-apis.d.ts')), [])
  t.deepEqual(typeErrors(join(root, 'max-context-tokens.d.ts')), [])
})

test('the snippets checked are every doc\'s, and every prelude and expected error names one', (t) => {
  t.true(CHECKED.includes('README.md') && CHECKED.includes('docs/integration.md') && CHECKED.includes('docs/migrating.md'))
  t.false(DOCS.some((f) => f.startsWith('docs/history/')))
  for (const [file, preludes] of Object.entries(PRELUDES)) {
    for (const k of Object.keys(preludes)) t.true(Number(k) <= snippets(file).length, `${file}#${k}`)
  }
  for (const file of Object.keys(EXPECTED_ERRORS)) t.true(CHECKED.includes(file), file)
})

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
