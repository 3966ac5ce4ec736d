// The HTML report of a trim: one self-contained page (inline CSS, inline SVG, a few lines of
// inline JS, no network: its Content-Security-Policy forbids any fetch).
import { createRequire } from 'node:module'

import { textOf } from './analyse.mjs'

const require = createRequire(import.meta.url)

/** Tier colours, highest priority first (the terminal uses the nearest ANSI colours). */
export const TIER_HEX = {
  SYSTEM: '#7c3aed',
  AGENT_INSTRUCTIONS: '#a855f7',
  CURRENT_TASK: '#2563eb',
  MODIFIED_FILES: '#0891b2',
  RECENT_TURNS: '#16a34a',
  RECENT_FILE_READS: '#65a30d',
  OLD_HISTORY: '#ca8a04',
  STALE_TOOL_OUTPUTS: '#ea580c',
  SUMMARIZED: '#6b7280',
}
const NO_TIER = '#94a3b8'
const DECISIONS = [
  ['kept', 'kept'],
  ['placeholder', 'placeholders'],
  ['cut', 'cut to head and tail'],
  ['dropped', 'dropped'],
]

const CSS = `
:root { color-scheme: light; --ink: #0f172a; --muted: #64748b; --line: #e2e8f0; --bg: #f8fafc; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 10px; }
.meta { color: var(--muted); margin: 0; }
.meta code { color: var(--ink); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; margin-top: 18px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .value { display: block; font-size: 22px; font-weight: 650; font-variant-numeric: tabular-nums; }
.card .label { color: var(--muted); font-size: 12px; }
.card.kept .value { color: #15803d; } .card.placeholder .value, .card.cut .value { color: #b45309; } .card.dropped .value { color: #b91c1c; }
.card.valid .value { color: #15803d; } .card.invalid .value { color: #b91c1c; }
.card.over .value { color: #b91c1c; }
.chart { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px; overflow-x: auto; }
.chart svg text { font: 12px system-ui, sans-serif; fill: var(--ink); }
.chart svg .num { fill: var(--muted); font-variant-numeric: tabular-nums; }
.legend { display: flex; gap: 16px; color: var(--muted); font-size: 12px; margin-top: 6px; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; background: #334155; }
.legend i.before { opacity: .3; }
.filters { display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 10px; }
.filters button { font: inherit; border: 1px solid var(--line); background: #fff; border-radius: 999px; padding: 3px 12px; cursor: pointer; }
.filters button[aria-pressed="true"] { background: var(--ink); color: #fff; border-color: var(--ink); }
.tiers { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 0 0 12px; padding: 0; list-style: none; color: var(--muted); font-size: 12px; }
.tiers i { display: inline-block; width: 10px; height: 10px; border-radius: 50%; margin-right: 4px; }
ol.timeline { list-style: none; margin: 0; padding: 0 0 0 14px; border-left: 2px solid var(--line); }
.msg { position: relative; background: #fff; border: 1px solid var(--line); border-left: 5px solid var(--tier); border-radius: 6px; padding: 8px 12px; margin: 0 0 8px; }
.msg::before { content: ""; position: absolute; left: -22px; top: 13px; width: 10px; height: 10px; border-radius: 50%; background: var(--tier); border: 2px solid var(--bg); }
.msg.dropped { opacity: .55; background: repeating-linear-gradient(135deg, #fff, #fff 8px, #f1f5f9 8px, #f1f5f9 16px); }
.msg.dropped .text { text-decoration: line-through; text-decoration-color: #94a3b8; }
.head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px; }
.idx { color: var(--muted); font-variant-numeric: tabular-nums; min-width: 3ch; }
.role { font-weight: 600; }
.tier { color: var(--tier); font-size: 12px; font-weight: 600; }
.badge { font-size: 11px; font-weight: 600; text-transform: uppercase; letter-spacing: .03em; border-radius: 4px; padding: 1px 6px; }
.badge.kept { background: #dcfce7; color: #166534; } .badge.placeholder, .badge.cut { background: #fef3c7; color: #92400e; } .badge.dropped { background: #fee2e2; color: #991b1b; }
.tokens { margin-left: auto; color: var(--muted); font-variant-numeric: tabular-nums; }
.why { color: var(--muted); font-size: 12px; margin-top: 2px; }
.text { margin: 6px 0 0; white-space: pre-wrap; word-break: break-word; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; max-height: 9.6em; overflow: hidden; }
.sent { margin: 6px 0 0; padding: 6px 8px; background: #fffbeb; border: 1px dashed #f59e0b; border-radius: 4px; white-space: pre-wrap; word-break: break-word; font: 12px/1.4 ui-monospace, monospace; }
details { margin-top: 4px; } details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
details pre { white-space: pre-wrap; word-break: break-word; font: 12px/1.4 ui-monospace, monospace; max-height: 30em; overflow: auto; background: var(--bg); padding: 6px; border-radius: 4px; }
.problems { color: #b91c1c; }
footer { color: var(--muted); font-size: 12px; margin: 28px 0 8px; }
`

