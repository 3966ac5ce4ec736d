// Reads what check-artifacts needs from a native addon, with no tool but Node: the format and
// architecture, the C library it links against, the symbols it exports, whether it is stripped
// and, for Mach-O, its minimum macOS and its code signature. Only the shapes our targets produce
// are read: 64-bit little-endian ELF and thin 64-bit Mach-O; anything else is reported, not
// guessed at. Every offset read from the file is bounds-checked, so a truncated or foreign file
// gives a clear error instead of a wrong answer.
import { createHash } from 'node:crypto'

/** e_machine values of the ELF architectures we build. */
const ELF_MACHINES = { 62: 'x86-64', 183: 'aarch64' }
/** Mach-O cputype values of the architectures we build. */
const MACHO_CPUTYPES = { 0x01000007: 'x86_64', 0x0100000c: 'arm64' }
const MACHO_FILETYPES = { 6: 'dylib', 8: 'bundle' }

/** A bounds-checked little/big-endian reader over a Buffer. */
class Reader {
  constructor(buf, what) {
    this.buf = buf
    this.what = what
  }
  check(off, len) {
    if (!Number.isSafeInteger(off) || off < 0 || off + len > this.buf.length) {
      throw new Error(`${this.what}: truncated or corrupt (read of ${len} bytes at ${off}, file has ${this.buf.length})`)
    }
  }
  u8(off) {
    this.check(off, 1)
    return this.buf.readUInt8(off)
  }
  u16(off) {
    this.check(off, 2)
    return this.buf.readUInt16LE(off)
  }
  u32(off) {
    this.check(off, 4)
    return this.buf.readUInt32LE(off)
  }
  u32be(off) {
    this.check(off, 4)
    return this.buf.readUInt32BE(off)
  }
  u64(off) {
    this.check(off, 8)
    const v = this.buf.readBigUInt64LE(off)
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`${this.what}: value ${v} at ${off} is out of range`)
    return Number(v)
  }
  i64(off) {
    this.check(off, 8)
    return this.buf.readBigInt64LE(off)
  }
  slice(off, len) {
    this.check(off, len)
    return this.buf.subarray(off, off + len)
  }
  /** A NUL-terminated string starting at `off`, not reading past `end`. */
  cstr(off, end = this.buf.length) {
    this.check(off, 1)
    const stop = this.buf.indexOf(0, off)
    if (stop === -1 || stop > end) throw new Error(`${this.what}: unterminated string at ${off}`)
    return this.buf.toString('latin1', off, stop)
  }
  /** An unsigned LEB128 at `off`: [value, next offset]. */
  uleb(off) {
    let value = 0
    let shift = 0
    for (let at = off; ; at++) {
      const byte = this.u8(at)
      value += (byte & 0x7f) * 2 ** shift
      if ((byte & 0x80) === 0) return [value, at + 1]
      shift += 7
      if (shift > 49) throw new Error(`${this.what}: LEB128 too long at ${off}`)
    }
  }
}

/**
 * Inspects a native binary. Returns `{ format, arch, ... }`: for ELF `libc`, `needed`,
 * `glibcVersions`, `interp`, `exports`, `stripped`; for Mach-O `filetype`, `dylibs`,
 * `minMacos`, `exports`, `stripped`, `signature`. `format` is `'unknown'` for anything else.
 */
export function inspectBinary(buf, what = 'binary') {
  if (buf.length >= 4 && buf.readUInt32BE(0) === 0x7f454c46) return inspectElf(new Reader(buf, what))
  if (buf.length >= 4 && buf.readUInt32LE(0) === 0xfeedfacf) return inspectMachO(new Reader(buf, what))
  if (buf.length >= 4 && buf.readUInt32BE(0) === 0xcafebabe) return { format: 'macho-fat' }
  if (buf.length >= 4 && buf.readUInt32LE(0) === 0xfeedface) return { format: 'macho-32' }
  if (buf.length >= 2 && buf.toString('latin1', 0, 2) === 'MZ') return { format: 'pe' }
  return { format: 'unknown', magic: buf.subarray(0, 4).toString('hex') }
}

// ELF (64-bit little-endian): header, program headers (PT_INTERP, PT_DYNAMIC), the dynamic
// section (DT_NEEDED, DT_VERNEED), section headers (SHT_DYNSYM and its string table).
const PT_LOAD = 1
const PT_DYNAMIC = 2
const PT_INTERP = 3
const DT_NEEDED = 1n
const DT_STRTAB = 5n
const DT_STRSZ = 10n
const DT_VERNEED = 0x6ffffffen
const DT_VERNEEDNUM = 0x6fffffffn
const SHT_SYMTAB = 2
const SHT_DYNSYM = 11
const ET_DYN = 3

