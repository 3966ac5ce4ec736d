'use strict'
// The LangChain.js side of context-trim/langchain, shared by its CommonJS and ES module entry
// points (each passes its own `createMiddleware`, from the `langchain` build it loaded).
// BaseMessages are converted to the library's OpenAI shape and back; the messages are never
// imported from @langchain/core: a shortened message is rebuilt with its own class.
const { Conversations, invalidOption, typeName } = require('./shared.cjs')

/**
 * Where an OpenAI message was converted from: `{ from, index }`, the BaseMessage array and the
 * index in it (a symbol-keyed field, which the library's copies of a message keep).
 */
const SOURCE = Symbol('context-trim: BaseMessage source')

/** Every message toOpenAIMessages made: one the library returns as it is was kept. */
const CONVERTED = new WeakSet()

/** Throws the library's `INVALID_MESSAGES` error when `value`, the argument `name`, is not an array. */
function checkArray(value, name) {
  if (!Array.isArray(value)) {
    throw Object.assign(new TypeError(`${name}: must be an array, got ${typeName(value)}`), { code: 'INVALID_MESSAGES' })
  }
}

/** An error naming the message and field, coded like the library's own. */
function invalidMessage(message) {
  const error = new TypeError(message)
  error.code = 'INVALID_MESSAGE'
  return error
}

/** The error of trimMiddleware without the `langchain` package, whose createMiddleware it uses. */
function missingLangchain() {
  const error = new Error('trimMiddleware needs the langchain package (npm install langchain): its createMiddleware makes the middleware; toOpenAIMessages, fromOpenAIMessages and trimBaseMessages need only @langchain/core')
  error.code = 'MISSING_DEPENDENCY'
  return error
}

const ROLES = { human: 'user', ai: 'assistant', tool: 'tool', system: 'system' }
const GENERIC_ROLES = { user: 'user', human: 'user', assistant: 'assistant', ai: 'assistant', system: 'system', developer: 'developer', tool: 'tool' }
/** Blocks of an AI message's content that repeat its `tool_calls` (Anthropic's `tool_use`, v1 `tool_call`). */
const CALL_BLOCKS = new Set(['tool_use', 'tool_call', 'tool_call_chunk', 'input_json_delta'])

/** The role a BaseMessage is sent with, or an error naming it. */
function roleOf(message, index) {
  if (message === null || typeof message !== 'object') {
    throw invalidMessage(`messages[${index}]: must be a BaseMessage, got ${typeName(message)}`)
  }
  const type = typeof message.getType === 'function' ? message.getType() : message.type
  if (type === 'generic') {
    const role = GENERIC_ROLES[message.role]
    if (role) return role
    throw invalidMessage(`messages[${index}].role: a ChatMessage role must be one of ${Object.keys(GENERIC_ROLES).join(', ')}, got ${JSON.stringify(message.role)}`)
  }
  const role = ROLES[type]
  if (role) return role
  throw invalidMessage(`messages[${index}].type: must be human, ai, tool, system or generic, got ${JSON.stringify(type)}`)
}

/** A block's base64 data as a data URL of its media type (LangChain's `mimeType`, or the legacy `mime_type`). */
function dataUrl(block, fallbackType) {
  const type = typeof block.mimeType === 'string' ? block.mimeType : typeof block.mime_type === 'string' ? block.mime_type : fallbackType
  return `data:${type};base64,${block.data}`
}

/** The media type of a LangChain data block, if it names one. */
function mimeOf(block) {
  const type = block?.mimeType ?? block?.mime_type
  return typeof type === 'string' ? type.toLowerCase() : ''
}

/** An image block as an OpenAI `image_url` part: its URL, or its base64 data as a data URL (counted by its size). */
function imagePart(block) {
  if (typeof block.url === 'string') return { type: 'image_url', image_url: { url: block.url } }
  if (typeof block.data === 'string') return { type: 'image_url', image_url: { url: dataUrl(block, 'image/png') } }
  return { type: 'image_url', image_url: { url: '' } }
}