const SCRIPT = `
(() => {
  const buttons = document.querySelectorAll('[data-filter]');
  const items = document.querySelectorAll('.msg');
  for (const button of buttons) {
    button.addEventListener('click', () => {
      const filter = button.dataset.filter;
      for (const b of buttons) b.setAttribute('aria-pressed', String(b === button));
      for (const item of items) item.hidden = filter !== 'all' && item.dataset.decision !== filter;
    });
  }
})();
`

/** The report page for `report` (as `context-trim trim --json` prints it). */
export function renderHtmlReport(report, messages, result) {
  const version = require('../package.json').version
  const n = (x) => Math.round(x).toLocaleString('en-US')
  const strategy = `${report.strategy}${report.placeholders ? ' with placeholders' : ''}`
  const cards = [
    card('before', n(report.before.tokens), `tokens before (${n(report.before.messages)} messages)`),
    card('after', n(report.after.tokens), `tokens after (${n(report.after.messages)} messages)`),
    card('saved', n(report.savedTokens), 'tokens saved'),
    card(report.overBudget ? 'budget over' : 'budget', n(report.budget), report.overBudget ? 'budget: over it' : 'budget: within it'),
    ...DECISIONS.map(([d, label]) => card(d, n(report.counts[d]), label)),
    card(report.valid ? 'validity valid' : 'validity invalid', report.valid ? 'valid' : n(report.problems.length), report.valid ? 'validateConversation: no problem' : 'problems found by validateConversation'),
  ]
  const problems = report.valid
    ? ''
    : `<ul class="problems">${report.problems.map((p) => `<li>messages[${p.index}] ${esc(p.kind)}: ${esc(p.message)}</li>`).join('')}</ul>`
  const presentTiers = report.byPriority ? report.byPriority.map((t) => t.tier) : []
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>context-trim report: ${esc(report.file)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<h1>context-trim report</h1>
<p class="meta"><code>${esc(report.file)}</code> · strategy <code>${esc(strategy)}</code> (<code>${esc(report.function)}</code>) · budget <code>${n(report.budget)}</code> tokens${report.model ? ` · model <code>${esc(report.model)}</code>` : ''}</p>
<p class="meta">${esc(report.rule)}</p>
<section class="cards" id="summary">${cards.join('')}</section>
${problems}
<h2>Tokens per priority tier, before and after</h2>
<div class="chart" id="tier-chart">${report.byPriority ? tierChart(report.byPriority) : '<p class="meta">Priority tiers are not available in this build (the addon has no classifyMessages).</p>'}</div>
<h2>Timeline</h2>
<ul class="tiers">${presentTiers.map((t) => `<li><i style="background:${TIER_HEX[t] ?? NO_TIER}"></i>${esc(t)}</li>`).join('')}</ul>
<div class="filters" role="group" aria-label="Show">
<button type="button" data-filter="all" aria-pressed="true">all ${n(report.messages.length)}</button>
${DECISIONS.map(([d]) => `<button type="button" data-filter="${d}" aria-pressed="false">${d} ${n(report.counts[d])}</button>`).join('\n')}
</div>
<ol class="timeline" id="timeline">
${report.messages.map((m) => timelineItem(m, messages[m.index], result.decisions[m.index])).join('\n')}
</ol>
<footer>Generated by context-trim ${esc(version)}. Everything on this page is inline; it loads nothing.</footer>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`
}

function card(kind, value, label) {
  return `<div class="card ${kind}" data-card="${kind.split(' ')[0]}"><span class="value">${value}</span><span class="label">${esc(label)}</span></div>`
}

function timelineItem(m, original, decision) {
  const colour = TIER_HEX[m.tier] ?? NO_TIER
  const text = textOf(original)
  const tokens = m.decision === 'dropped' ? `${m.tokensBefore.toLocaleString('en-US')} → 0` : `${m.tokensBefore.toLocaleString('en-US')} → ${m.tokensAfter.toLocaleString('en-US')}`
  const what = [m.role, m.tool].filter(Boolean).join(' · ')
  let body
  if (m.decision === 'placeholder' || m.decision === 'cut') {
    body = `<div class="sent" title="what is sent instead">${esc(textOf(decision.output))}</div><details><summary>original (${m.tokensBefore.toLocaleString('en-US')} tokens)</summary><pre>${esc(text)}</pre></details>`
  } else {
    body = `<div class="text">${esc(clip(text, 600))}</div>${text.length > 600 ? `<details><summary>full text</summary><pre>${esc(text)}</pre></details>` : ''}`
  }
  return `<li class="msg ${m.decision}" data-decision="${m.decision}" data-index="${m.index}" data-tier="${esc(m.tier ?? '')}" style="--tier:${colour}">
<div class="head"><span class="idx">#${m.index}</span><span class="role">${esc(what)}</span><span class="tier">${esc(m.tier ?? '')}</span><span class="badge ${m.decision}">${m.decision}</span><span class="tokens">${tokens} tokens</span></div>
${m.reason ? `<div class="why">${esc(m.reason)}</div>` : ''}${body}</li>`
}

/** Grouped horizontal bars: per tier, tokens before (pale) and after (solid). */
function tierChart(tiers) {
  const label = 170
  const width = 520
  const row = 34
  const max = Math.max(...tiers.map((t) => t.before), 1)
  const scale = (v) => (v / max) * width
  const bars = tiers.map((t, i) => {
    const y = 8 + i * row
    const colour = TIER_HEX[t.tier] ?? NO_TIER
    return `<g data-tier="${esc(t.tier)}" data-before="${t.before}" data-after="${t.after}">
<text x="0" y="${y + 15}">${esc(t.tier)}</text>
<rect x="${label}" y="${y}" width="${scale(t.before).toFixed(1)}" height="12" rx="2" fill="${colour}" opacity="0.3"><title>${esc(t.tier)} before: ${t.before.toLocaleString('en-US')} tokens</title></rect>
<rect x="${label}" y="${y + 13}" width="${scale(t.after).toFixed(1)}" height="12" rx="2" fill="${colour}"><title>${esc(t.tier)} after: ${t.after.toLocaleString('en-US')} tokens</title></rect>
<text class="num" x="${label + scale(t.before) + 6}" y="${y + 10}">${t.before.toLocaleString('en-US')}</text>
<text class="num" x="${label + scale(t.after) + 6}" y="${y + 23}">${t.after.toLocaleString('en-US')}</text>
</g>`
  })
  const height = 8 + tiers.length * row
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${label + width + 70}" height="${height}" viewBox="0 0 ${label + width + 70} ${height}" role="img" aria-label="tokens per priority tier, before and after">
${bars.join('\n')}
</svg>
<div class="legend"><span><i class="before"></i>before</span><span><i></i>after</span></div>`
}

function clip(text, n) {
  return text.length > n ? `${text.slice(0, n)}…` : text
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c])
}