function inspectElf(r) {
  const elfClass = r.u8(4)
  const data = r.u8(5)
  if (elfClass !== 2 || data !== 1) {
    return { format: 'elf', arch: `unsupported (class ${elfClass}, data ${data}: only 64-bit little-endian is read)` }
  }
  const type = r.u16(16)
  const machine = r.u16(18)
  const phoff = r.u64(32)
  const shoff = r.u64(40)
  const phentsize = r.u16(54)
  const phnum = r.u16(56)
  const shentsize = r.u16(58)
  const shnum = r.u16(60)

  const segments = []
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize
    segments.push({ type: r.u32(at), offset: r.u64(at + 8), vaddr: r.u64(at + 16), filesz: r.u64(at + 32) })
  }
  /** File offset of a virtual address, through the PT_LOAD segment that maps it. */
  const fileOffset = (vaddr) => {
    const seg = segments.find((s) => s.type === PT_LOAD && vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz)
    if (!seg) throw new Error(`${r.what}: address 0x${vaddr.toString(16)} is not in a loaded segment`)
    return seg.offset + (vaddr - seg.vaddr)
  }

  const interpSeg = segments.find((s) => s.type === PT_INTERP)
  const interp = interpSeg ? r.cstr(interpSeg.offset, interpSeg.offset + interpSeg.filesz) : null

  const needed = []
  const glibcVersions = []
  const dynSeg = segments.find((s) => s.type === PT_DYNAMIC)
  if (dynSeg) {
    const entries = []
    for (let at = dynSeg.offset; at + 16 <= dynSeg.offset + dynSeg.filesz; at += 16) {
      const tag = r.i64(at)
      if (tag === 0n) break
      entries.push({ tag, val: r.u64(at + 8) })
    }
    const value = (tag) => entries.find((e) => e.tag === tag)?.val
    const strtab = fileOffset(value(DT_STRTAB))
    const strEnd = strtab + (value(DT_STRSZ) ?? 0)
    for (const e of entries) if (e.tag === DT_NEEDED) needed.push(r.cstr(strtab + e.val, strEnd))
    // Elf64_Verneed { vn_version u16, vn_cnt u16, vn_file u32, vn_aux u32, vn_next u32 } and
    // Elf64_Vernaux { vna_hash u32, vna_flags u16, vna_other u16, vna_name u32, vna_next u32 }.
    const verneed = value(DT_VERNEED)
    if (verneed !== undefined) {
      let at = fileOffset(verneed)
      for (let n = 0; n < (value(DT_VERNEEDNUM) ?? 0); n++) {
        const count = r.u16(at + 2)
        let aux = at + r.u32(at + 8)
        for (let k = 0; k < count; k++) {
          const name = r.cstr(strtab + r.u32(aux + 8), strEnd)
          if (name.startsWith('GLIBC_') && !glibcVersions.includes(name)) glibcVersions.push(name)
          aux += r.u32(aux + 12)
        }
        at += r.u32(at + 12)
      }
    }
  }
  glibcVersions.sort(compareGlibc)

  const sections = []
  if (shoff !== 0) {
    for (let i = 0; i < shnum; i++) {
      const at = shoff + i * shentsize
      sections.push({ type: r.u32(at + 4), offset: r.u64(at + 24), size: r.u64(at + 32), link: r.u32(at + 40) })
    }
  }
  // Elf64_Sym { st_name u32, st_info u8, st_other u8, st_shndx u16, st_value u64, st_size u64 }:
  // exported = GLOBAL or WEAK binding, defined (st_shndx != 0), default or protected visibility.
  const exports = []
  const dynsym = sections.find((s) => s.type === SHT_DYNSYM)
  if (dynsym) {
    const strSec = sections[dynsym.link]
    if (!strSec) throw new Error(`${r.what}: .dynsym links to a missing string table`)
    for (let at = dynsym.offset + 24; at + 24 <= dynsym.offset + dynsym.size; at += 24) {
      const bind = r.u8(at + 4) >> 4
      const visibility = r.u8(at + 5) & 3
      const defined = r.u16(at + 6) !== 0
      if ((bind === 1 || bind === 2) && defined && (visibility === 0 || visibility === 3)) {
        exports.push(r.cstr(strSec.offset + r.u32(at), strSec.offset + strSec.size))
      }
    }
  }

  let libc = 'none'
  if (needed.includes('libc.so.6')) libc = 'glibc'
  else if (needed.some((n) => n === 'libc.so' || n.startsWith('libc.musl-') || n.startsWith('ld-musl-'))) libc = 'musl'
  else if (interp?.includes('ld-musl-')) libc = 'musl'
  else if (interp?.includes('ld-linux')) libc = 'glibc'

  return {
    format: 'elf',
    arch: ELF_MACHINES[machine] ?? `e_machine ${machine}`,
    type: type === ET_DYN ? 'shared object' : `e_type ${type}`,
    interp,
    needed,
    libc,
    glibcVersions,
    exports: exports.sort(),
    hasSectionHeaders: sections.length > 0,
    stripped: sections.length > 0 && !sections.some((s) => s.type === SHT_SYMTAB),
  }
}

