// Types of models.mjs, for the TypeScript specs that import it.
export declare const FALLBACK_ENCODING: string
export declare const KNOWN_MODELS: Array<[string, string]>
export declare function encodingForModel(model: string): string | null
export declare function unknownModelWarning(model: string | undefined): string | null
