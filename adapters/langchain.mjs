// context-trim/langchain for ES modules: the middleware is made with the ES module build of
// langchain; the conversions are the CommonJS ones (they import nothing from LangChain), and
// load without the langchain package (only trimMiddleware needs it).
import messages from './langchain-messages.cjs'

let langchain = null
try {
  langchain = await import('langchain')
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes("'langchain'")) throw e
}

export const { toOpenAIMessages, fromOpenAIMessages, trimBaseMessages } = messages
export const trimMiddleware = (options) => {
  if (langchain === null) throw messages.missingLangchain()
  return messages.trimMiddleware(langchain.createMiddleware, options)
}
