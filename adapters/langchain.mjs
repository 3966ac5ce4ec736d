// context-trim/langchain for ES modules: the middleware is made with the ES module build of
// langchain; the conversions are the CommonJS ones (they import nothing from LangChain).
import { createMiddleware } from 'langchain'
import messages from './langchain-messages.cjs'

export const { toOpenAIMessages, fromOpenAIMessages, trimBaseMessages } = messages
export const trimMiddleware = (options) => messages.trimMiddleware(createMiddleware, options)
