'use strict'
// context-trim/langchain for CommonJS: the middleware is made with the CommonJS build of langchain,
// loaded when a middleware is made (the conversions need only @langchain/core's objects).
const messages = require('./langchain-messages.cjs')

function createMiddleware(spec) {
  let langchain
  try {
    langchain = require('langchain')
  } catch (e) {
    if (e?.code === 'MODULE_NOT_FOUND' && String(e.message).includes("'langchain'")) throw messages.missingLangchain()
    throw e
  }
  return langchain.createMiddleware(spec)
}

module.exports = {
  toOpenAIMessages: messages.toOpenAIMessages,
  fromOpenAIMessages: messages.fromOpenAIMessages,
  trimBaseMessages: messages.trimBaseMessages,
  trimMiddleware: (options) => messages.trimMiddleware(createMiddleware, options),
}
