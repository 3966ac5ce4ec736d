/**
 * `replanEvery` (issue 44): re-plan points for a trim called before every model call.
 */
import test from 'ava'

import type { Message, TrimResultOf } from '../index.js'
import { ct, sharedPrefix, transcript, transcripts } from './helpers.js'

const sweagent = transcript('sweagent-ctf-i-got-id.json')

test('replanEvery must be a non-negative integer below targetTokens', (t) => {
  const call = (replanEvery: unknown) => () => ct.trimWithPlaceholders(sweagent, { targetTokens: 4000, replanEvery: replanEvery as number })
  t.throws(call('1000'), { code: 'INVALID_OPTION', message: /^replanEvery: must be a number, got string/ })
  t.throws(call(-1), { code: 'INVALID_OPTION', message: /^replanEvery: / })
  t.throws(call(10.5), { code: 'INVALID_OPTION', message: /^replanEvery: must be a whole number of tokens of at least 0, got 10\.5: floor a fraction of targetTokens \(Math\.floor\(targetTokens \/ 4\), for example\)$/ })
  t.throws(call(4000), { code: 'INVALID_OPTION', message: /^replanEvery: must be below targetTokens \(4000\), got 4000/ })
  t.throws(() => ct.trimByPriority(sweagent, { targetTokens: 100, replanEvery: 5000 }), { code: 'INVALID_OPTION' })
  t.notThrows(call(3999))
  t.notThrows(call(undefined))
})

test('replanEvery 0 is the same as leaving it out', (t) => {
  const targetTokens = Math.floor(ct.estimateTokens(sweagent) * 0.4)
  t.deepEqual(ct.trimWithPlaceholders(sweagent, { targetTokens, replanEvery: 0 }), ct.trimWithPlaceholders(sweagent, { targetTokens }))
  t.deepEqual(ct.trimByPriority(sweagent, { targetTokens, replanEvery: 0 }), ct.trimByPriority(sweagent, { targetTokens }))
})

for (const name of ['trimByPriority', 'trimWithPlaceholders'] as const) {
  test(`${name}: with replanEvery every request fits and most only append to the one before`, (t) => {
    let calls = 0
    let appended = 0
    let without = 0
    for (const [file, messages] of transcripts()) {
      const targetTokens = Math.floor(ct.estimateTokens(messages) * 0.4)
      const replanEvery = Math.floor(targetTokens / 4)
      let previous: { with: Message[]; without: Message[] } | undefined
      for (let n = 2; n <= messages.length; n++) {
        const history = messages.slice(0, n)
        const result: TrimResultOf<Message> = ct[name](history, { targetTokens, replanEvery })
        const plain = ct[name](history, { targetTokens })
        t.true(result.totalTokens <= targetTokens || result.overBudget, `${file} at ${n}`)
        t.is(result.totalTokens, ct.estimateTokens(result.messages), `${file} at ${n}: totalTokens counts what is sent`)
        const last = history[n - 1]
        const lastKept = result.messages[result.messages.length - 1] === last || result.shortenedMessages.some((c) => c.message === last)
        t.true(lastKept, `${file} at ${n}: the last message is kept (whole, or cut where even the rest does not fit)`)
        if (previous) {
          calls++
          if (sharedPrefix(previous.with, result.messages) === previous.with.length) appended++
          if (sharedPrefix(previous.without, plain.messages) === previous.without.length) without++
        }
        previous = { with: result.messages, without: plain.messages }
      }
    }
    // Without re-plan points, a call that trims rewrites the request before its end far more often.
    t.true(appended > without, `${appended} of ${calls} appended, against ${without} without replanEvery`)
    t.true(appended / calls > 0.75, `${appended} of ${calls} requests only appended`)
  })
}

test('a ContextWindow trims with replanEvery as the stateless functions do', (t) => {
  const targetTokens = Math.floor(ct.estimateTokens(sweagent) * 0.4)
  const options = { targetTokens, replanEvery: Math.floor(targetTokens / 4) }
  const window = new ct.ContextWindow()
  for (let n = 1; n <= sweagent.length; n++) {
    window.append([sweagent[n - 1]])
    const prefix = sweagent.slice(0, n)
    t.deepEqual(window.trim(options), ct.trimByPriority(prefix, options), `trim at ${n}`)
    t.deepEqual(window.trimWithPlaceholders(options), ct.trimWithPlaceholders(prefix, options), `trimWithPlaceholders at ${n}`)
  }
})

test('the JSON form takes replanEvery too', (t) => {
  const targetTokens = Math.floor(ct.estimateTokens(sweagent) * 0.4)
  const options = { targetTokens, replanEvery: Math.floor(targetTokens / 4) }
  const body = JSON.stringify({ model: 'gpt-4o', messages: sweagent })
  const fromJson = JSON.parse(ct.trimWithPlaceholdersJson(body, options).body) as { messages: unknown[] }
  t.deepEqual(fromJson.messages, JSON.parse(JSON.stringify(ct.trimWithPlaceholders(sweagent, options).messages)))
})
