// Preloaded (`node -r`) into a process the scale benchmark runs: writes, when it exits, its peak
// resident set size in bytes and the CPU time it used (user + system) in milliseconds, as JSON
// `{ rss, cpu }`, to the file named by CONTEXT_TRIM_RSS_FILE.
const { writeFileSync } = require('node:fs')

process.on('exit', () => {
  const file = process.env.CONTEXT_TRIM_RSS_FILE
  if (!file) return
  const usage = process.resourceUsage()
  writeFileSync(file, JSON.stringify({ rss: usage.maxRSS * 1024, cpu: (usage.userCPUTime + usage.systemCPUTime) / 1000 }))
})