/** Compares dotted versions numerically (`2.3.4` < `2.17`): negative, 0 or positive. */
export function compareVersions(a, b) {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** Orders `GLIBC_2.3.4`-style names by version. */
function compareGlibc(a, b) {
  return compareVersions(a.slice(6), b.slice(6))
}

// Mach-O (thin, 64-bit, little-endian): header, load commands, LC_SYMTAB, the dyld export trie
// (LC_DYLD_INFO_ONLY or LC_DYLD_EXPORTS_TRIE), LC_BUILD_VERSION / LC_VERSION_MIN_MACOSX, and
// LC_CODE_SIGNATURE, whose CodeDirectory page hashes are recomputed here.
const LC_SYMTAB = 0x2
const LC_LOAD_DYLIB = 0xc
const LC_ID_DYLIB = 0xd
const LC_CODE_SIGNATURE = 0x1d
const LC_DYLD_INFO = 0x22
const LC_DYLD_INFO_ONLY = 0x80000022
const LC_VERSION_MIN_MACOSX = 0x24
const LC_BUILD_VERSION = 0x32
const LC_DYLD_EXPORTS_TRIE = 0x80000033

function inspectMachO(r) {
  const cputype = r.u32(4)
  const filetype = r.u32(12)
  const ncmds = r.u32(16)
  const result = {
    format: 'macho',
    arch: MACHO_CPUTYPES[cputype] ?? `cputype 0x${cputype.toString(16)}`,
    filetype: MACHO_FILETYPES[filetype] ?? `filetype ${filetype}`,
    installName: null,
    dylibs: [],
    minMacos: null,
    exports: [],
    exportSource: null,
    stripped: null,
    signature: null,
  }
  let symtab = null
  let trie = null
  let codeSignature = null
  let at = 32
  for (let i = 0; i < ncmds; i++) {
    const cmd = r.u32(at)
    const size = r.u32(at + 4)
    if (size < 8) throw new Error(`${r.what}: load command ${i} has size ${size}`)
    if (cmd === LC_SYMTAB) symtab = { symoff: r.u32(at + 8), nsyms: r.u32(at + 12), stroff: r.u32(at + 16), strsize: r.u32(at + 20) }
    else if (cmd === LC_DYLD_INFO || cmd === LC_DYLD_INFO_ONLY) {
      if (r.u32(at + 44) > 0) trie = { off: r.u32(at + 40), size: r.u32(at + 44) }
    } else if (cmd === LC_DYLD_EXPORTS_TRIE) trie = { off: r.u32(at + 8), size: r.u32(at + 12) }
    else if (cmd === LC_CODE_SIGNATURE) codeSignature = { off: r.u32(at + 8), size: r.u32(at + 12) }
    else if (cmd === LC_BUILD_VERSION) result.minMacos = machoVersion(r.u32(at + 12))
    else if (cmd === LC_VERSION_MIN_MACOSX) result.minMacos = machoVersion(r.u32(at + 8))
    else if (cmd === LC_LOAD_DYLIB) result.dylibs.push(r.cstr(at + r.u32(at + 8), at + size))
    else if (cmd === LC_ID_DYLIB) result.installName = r.cstr(at + r.u32(at + 8), at + size)
    at += size
  }

  const symtabExports = []
  if (symtab) {
    // nlist_64 { n_strx u32, n_type u8, n_sect u8, n_desc u16, n_value u64 }; N_STAB 0xe0,
    // N_TYPE 0x0e (N_SECT 0x0e = defined in a section), N_EXT 0x01.
    let locals = 0
    for (let k = 0; k < symtab.nsyms; k++) {
      const e = symtab.symoff + k * 16
      const type = r.u8(e + 4)
      if (type & 0xe0) {
        locals++
        continue
      }
      const defined = (type & 0x0e) === 0x0e
      if (!(type & 0x01)) {
        if (defined) locals++
        continue
      }
      if (defined) symtabExports.push(r.cstr(symtab.stroff + r.u32(e), symtab.stroff + symtab.strsize))
    }
    result.stripped = locals === 0
  }
  if (trie) {
    result.exports = exportTrie(r, trie.off, trie.size)
    result.exportSource = 'dyld export trie'
  } else {
    result.exports = symtabExports
    result.exportSource = 'symbol table'
  }
  result.exports.sort()
  if (codeSignature) result.signature = verifyCodeSignature(r, codeSignature.off, codeSignature.size)
  return result
}

/** `xxxx.yy.zz` nibble-encoded version, e.g. 0x000b0000 → `11.0`. */
function machoVersion(v) {
  const patch = v & 0xff
  return `${v >>> 16}.${(v >> 8) & 0xff}${patch ? `.${patch}` : ''}`
}

/** Every name in a dyld export trie (terminal nodes), walked depth first. */
function exportTrie(r, start, size) {
  const names = []
  const seen = new Set()
  const stack = [[0, '']]
  while (stack.length) {
    const [node, prefix] = stack.pop()
    if (node >= size || seen.has(node)) throw new Error(`${r.what}: malformed export trie at node ${node}`)
    seen.add(node)
    const [terminalSize, afterSize] = r.uleb(start + node)
    if (terminalSize > 0) names.push(prefix)
    let at = afterSize + terminalSize
    const children = r.u8(at)
    at++
    for (let c = 0; c < children; c++) {
      const edge = r.cstr(at, start + size)
      at += edge.length + 1
      const [child, next] = r.uleb(at)
      at = next
      stack.push([child, prefix + edge])
    }
  }
  return names
}

const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0
const CSMAGIC_CODEDIRECTORY = 0xfade0c02
const CS_HASHES = { 1: ['sha1', 20], 2: ['sha256', 32], 3: ['sha256', 20], 4: ['sha384', 48] }

/**
 * Checks an embedded code signature the way the kernel does for each page: the CodeDirectory
 * (big-endian) holds one hash per page of the file up to codeLimit. Returns
 * `{ adhoc, linkerSigned, pages, valid, badPage }`.
 */
function verifyCodeSignature(r, off, size) {
  if (r.u32be(off) !== CSMAGIC_EMBEDDED_SIGNATURE) return { valid: false, error: 'no embedded signature superblob' }
  const count = r.u32be(off + 8)
  let cd = null
  for (let i = 0; i < count; i++) {
    const blob = off + r.u32be(off + 12 + i * 8 + 4)
    if (r.u32be(off + 12 + i * 8) === 0 && r.u32be(blob) === CSMAGIC_CODEDIRECTORY) cd = blob
  }
  if (cd === null || cd >= off + size) return { valid: false, error: 'no CodeDirectory' }
  const flags = r.u32be(cd + 12)
  const hashOffset = r.u32be(cd + 16)
  const nCodeSlots = r.u32be(cd + 28)
  const codeLimit = r.u32be(cd + 32)
  const hashSize = r.u8(cd + 36)
  const hashType = r.u8(cd + 37)
  const pageSize = 2 ** r.u8(cd + 39)
  const hash = CS_HASHES[hashType]
  const result = { adhoc: (flags & 0x2) !== 0, linkerSigned: (flags & 0x20000) !== 0, pages: nCodeSlots, valid: true, badPage: null }
  if (!hash || hash[1] !== hashSize) return { ...result, valid: false, error: `unknown hash type ${hashType}` }
  if (Math.ceil(codeLimit / pageSize) !== nCodeSlots) return { ...result, valid: false, error: 'page count does not cover codeLimit' }
  for (let i = 0; i < nCodeSlots; i++) {
    const start = i * pageSize
    const page = r.slice(start, Math.min(pageSize, codeLimit - start))
    const digest = createHash(hash[0]).update(page).digest().subarray(0, hashSize)
    if (!digest.equals(r.slice(cd + hashOffset + i * hashSize, hashSize))) return { ...result, valid: false, badPage: i }
  }
  return result
}
