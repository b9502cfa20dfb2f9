/**
 * The handle operations a program yields, their outcomes, and failures as
 * values. A driver answers each operation: the real layer's helper process
 * with one system call (or two), core's Effect driver with a `Directories`
 * primitive.
 *
 * Internal: `Programs` re-exports what a driver needs; nothing here loads
 * Effect, so the helper process stays small.
 *
 * @since 0.4.0
 */
import type * as Directory from "../../Directory.ts"
import type { Entry } from "../../Programs.ts"

/** The reason tags a failed operation carries: `Directory.SystemError`'s, plus `Hung` and `Gone`. */
export type ReasonTag =
  | "NotFound"
  | "NotADirectory"
  | "IsADirectory"
  | "Exists"
  | "NotEmpty"
  | "SymbolicLink"
  | "TooManyLinks"
  | "Busy"
  | "PermissionDenied"
  | "ReadOnly"
  | "CrossDevice"
  | "NoSpace"
  | "InvalidName"
  | "Unsupported"
  | "WrongType"
  | "OtherMount"
  | "Hung"
  | "Gone"
  | "Other"

/**
 * The reason of an errno, as every implementation classifies it: the one
 * table, used by `Directory.reasonOf` and by the helper process alike.
 */
export const reasonTagOf = (errno: string): ReasonTag => {
  switch (errno) {
    case "ENOENT":
      return "NotFound"
    case "ENOTDIR":
      return "NotADirectory"
    case "EISDIR":
      return "IsADirectory"
    case "EEXIST":
      return "Exists"
    case "ENOTEMPTY":
      return "NotEmpty"
    case "ELOOP":
      return "SymbolicLink"
    case "EBUSY":
      return "Busy"
    case "EACCES":
    case "EPERM":
      return "PermissionDenied"
    case "EROFS":
      return "ReadOnly"
    case "EXDEV":
      return "CrossDevice"
    case "ENOSPC":
    case "EDQUOT":
      return "NoSpace"
    case "ENAMETOOLONG":
    case "EINVAL":
      return "InvalidName"
    case "ENOSYS":
    case "EOPNOTSUPP":
      return "Unsupported"
    case "ENXIO":
      return "WrongType"
    default:
      return "Other"
  }
}

/** An operation that failed, as a value: the reason, the errno where a system call said one, and what it means. */
export interface Failure {
  readonly _tag: "Failure"
  readonly reason: ReasonTag
  readonly errno?: string | undefined
  readonly detail: string
  /** For `Hung`: the call that did not return. */
  readonly call?: string | undefined
  /** For `Hung`: how long it was waited for, in seconds. */
  readonly seconds?: number | undefined
}

/** A {@link Failure}. */
export const failure = (
  reason: ReasonTag,
  detail: string,
  extra?: { readonly errno?: string | undefined; readonly call?: string | undefined; readonly seconds?: number }
): Failure => ({ _tag: "Failure", reason, detail, ...extra })

/** True for a {@link Failure}. */
export const isFailure = (u: unknown): u is Failure =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === "Failure"

/**
 * What makes a node the node it is, and where it was reached: its type, its
 * device and inode, and the mount id. Read without asking the file system
 * for fresh attributes (`AT_STATX_DONT_SYNC`): a dead file system is never
 * asked.
 */
export interface Identity {
  readonly type: Directory.Stat["type"]
  readonly device: string
  readonly inode: bigint
  readonly mountId: number
}

/** The same node, reached again: device, inode and mount id equal. */
export const sameNode = (a: Identity, b: Identity): boolean =>
  a.device === b.device && a.inode === b.inode && a.mountId === b.mountId

/** A handle a program opened, and what it is. */
export interface Opened<H> {
  readonly handle: H
  readonly identity: Identity
}

/** One batch of a directory's entries, and whether it is the last. */
export interface Listing {
  readonly entries: ReadonlyArray<Entry>
  readonly end: boolean
}

/** The handle operations programs yield; `H` is the layer's handle. */
export type Op<H> =
  /** `identify(dir, name)`: the {@link Identity} of `name` in `dir` (not followed), or of `dir`. */
  | { readonly _op: "identify"; readonly dir: H; readonly name: Uint8Array | undefined }
  /**
   * Opens the child directory `name` of `dir` without following a link
   * (`SymbolicLink`; `NotADirectory` for anything else) and, with
   * `sameMount`, without entering another mount (`OtherMount`, decided
   * before the child's file system is asked anything).
   */
  | { readonly _op: "openDirectory"; readonly dir: H; readonly name: Uint8Array; readonly sameMount: boolean }
  /** Opens the directory `..` of `dir` names now. */
  | { readonly _op: "openParent"; readonly dir: H }
  /**
   * Holds the node at `components` below `root` (`O_PATH`): no link anywhere
   * (`SymbolicLink`), a non-directory before the last component is
   * `NotADirectory`, never above `root`; the last component may be anything
   * but a link.
   */
  | { readonly _op: "openBeneath"; readonly root: H; readonly components: ReadonlyArray<Uint8Array> }
  /** The next batch of `dir`'s entries; `restart` starts from the first. */
  | { readonly _op: "readDirectory"; readonly dir: H; readonly restart: boolean }
  /** Removes `name` of `dir`: a non-directory, or with `directory` an empty directory. */
  | { readonly _op: "unlink"; readonly dir: H; readonly name: Uint8Array; readonly directory: boolean }
  /** Unlinks each of `names` (none a directory) in order; for each, `undefined` or its failure. */
  | { readonly _op: "unlinkAll"; readonly dir: H; readonly names: ReadonlyArray<Uint8Array> }
  /** Closes a handle the program opened. */
  | { readonly _op: "close"; readonly handle: H }
  /** An event, not an operation: `path` was removed (yielded only when the caller asked for them). */
  | { readonly _op: "removed"; readonly path: string }

/** A program: yields operations, is given each one's outcome, returns its result. */
export type Program<H, R> = Generator<Op<H>, R, unknown>

/** Runs `program`, answering each operation synchronously with `exec`. */
export const runSync = <H, R>(program: Program<H, R>, exec: (op: Op<H>) => unknown): R => {
  let step = program.next()
  while (step.done !== true) step = program.next(exec(step.value))
  return step.value
}
