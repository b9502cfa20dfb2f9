/**
 * Errno values of the simulated host and their translation into the
 * `PlatformError` that `@effect/platform-node`'s `NodeFileSystem` produces for
 * the same failure. Internal: the simulated syscalls return an `Errno`, and
 * only the service boundary turns it into a `PlatformError`.
 *
 * @since 0.1.0
 */
import { PlatformError } from "effect"

/**
 * Linux errno numbers and libuv's descriptions for the codes the simulated
 * host can produce or that a fault can inject. Node reports libuv errors with
 * the negated number (`errno: -2` for ENOENT), so the table keeps the positive
 * Linux value and the conversion negates it.
 */
export const errnoTable = {
  EPERM: [1, "operation not permitted"],
  ENOENT: [2, "no such file or directory"],
  EIO: [5, "i/o error"],
  EBADF: [9, "bad file descriptor"],
  EAGAIN: [11, "resource temporarily unavailable"],
  ENOMEM: [12, "not enough memory"],
  EACCES: [13, "permission denied"],
  EBUSY: [16, "resource busy or locked"],
  EEXIST: [17, "file already exists"],
  EXDEV: [18, "cross-device link not permitted"],
  ENOTDIR: [20, "not a directory"],
  EISDIR: [21, "illegal operation on a directory"],
  EINVAL: [22, "invalid argument"],
  ENFILE: [23, "file table overflow"],
  EMFILE: [24, "too many open files"],
  ETXTBSY: [26, "text file is busy"],
  EFBIG: [27, "file too large"],
  ENOSPC: [28, "no space left on device"],
  EROFS: [30, "read-only file system"],
  EMLINK: [31, "too many links"],
  ENAMETOOLONG: [36, "name too long"],
  ENOTEMPTY: [39, "directory not empty"],
  ELOOP: [40, "too many symbolic links encountered"],
  EDQUOT: [122, "disk quota exceeded"],
  ETIMEDOUT: [110, "connection timed out"]
} as const satisfies Record<string, readonly [number, string]>

/** An errno code the simulated host knows, e.g. `"ENOENT"`. */
export type ErrnoCode = keyof typeof errnoTable

/** True when `code` is one of the errno codes in {@link errnoTable}. */
export const isErrnoCode = (code: string): code is ErrnoCode => Object.hasOwn(errnoTable, code)

/**
 * Node's own `ERR_FS_*` system errors, raised by its JavaScript `fs.rm` and
 * `fs.cp` before or instead of a syscall. Their `errno` is the positive Linux
 * number and their `reason._tag` is `Unknown`, exactly as on the real host.
 */
export const nodeErrorTable = {
  ERR_FS_EISDIR: ["EISDIR", "Path is a directory"],
  ERR_FS_CP_EINVAL: ["EINVAL", "Invalid src or dest"],
  ERR_FS_CP_DIR_TO_NON_DIR: ["EISDIR", "Cannot overwrite non-directory with directory"],
  ERR_FS_CP_NON_DIR_TO_DIR: ["ENOTDIR", "Cannot overwrite directory with non-directory"],
  ERR_FS_CP_SYMLINK_TO_SUBDIRECTORY: ["EINVAL", "Cannot overwrite symlink in subdirectory of self"],
  ERR_FS_CP_EEXIST: ["EEXIST", "Target already exists"]
} as const satisfies Record<string, readonly [ErrnoCode, string]>

/** A Node `ERR_FS_*` code, see {@link nodeErrorTable}. */
export type NodeErrorCode = keyof typeof nodeErrorTable

/**
 * A failed simulated syscall: the code, the syscall name Node would report
 * and the path(s) it was called with. Not an `Error`: it is a plain value the
 * pure helpers return (never throw), checked with `instanceof`.
 */
export class Errno {
  readonly code: ErrnoCode | NodeErrorCode
  readonly syscall: string
  readonly path: string | undefined
  readonly dest: string | undefined
  /** Only for `ERR_FS_*` errors: the human detail Node puts in parentheses. */
  readonly detail: string | undefined
  constructor(code: ErrnoCode | NodeErrorCode, syscall: string, path?: string, dest?: string, detail?: string) {
    this.code = code
    this.syscall = syscall
    this.path = path
    this.dest = dest
    this.detail = detail
  }
}

/** Shorthand constructor used all over the simulated syscalls. */
export const errno = (code: ErrnoCode | NodeErrorCode, syscall: string, path?: string, dest?: string): Errno =>
  new Errno(code, syscall, path, dest)

/** The `reason._tag` Node's `handleErrnoException` picks for a code (platform-node-shared/internal/utils.js). */
export const reasonTag = (code: string): PlatformError.SystemErrorTag => {
  switch (code) {
    case "ENOENT":
      return "NotFound"
    case "EACCES":
    case "EPERM":
      return "PermissionDenied"
    case "EEXIST":
      return "AlreadyExists"
    case "EISDIR":
    case "ENOTDIR":
    case "ELOOP":
      return "BadResource"
    case "EBUSY":
      return "Busy"
    default:
      return "Unknown"
  }
}

/**
 * The error object Node would pass to the callback: an `Error` carrying
 * `errno`, `code`, `syscall`, `path` and `dest`, with Node's message format.
 * Callers that need the errno code read `error.reason.cause.code`.
 */
export const nodeCause = (e: Errno): Error => {
  if (Object.hasOwn(nodeErrorTable, e.code)) {
    const [base, title] = nodeErrorTable[e.code as NodeErrorCode]
    const err = new Error(
      `${title}: ${e.syscall} returned ${base} (${e.detail ?? errnoTable[base][1]}) ${e.path ?? ""}`
    )
    err.name = "SystemError"
    return Object.assign(err, {
      code: e.code,
      errno: errnoTable[base][0],
      syscall: e.syscall,
      ...(e.path === undefined ? {} : { path: e.path }),
      ...(e.dest === undefined ? {} : { dest: e.dest })
    })
  }
  const [num, description] = errnoTable[e.code as ErrnoCode]
  const where = e.path === undefined ? "" : e.dest === undefined ? ` '${e.path}'` : ` '${e.path}' -> '${e.dest}'`
  return Object.assign(new Error(`${e.code}: ${description}, ${e.syscall}${where}`), {
    errno: -num,
    code: e.code,
    syscall: e.syscall,
    ...(e.path === undefined ? {} : { path: e.path }),
    ...(e.dest === undefined ? {} : { dest: e.dest })
  })
}

/**
 * The `PlatformError` NodeFileSystem builds for `e` when `method` was called
 * with `pathOrDescriptor` as its first argument.
 */
export const toPlatformError = (
  e: Errno,
  method: string,
  pathOrDescriptor: string | number | undefined
): PlatformError.PlatformError =>
  PlatformError.systemError({
    _tag: reasonTag(e.code),
    module: "FileSystem",
    method,
    pathOrDescriptor,
    syscall: e.syscall,
    cause: nodeCause(e)
  })

/** A `BadArgument` failure, what Node's layer reports when an argument is rejected before any syscall. */
export class BadArgument {
  readonly description: string
  constructor(description: string) {
    this.description = description
  }
}

/** `PlatformError` for a {@link BadArgument}, matching NodeFileSystem's `handleBadArgument`. */
export const badArgumentError = (b: BadArgument, method: string): PlatformError.PlatformError =>
  PlatformError.badArgument({ module: "FileSystem", method, description: b.description })