/** An audio block as an OpenAI `input_audio` part: its base64 data and format (counted by its duration). */
function audioPart(block) {
  const subtype = mimeOf(block).replace(/^audio\//, '')
  const format = subtype === 'mpeg' || subtype === 'mp3' ? 'mp3' : subtype === 'wav' || subtype === 'x-wav' || subtype === 'wave' ? 'wav' : subtype
  return { type: 'input_audio', input_audio: { data: typeof block.data === 'string' ? block.data : '', format } }
}

/**
 * LangChain content as OpenAI content: text as it is; images as `image_url` parts and audio as
 * `input_audio` parts (counted by their size, as the library counts them: docs/configuration.md);
 * other files as OpenAI `file` parts (a fixed estimate, never their base64 text); any other
 * block as its JSON text, which is what the library counts a part of an unknown type by.
 */
function openAIContent(content, role) {
  if (!Array.isArray(content)) return content
  const parts = []
  for (const block of content) {
    if (typeof block === 'string') parts.push({ type: 'text', text: block })
    else if (block?.type === 'text' && typeof block.text === 'string') parts.push({ type: 'text', text: block.text })
    else if (block?.type === 'image_url') {
      const url = typeof block.image_url === 'string' ? block.image_url : block.image_url?.url
      const detail = block.image_url?.detail
      const image_url = { url: typeof url === 'string' ? url : '' }
      if (typeof detail === 'string') image_url.detail = detail
      parts.push({ type: 'image_url', image_url })
    } else if (block?.type === 'image' || (block?.type === 'file' && mimeOf(block).startsWith('image/'))) parts.push(imagePart(block))
    else if (block?.type === 'audio' || (block?.type === 'file' && mimeOf(block).startsWith('audio/'))) parts.push(audioPart(block))
    else if (block?.type === 'input_audio') parts.push({ type: 'input_audio', input_audio: { data: block.input_audio?.data ?? '', format: block.input_audio?.format ?? '' } })
    else if (block?.type === 'file') parts.push({ type: 'file', file: {} })
    else if (role === 'assistant' && CALL_BLOCKS.has(block?.type)) continue
    else parts.push({ type: 'text', text: JSON.stringify(block) })
  }
  return parts
}

/**
 * The messages in the library's OpenAI shape, in order, one for each BaseMessage (see
 * langchain.d.cts). `fromOpenAIMessages` maps what a library function returns back.
 */
function toOpenAIMessages(messages) {
  checkArray(messages, 'messages')
  return messages.map((message, index) => {
    const role = roleOf(message, index)
    const converted = { role, content: openAIContent(message.content, role), [SOURCE]: { from: messages, index } }
    if (typeof message.name === 'string' && role !== 'tool') converted.name = message.name
    if (role === 'tool') converted.tool_call_id = message.tool_call_id
    if (role === 'tool' && message.status === 'error') converted.is_error = true
    if (role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      converted.tool_calls = message.tool_calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.args ?? {} } }))
    }
    CONVERTED.add(converted)
    return converted
  })
}

/** Content of a shortened message back in LangChain's shape (a placeholder is a string). */
function langChainContent(content) {
  if (!Array.isArray(content)) return content ?? ''
  return content.map((part) => (part.type === 'text' ? { type: 'text', text: part.text } : part))
}

/** The fields a BaseMessage subclass is built from, besides its content. */
const FIELDS = ['id', 'name', 'role', 'tool_call_id', 'status', 'artifact', 'tool_calls', 'invalid_tool_calls', 'usage_metadata', 'additional_kwargs', 'response_metadata', 'metadata']

/** `original`, of its own class, with the content the library gave it. */
function rebuild(original, content) {
  const fields = { ...(original.lc_kwargs ?? {}) }
  for (const key of FIELDS) if (original[key] !== undefined) fields[key] = original[key]
  fields.content = langChainContent(content)
  return new original.constructor(fields)
}

/**
 * What a library function returned for `toOpenAIMessages(originals)`, as BaseMessages: a kept
 * message is the original object, a shortened one a new message of the same class.
 */
function fromOpenAIMessages(trimmed, originals) {
  checkArray(trimmed, 'trimmed')
  checkArray(originals, 'originals')
  return trimmed.map((message, index) => {
    const source = message?.[SOURCE]
    if (source?.from !== originals) {
      throw invalidMessage(`trimmed[${index}]: was not converted from originals by toOpenAIMessages (an inserted message, such as a summary, has no BaseMessage to map back to)`)
    }
    const original = originals[source.index]
    return CONVERTED.has(message) ? original : rebuild(original, message.content)
  })
}

/** Trims BaseMessages with the trimmer `conversations` keeps for `key`: the report and the BaseMessages. */
function trimWith(conversations, key, messages) {
  const { messages: trimmed, ...report } = conversations.trim(key, toOpenAIMessages(messages), {})
  return { ...report, messages: fromOpenAIMessages(trimmed, messages) }
}

/** BaseMessages trimmed afresh to `options.budget` (see langchain.d.cts). */
function trimBaseMessages(messages, options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidOption(`options: must be an object, got ${typeName(options)}`)
  }
  if (options.cacheAware !== undefined) {
    throw invalidOption('cacheAware: applies to trimMiddleware only: trimBaseMessages trims afresh on every call')
  }
  return trimWith(new Conversations({ ...options, cacheAware: false }, 'openai', ['cacheAware']), null, messages)
}

/** The thread id of an agent run with a checkpointer (`configurable.thread_id`), as a string. */
function threadOf(request) {
  const thread = request.runtime?.configurable?.thread_id
  return typeof thread === 'string' || typeof thread === 'number' ? `thread:${thread}` : undefined
}

/**
 * An agent middleware, made with the `createMiddleware` of the caller's `langchain` build, that
 * trims the messages of every model call (see langchain.d.cts).
 */
function trimMiddleware(createMiddleware, options) {
  const conversations = new Conversations(options, 'openai')
  return createMiddleware({
    name: 'ContextTrimMiddleware',
    // The agent's state keeps every message; only what this call sends is trimmed. A thread
    // (checkpointer) keeps its trimmer across runs, although its messages come back as new
    // objects (the trimmer recognises them by content); without one, the first message object
    // stands for the conversation during the run.
    wrapModelCall: (request, handler) => {
      const messages = trimWith(conversations, threadOf(request) ?? request.messages[0], request.messages).messages
      return handler({ ...request, messages })
    },
  })
}

module.exports = { toOpenAIMessages, fromOpenAIMessages, trimBaseMessages, trimMiddleware, missingLangchain }
