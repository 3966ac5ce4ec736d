// `tsc --strict` on files a test writes in memory, as an app's type check would see them: the
// compiler the type tests share (provider-types.spec.ts, doc-snippets.spec.ts).
import ts from 'typescript'

export interface TypeCheck {
  /** Files by absolute path, read instead of (or besides) what is on disk. */
  files: Map<string, string>
  /** Check the declarations of the packages too (an app without `skipLibCheck`). */
  libCheck?: boolean
  /** Packages (`node_modules/<name>`) that the compiler does not find, as if not installed. */
  hidden?: string[]
  /** The standard library files (`lib.es2022.d.ts`…); by default the target's, DOM included. */
  lib?: string[]
}

/** The first line of every diagnostic in the files `inFile` accepts (by default those of `files`), with its file's path. */
export function typeErrors({ files, libCheck = false, hidden = [], lib }: TypeCheck, inFile: (path: string) => boolean = (path) => files.has(path)): Array<{ file: string; message: string }> {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: !libCheck,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    ...(lib ? { lib } : {}),
  }
  const host = ts.createCompilerHost(options)
  const isHidden = (path: string) => hidden.some((p) => path.includes(`/node_modules/${p}/`) || path.endsWith(`/node_modules/${p}`))
  const read = host.readFile
  const exists = host.fileExists
  const dirExists = host.directoryExists?.bind(host)
  host.readFile = (path) => files.get(path) ?? (isHidden(path) ? undefined : read(path))
  host.fileExists = (path) => files.has(path) || (!isHidden(path) && exists(path))
  host.directoryExists = (path) => !isHidden(path) && (dirExists ? dirExists(path) : true)
  const program = ts.createProgram([...files.keys()], options, host)
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file && inFile(d.file.fileName))
    .map((d) => ({ file: d.file!.fileName, message: ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0] }))
}
