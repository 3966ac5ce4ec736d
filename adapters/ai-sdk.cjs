'use strict'
// context-trim/ai-sdk: a `prepareStep` for the Vercel AI SDK's generateText and streamText.
// The SDK's ModelMessages are read by the library as they are (format 'ai-sdk').
const { Conversations } = require('./shared.cjs')

/**
 * A `prepareStep` that trims the messages of every step to `options.budget` tokens.
 * See adapters/ai-sdk.d.ts and docs/integration.md.
 */
function trimPrepareStep(options) {
  const conversations = new Conversations(options, 'ai-sdk')
  // `steps` is one array per generateText/streamText call, grown step by step: the key of
  // that call's trimmer, so that a prepareStep shared by concurrent calls keeps them apart.
  return ({ messages, steps, stepNumber }) => {
    const result = conversations.trim(steps, messages, { stepNumber })
    return { messages: result.messages }
  }
}

module.exports = { trimPrepareStep }
