/**
 * The gate every `FileSystem` call of the simulated process passes: the
 * journal's `admit` (refused after a crash, an injected fault instead of the
 * call) and `complete` (the operation log, the crash countdown), the clock
 * time the call runs at, and the translation of its `Errno` or `BadArgument`
 * into the `PlatformError` NodeFileSystem would raise.
 *
 * Boundary: the journal seam between the pure simulation and Effect; the
 * methods themselves are `service.ts` (paths) and `file.ts` (open files).
 */
import { Clock, Effect, type PlatformError } from "effect"
import { BadArgument, badArgumentError, Errno, errno, toPlatformError } from "../errno.ts"
import { admit, complete } from "../journal.ts"
import type { FsHost, FsState } from "./model.ts"
import { absolute } from "./resolve.ts"

/** What a simulated call returns: its result, the errno it failed with, or an argument Node rejects first. */
export type Outcome<A> = A | Errno | BadArgument

/** What the journal, fault matching and the error need to know about one call. */
export interface Meta {
  /** Journal kind, also used for fault matching. */
  readonly kind: string
  /** `method` of the PlatformError NodeFileSystem would raise. */
  readonly method: string
  /** The first argument, as the caller gave it. */
  readonly pathOrDescriptor: string | number | undefined
  /** Absolute, normalised paths for the journal. */
  readonly paths: ReadonlyArray<string>
  /** Syscall an injected fault reports when the fault names none. */
  readonly syscall: string
}

/** The syscall Node's error names for each method's first failure, used for injected faults. */
export const defaultSyscall: Record<string, string> = {
  access: "access",
  chmod: "chmod",
  chown: "chown",
  copy: "cp",
  copyFile: "copyfile",
  link: "link",
  lstat: "lstat",
  makeDirectory: "mkdir",
  makeTempDirectory: "mkdtemp",
  makeTempDirectoryScoped: "mkdtemp",
  makeTempFile: "mkdtemp",
  makeTempFileScoped: "mkdtemp",
  open: "open",
  readDirectory: "scandir",
  readDirectoryEntries: "scandir",
  readFile: "open",
  readLink: "readlink",
  realPath: "lstat",
  remove: "rm",
  rename: "rename",
  stat: "stat",
  symlink: "symlink",
  truncate: "open",
  utimes: "utime",
  writeFile: "open",
  "File.read": "read",
  "File.readAlloc": "read",
  "File.write": "write",
  "File.writeAll": "write",
  "File.truncate": "ftruncate",
  "File.stat": "fstat",
  "File.sync": "fsync"
}

export const meta = (st: FsState, kind: string, first: string, ...rest: Array<string>): Meta => ({
  kind,
  method: kind === "utimes" ? "utime" : kind,
  pathOrDescriptor: first,
  paths: [first, ...rest].map((p) => absolute(st, p)),
  syscall: defaultSyscall[kind] ?? kind
})

/**
 * Runs one simulated operation through the host journal: refused after a
 * crash, replaced by an injected error when a fault matches, otherwise `body`
 * runs against the state at the current `Clock` time. Errors become the
 * `PlatformError` NodeFileSystem would raise.
 */
export const operate = <A>(
  host: FsHost,
  m: Meta,
  body: (now: number) => Outcome<A>
): Effect.Effect<A, PlatformError.PlatformError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.suspend(() => {
      const gate = admit(host.journal, m.kind, m.paths)
      if (gate._tag === "Crashed") return Effect.die(gate.defect)
      if (gate._tag === "Inject") {
        const e = errno(gate.fault.code, gate.fault.syscall ?? m.syscall, m.paths[0], m.paths[1])
        complete(host.journal, m.kind, m.paths, e.code, true)
        return Effect.fail(toPlatformError(e, m.method, m.pathOrDescriptor))
      }
      const r = body(now)
      if (r instanceof Errno) {
        complete(host.journal, m.kind, m.paths, r.code)
        return Effect.fail(toPlatformError(r, m.method, m.pathOrDescriptor))
      }
      if (r instanceof BadArgument) {
        complete(host.journal, m.kind, m.paths, "BadArgument")
        return Effect.fail(badArgumentError(r, m.method))
      }
      complete(host.journal, m.kind, m.paths, "ok")
      return Effect.succeed(r)
    })
  )
