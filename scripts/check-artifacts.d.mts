// Types of check-artifacts.mjs, for the TypeScript specs that import it.
import type { Platform } from './platforms.mjs'

/** What was read from a binary (see binary-format.mjs), plus its platform and size. */
export interface BinaryFacts {
  platform: string
  bytes: number
  format: string
  arch?: string
  libc?: string
  glibc?: string
  needed?: string[]
  glibcVersions?: string[]
  minMacos?: string | null
  exports: string[]
  stripped: boolean | null
}

export declare const NAPI_SYMBOL: string
export declare function checkBinary(
  p: Platform,
  file?: string,
  options?: { release?: boolean },
): { facts: BinaryFacts | null; problems: string[] }
export declare function checkPackageJson(p: Platform, pkg: Record<string, unknown>, where?: string): string[]
export declare function checkPlatformLists(): string[]
export declare function checkLoader(text?: string): string[]
export declare function checkLicense(p: Platform): string[]
