// Preloaded (`node -r`) into a process the scale benchmark runs: writes its peak resident set
// size in bytes to the file named by CONTEXT_TRIM_RSS_FILE when it exits.
const { writeFileSync } = require('node:fs')

process.on('exit', () => {
  const file = process.env.CONTEXT_TRIM_RSS_FILE
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS * 1024))
})
