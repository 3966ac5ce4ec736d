// context-trim/cursorclaw for ES modules: the CommonJS implementation.
export { applyMaxContextTokens, estimateTokens, summarizePrefix } from './cursorclaw.cjs'
