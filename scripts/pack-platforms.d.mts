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
