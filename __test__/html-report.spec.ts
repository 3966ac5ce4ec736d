import test from 'ava'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { chromium, type BrowserContext } from 'playwright-core'

import { packagedChromium } from './browser.js'
import { runCliInProcess, tempDir } from './cli-run.js'

const SAMPLE = 'samples/transcripts/openhands-ponyc-4595.json'

/**
 * The Chromium of the project's own npm install (`@sparticuz/chromium`, see browser.ts),
 * headless, with nothing that reaches the network, in an empty profile.
 */
async function launch(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'context-trim-chromium-'))
  const browser = await packagedChromium()
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: browser.executablePath,
    env: { ...process.env, ...browser.env },
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  return {
    context,
    close: async () => {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

interface TrimReport {
  budget: number
  before: { messages: number; tokens: number }
  after: { messages: number; tokens: number }
  savedTokens: number
  counts: { kept: number; placeholder: number; cut: number; dropped: number }
  byPriority: Array<{ tier: string; before: number; after: number }>
  messages: Array<{ index: number; decision: string; tier: string }>
  valid: boolean
  problems: unknown[]
}

const CASES: Array<[string, string[]]> = [
  ['priority with placeholders', ['--placeholders']],
  ['roles', ['--strategy', 'roles']],
  ['truncate', ['--strategy', 'truncate']],
]

test('the browser is the Chromium the npm install ships, unpacked under node_modules', async (t) => {
  const { executablePath } = await packagedChromium()
  t.true(executablePath.startsWith(join(process.cwd(), 'node_modules', '.cache', 'context-trim', 'chromium-')), executablePath)
})

for (const [label, args] of CASES) {
  test.serial(`the HTML report (${label}) loads in chromium without errors and shows the CLI's counts`, async (t) => {
    const html = join(tempDir(), 'report.html')
    const r = await runCliInProcess(['trim', SAMPLE, '--budget', '50%', ...args, '--html', html, '--json'])
    t.is(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout) as TrimReport
    t.true(report.counts.dropped + report.counts.placeholder + report.counts.cut > 0, 'the trim changed something')

    const { context, close } = await launch()
    try {
      const page = await context.newPage()
      const problems: string[] = []
      const requests: string[] = []
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`)
      })
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`))
      page.on('request', (req) => requests.push(req.url()))
      const url = pathToFileURL(html).href
      const response = await page.goto(url, { waitUntil: 'load' })
      t.true(response?.ok(), 'the page loads')
      t.deepEqual(problems, [])
      t.deepEqual(requests, [url], 'the page requests nothing but itself')

      t.is(await page.title(), `context-trim report: ${SAMPLE}`)
      const card = (name: string) => page.locator(`[data-card="${name}"] .value`).innerText()
      const n = (x: number) => x.toLocaleString('en-US')
      t.is(await card('before'), n(report.before.tokens))
      t.is(await card('after'), n(report.after.tokens))
      t.is(await card('saved'), n(report.savedTokens))
      t.is(await card('budget'), n(report.budget))
      t.is(await card('kept'), n(report.counts.kept))
      t.is(await card('placeholder'), n(report.counts.placeholder))
      t.is(await card('cut'), n(report.counts.cut))
      t.is(await card('dropped'), n(report.counts.dropped))
      t.is(await card('validity'), report.valid ? 'valid' : String(report.problems.length))

      // The timeline: one item per message, in order, marked as the CLI decided.
      const items = page.locator('#timeline > li.msg')
      t.is(await items.count(), report.before.messages)
      const shown = await items.evaluateAll((els) => els.map((e) => [Number((e as HTMLElement).dataset.index), (e as HTMLElement).dataset.decision, (e as HTMLElement).dataset.tier]))
      t.deepEqual(shown, report.messages.map((m) => [m.index, m.decision, m.tier]))
      // Coloured by tier: each item's border takes its tier's colour.
      const colours = await items.evaluateAll((els) => new Set(els.map((e) => getComputedStyle(e).borderLeftColor)).size)
      t.is(colours, new Set(report.messages.map((m) => m.tier)).size)

      // The chart: per tier, the bars of tokens before and after.
      const bars = await page.locator('#tier-chart svg g[data-tier]').evaluateAll((els) =>
        els.map((e) => ({ tier: e.getAttribute('data-tier'), before: Number(e.getAttribute('data-before')), after: Number(e.getAttribute('data-after')) })),
      )
      t.deepEqual(bars, report.byPriority.map(({ tier, before, after }) => ({ tier, before, after })))
      const widths = await page.locator('#tier-chart svg g[data-tier] rect').evaluateAll((els) => els.map((e) => (e as SVGRectElement).getBBox().width))
      t.is(widths.length, 2 * report.byPriority.length)
      t.true(widths.some((w) => w > 100), 'the bars are drawn')

      // The filters show only the messages of one decision.
      for (const decision of ['kept', 'placeholder', 'cut', 'dropped'] as const) {
        await page.click(`button[data-filter="${decision}"]`)
        t.is(await page.locator('#timeline > li.msg:visible').count(), report.counts[decision], decision)
      }
      await page.click('button[data-filter="all"]')
      t.is(await page.locator('#timeline > li.msg:visible').count(), report.before.messages)
      t.deepEqual(problems, [])
      if (process.env.CONTEXT_TRIM_SCREENSHOT) {
        await page.setViewportSize({ width: 1200, height: 1600 })
        await page.screenshot({ path: `${process.env.CONTEXT_TRIM_SCREENSHOT}-${args.join('')}.png`, fullPage: false })
      }
    } finally {
      await close()
    }
  })
}
