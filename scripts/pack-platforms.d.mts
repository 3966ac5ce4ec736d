// Types of pack-platforms.mjs, for the TypeScript specs that import it.
import type { Platform } from './platforms.mjs'

/** npm's description of a packed tarball. */
export interface Pack {
  filename: string
  path: string
  size: number
  files: Array<{ path: string; size: number }>
}

export declare function cleanEnv(extra?: Record<string, string>): Record<string, string | undefined>
export declare function packPackage(dir: string, destination: string): Pack
export declare function packPlatform(p: Platform, destination: string, binary?: string): Pack
export declare function builtBinary(p: Platform): string

/** A bad command line (an unknown option or platform, a missing or wrong `--out-dir`). */
export declare class UsageError extends Error {}
/** target/packs/ of the repository: where the tarballs go without `--out-dir`. */
export declare const DEFAULT_OUT_DIR: string
/** The `--help` text. */
export declare const USAGE: string
/** The command line read: `outDir` absolute, a relative one taken from `cwd`. Throws a `UsageError`. */
export declare function parseArgs(argv: string[], cwd?: string): { help: boolean; outDir: string; platforms: Platform[] }
