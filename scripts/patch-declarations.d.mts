// Types of patch-declarations.mjs, for the TypeScript specs that import it.

/** Each class's generated header, and the header with its type parameters. */
export declare const CLASS_PARAMETERS: Array<[string, string]>
/** `text` (an index.d.ts) with every class of CLASS_PARAMETERS given its type parameters. */
export declare function patchDeclarations(text: string): string
/** Patches the file (by default the package's index.d.ts); returns what it did. */
export declare function patchDeclarationsFile(file?: string): string
