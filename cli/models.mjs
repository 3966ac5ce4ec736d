// Which encoding `--model` counts with, to warn when a model is unknown. The addon maps a model
// to its encoding with tiktoken-rs's tables (exact names, then prefixes, after stripping `ft:`),
// in any case, and with a provider prefix (`openai/gpt-4`: everything up to the last `/`)
// ignored when the whole name is not in the tables; it counts an unknown model with
// o200k_base. These are the same tables and the same lookup, as tiktoken-rs 0.12.1
// has them (src/tokenizer.rs, itself kept in step with OpenAI's tiktoken model.py).
// __test__/cli.spec.ts checks every entry against the addon's own counts.

/** Exact model names, by encoding. */
const EXACT = {
  o200k_base: ['o1', 'o3', 'o4-mini', 'gpt-5', 'gpt-4.1', 'gpt-4o'],
  cl100k_base: [
    'gpt-4',
    'gpt-3.5-turbo',
    'gpt-3.5',
    'gpt-35-turbo',
    'davinci-002',
    'babbage-002',
    'text-embedding-ada-002',
    'text-embedding-3-small',
    'text-embedding-3-large',
  ],
  p50k_base: [
    'text-davinci-003',
    'text-davinci-002',
    'code-davinci-002',
    'code-davinci-001',
    'code-cushman-002',
    'code-cushman-001',
    'davinci-codex',
    'cushman-codex',
    'text-davinci-edit-001',
    'code-davinci-edit-001',
  ],
  r50k_base: [
    'text-davinci-001',
    'text-curie-001',
    'text-babbage-001',
    'text-ada-001',
    'davinci',
    'curie',
    'babbage',
    'ada',
    'text-similarity-davinci-001',
    'text-similarity-curie-001',
    'text-similarity-babbage-001',
    'text-similarity-ada-001',
    'text-search-davinci-doc-001',
    'text-search-curie-doc-001',
    'text-search-babbage-doc-001',
    'text-search-ada-doc-001',
    'code-search-babbage-code-001',
    'code-search-ada-code-001',
    'gpt2',
    'gpt-2',
  ],
}

/** Model name prefixes, in the order they are tried. */
const PREFIXES = [
  ['o1-', 'o200k_base'],
  ['o3-', 'o200k_base'],
  ['o4-mini-', 'o200k_base'],
  ['gpt-5', 'o200k_base'],
  ['gpt-4.5-', 'o200k_base'],
  ['gpt-4.1-', 'o200k_base'],
  ['chatgpt-4o-', 'o200k_base'],
  ['gpt-4o-', 'o200k_base'],
  ['gpt-4-', 'cl100k_base'],
  ['gpt-3.5-turbo-', 'cl100k_base'],
  ['gpt-35-turbo-', 'cl100k_base'],
  ['gpt-oss-', 'o200k_harmony'],
  ['codex-mini', 'o200k_base'],
]

/** The encoding the addon counts an unknown model with. */
export const FALLBACK_ENCODING = 'o200k_base'

/** Every model name and prefix of the tables with its encoding (for the tests). */
export const KNOWN_MODELS = [...Object.entries(EXACT).flatMap(([encoding, names]) => names.map((name) => [name, encoding])), ...PREFIXES]

/** The encoding of a lower-case model name in the tables alone, or null. */
function lookup(model) {
  if (model.startsWith('ft:')) return lookup(model.slice(3).split(':')[0])
  for (const [encoding, names] of Object.entries(EXACT)) if (names.includes(model)) return encoding
  return PREFIXES.find(([prefix]) => model.startsWith(prefix))?.[1] ?? null
}

/**
 * The encoding of a model, or null when the tables do not know it: in any case, and without
 * its provider prefix (`openai/gpt-4`, `openrouter/openai/gpt-4o`) when the whole name is unknown.
 */
export function encodingForModel(model) {
  // Rust's `str::to_lowercase` and JavaScript's `toLowerCase` agree on what the tables hold.
  const lower = model.toLowerCase()
  const slash = lower.lastIndexOf('/')
  return lookup(lower) ?? (slash === -1 ? null : lookup(lower.slice(slash + 1)))
}

/** The warning for an unknown `--model`, or null for a known one (or none). */
export function unknownModelWarning(model) {
  if (model === undefined || encodingForModel(model) !== null) return null
  return `warning: unknown model "${model}": counting with ${FALLBACK_ENCODING} (the encoding of gpt-4o and later models); name a known model (gpt-4o, gpt-4.1, gpt-4, gpt-3.5-turbo, o3, gpt-oss-120b, …) for its own encoding`
}
