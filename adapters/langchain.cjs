'use strict'
// context-trim/langchain for CommonJS: the middleware is made with the CommonJS build of langchain.
const { createMiddleware } = require('langchain')
const messages = require('./langchain-messages.cjs')

module.exports = {
  toOpenAIMessages: messages.toOpenAIMessages,
  fromOpenAIMessages: messages.fromOpenAIMessages,
  trimBaseMessages: messages.trimBaseMessages,
  trimMiddleware: (options) => messages.trimMiddleware(createMiddleware, options),
}
