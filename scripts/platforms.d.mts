// Types of platforms.mjs, for the TypeScript specs that import it.

/** One target of `napi.targets` and what its binary and package must look like. */
export interface Platform {
  platform: string
  triple: string
  buildTarget: string
  where: 'here' | 'ci'
  os: string
  cpu: string
  libc: 'glibc' | 'musl' | null
  format: 'elf' | 'macho' | 'pe'
  machine?: string
  cputype?: string
  minMacos?: string
}

export declare const root: string
export declare const rootPackage: {
  name: string
  version: string
  license: string
  napi: { binaryName: string; targets: string[] }
  optionalDependencies?: Record<string, string>
}
export declare const binaryName: string
export declare const glibcFloor: string
export declare const platforms: Platform[]
export declare const localPlatforms: Platform[]
export declare function binaryFile(p: Platform): string
export declare function packageDir(p: Platform): string
export declare function binaryPath(p: Platform): string
export declare function platformNamed(name: string): Platform
