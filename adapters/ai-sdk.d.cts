// context-trim/ai-sdk: a `prepareStep` for the Vercel AI SDK (`ai` 6) that trims the messages
// of every step of a generateText/streamText tool loop. See docs/integration.md.
// The framework is an optional peer dependency: without it installed, its type is `any` here
// rather than an error (TS2307) in the app's type check.
// @ts-ignore
import type { ModelMessage } from 'ai'
import type { AdapterTrimOptions, AdapterTrimReport } from './shared.cjs'

export type { AdapterTrimOptions, AdapterTrimReport } from './shared.cjs'

/** Options of {@link trimPrepareStep}. */
export type TrimPrepareStepOptions = AdapterTrimOptions & {
  /** Called after every step's trim with what was decided and the step's number. */
  onTrim?: (report: AdapterTrimReport & { stepNumber: number }) => void
}

/**
 * A `prepareStep` for `generateText` and `streamText`: before every step, the messages the SDK
 * is about to send are trimmed to `options.budget` with `options.strategy` (`'priority'` by
 * default), keeping the decisions across the steps of one call (`cacheAware`). Kept messages
 * are your own objects, shortened ones copies; the SDK's history is not modified. A bad option
 * throws a `TypeError` with code `INVALID_OPTION` here, not at the first step.
 *
 * ```ts
 * import { generateText, stepCountIs } from 'ai'
 * import { trimPrepareStep } from 'context-trim/ai-sdk'
 *
 * await generateText({ model, tools, prompt, stopWhen: stepCountIs(50),
 *   prepareStep: trimPrepareStep({ budget: 100_000, strategy: 'placeholders' }) })
 * ```
 */
export declare function trimPrepareStep(
  options: TrimPrepareStepOptions,
): (step: { messages: ModelMessage[]; steps: readonly unknown[]; stepNumber: number }) => { messages: ModelMessage[] }
