// context-trim/ai-sdk for ES modules: the CommonJS implementation, so that both share one state.
export { trimPrepareStep } from './ai-sdk.cjs'
