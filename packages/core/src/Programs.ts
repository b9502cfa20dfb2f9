/**
 * The `@hostnode/core/Programs` entry, for implementers of a layer (the real
 * one, the simulated host, the dry run): programs over directory handles,
 * written once and run by every layer (the removal walk, the verification of
 * a mount before it is detached), each a generator that yields one handle
 * operation (`Op`) and is given its outcome; the pure tools layers share
 * (name limits, the lexical path algebra, the propagation prediction, the top
 * of a mount stack, LocalDNS's rule comment); and
 * the models only a layer names (the `Directories` entries, files and batches, a `Mounter`'s
 * targets and results, `handle`). A dry run and a real run therefore take the
 * same decisions. It loads nothing but `FileName` (no Effect), so a helper
 * process that imports it stays small; agents use the operations built on it.
 *
 * @since 0.4.0
 */

import type { Effect } from "effect"
import type { Handle, Stat } from "./Directory.ts"
import type { DirectoryError } from "./DirectoryError.ts"
import type { Limits } from "./internal/programs/removeTree.ts"

/**
 * Names as bytes and their lossless string form (the same module as `@hostnode/core`'s `FileName`), for drivers.
 *
 * @since 0.4.0
 */
export * as FileName from "./FileName.ts"
export {
  /**
   * Marks a layer's own object (a file descriptor, an inode, with its `path`) as a `Directory.Handle`.
   *
   * @since 0.4.0
   */
  handle,
  /**
   * What makes a node the node it is, whatever it is called or reached
   * through: its device and inode (`major:minor:inode`) from its
   * `Directory.Stat`. A bind mount of a directory shows the same directory
   * (the same identity) under another mount id.
   *
   * @since 0.4.0
   */
  identity
} from "./internal/directory/handle.ts"
export {
  /**
   * `name` below the host path `parent` (lossless string forms).
   *
   * @since 0.4.0
   */
  childPath,
  /**
   * The components of a path as bytes: empty ones dropped, `.` and `..` kept for the walk.
   *
   * @since 0.4.0
   */
  components,
  /**
   * Linux refuses a component longer than this many bytes (NAME_MAX): `ENAMETOOLONG`.
   *
   * @since 0.4.0
   */
  NameMax,
  /**
   * Why `name` cannot be one component of a directory, as the kernel says it,
   * or `undefined` when it can: longer than {@link NameMax} bytes is
   * `ENAMETOOLONG`; empty, `.`, `..`, or with a `/` or a NUL byte is `EINVAL`.
   *
   * @since 0.4.0
   */
  nameProblem,
  /**
   * Linux refuses a path of this many bytes or more (PATH_MAX, with its NUL): `ENAMETOOLONG`.
   *
   * @since 0.4.0
   */
  PathMax
} from "./internal/directory/names.ts"
/**
 * The lexical algebra of absolute paths (clean, join, relative, covers, ...),
 * the one the operations use: for layers and fixtures that name places below a root.
 *
 * @since 0.4.0
 */
export * as Lexical from "./internal/hostPath/lexical.ts"
export {
  /**
   * The argv words of one line of `iptables -S` (`-A CHAIN ...`), the
   * double-quoted values iptables prints (comments) unquoted and unescaped: how
   * LocalDNS reads the rules it finds, for a simulated or dry-run iptables to
   * read them the same way.
   *
   * @category models
   * @since 0.4.0
   */
  parseRuleLine as iptablesWords,
  /**
   * The comment LocalDNS marks its iptables rules with (`-m comment --comment
   * hostnode:localdns`): cleanup deletes exactly the rules carrying it, so a
   * simulated host or a fixture tells ours from anyone else's by it.
   *
   * @category models
   * @since 0.4.0
   */
  RuleComment as localDnsRuleComment
} from "./internal/localdns/words.ts"
export {
  /**
   * A mount the kernel detaches by propagation, and the target whose detach reached it.
   *
   * @since 0.4.0
   */
  type PropagatedUnmount,
  /**
   * The mounts of `table` the kernel takes out by propagation when the mounts
   * `targets` are detached (their peer groups' and slaves' copies of the same
   * place): how a dry run or a simulated host predicts what a real unmount does.
   *
   * @since 0.4.0
   */
  propagatedUnmounts
} from "./internal/mountinfo/propagation.ts"
export {
  /**
   * The mounts of one stack (one mount point), top first, told by parent ids:
   * the kernel gives a new mount the lowest free id, so the top of a stack is
   * not the mount with the highest id. For a simulated `umount` and for suites
   * and fixtures that read a mount table.
   *
   * @category models
   * @since 0.4.0
   */
  topFirst as stackTopFirst,
  /**
   * The top of a stack of mounts on one path: the mount no other one there sits on.
   *
   * @category models
   * @since 0.4.0
   */
  topOf as stackTop
} from "./internal/mountinfo/stackTop.ts"

/**
 * The handle operations a program yields (`Op`), their outcomes, failures as
 * values (`Failure`, `failure`, `isFailure`, `reasonTagOf`), node identities
 * (`Identity`, `sameNode`), and `runSync`, which runs a program answering each
 * operation synchronously.
 *
 * @category models
 * @since 0.4.0
 */
export * from "./internal/programs/ops.ts"

/**
 * The removal walk (`removeTree`, its `RemoveInput`, `Limits` and
 * `RemoveResult` with what it `Kept` and where it `Hung`): one entry of an
 * open directory removed, a whole tree for a directory, never following a
 * link or entering another mount, with a bounded number of handles open.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/programs/removeTree.ts"

/**
 * The verification of a mount before it is detached (`verifyMount`, its
 * `VerifyTarget` and `VerifyOutcome`): its path held below the root without
 * following a link, and the mount id reached compared with the table's.
 *
 * @category operations
 * @since 0.4.0
 */
export * from "./internal/programs/verifyMount.ts"

/**
 * One entry of a directory listing: its name as bytes and its type as the listing gave it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Entry {
  readonly name: Uint8Array
  readonly type: Stat["type"]
}

/**
 * A regular file opened below a handle: every call acts on the open file, never on a path.
 *
 * @since 0.2.0
 * @category models
 */
export interface File {
  readonly path: string
  readonly stat: Effect.Effect<Stat, DirectoryError>
  /** Reads into `buffer` at `position`; 0 at the end of the file. */
  readonly read: (buffer: Uint8Array, position: number) => Effect.Effect<number, DirectoryError>
  /** Writes all of `bytes` at `position`. */
  readonly write: (bytes: Uint8Array, position: number) => Effect.Effect<void, DirectoryError>
  readonly truncate: (size: number) => Effect.Effect<void, DirectoryError>
  readonly chmod: (mode: number) => Effect.Effect<void, DirectoryError>
  readonly chown: (uid: number, gid: number) => Effect.Effect<void, DirectoryError>
  /** Sets the access and modification times (nanoseconds since the epoch). */
  readonly setTimes: (atimeNs: bigint, mtimeNs: bigint) => Effect.Effect<void, DirectoryError>
  readonly sync: Effect.Effect<void, DirectoryError>
  /**
   * Tries to take an exclusive `flock` on the open file without waiting:
   * true when taken (held until the file is closed, or its process dies),
   * false when another open file holds it, in this process or another.
   */
  readonly tryLock: Effect.Effect<boolean, DirectoryError>
  /** The pid of a process holding a lock on this file, when the platform can say (`/proc/locks`). */
  readonly lockHolder: Effect.Effect<number | undefined>
  /**
   * The offset of the first hole at or after `offset` (`lseek(SEEK_HOLE)`),
   * the file's size when there is none after it. A file written byte by byte
   * has no hole: one that has is sparse, and its size says nothing of what
   * was written.
   */
  readonly holeAt: (offset: number) => Effect.Effect<number, DirectoryError>
}

/**
 * One file `Directory.Primitives.hashFiles` hashed where it was read: the
 * stat of the open file, how many bytes were read, and their SHA-256.
 *
 * @since 0.4.0
 * @category models
 */
export interface HashedFile {
  readonly stat: Stat
  readonly size: number
  readonly sha256: string
}

/**
 * One file `Directory.Primitives.appendFiles` appended: the stat of the open
 * file it read, where its bytes went, how many, and their SHA-256.
 *
 * @since 0.4.0
 * @category models
 */
export interface AppendedFile {
  readonly stat: Stat
  readonly offset: number
  readonly size: number
  readonly sha256: string
}

/**
 * One file `Directory.Directories.copyFiles` makes: `name` in `dir`, created
 * exclusively with `permissions`, holding the `size` bytes of the source at
 * `offset`, then given its owner (where it differs from what it was created
 * with), its mode, and its times when given.
 *
 * @since 0.4.0
 * @category models
 */
export interface CopyFile {
  readonly dir: Handle
  readonly name: Uint8Array
  readonly permissions: number
  readonly offset: number
  readonly size: number
  readonly mode: number
  readonly uid: number
  readonly gid: number
  /** Access and modification times, nanoseconds since the epoch; left as they are when undefined. */
  readonly times?: { readonly atimeNs: bigint; readonly mtimeNs: bigint } | undefined
}

/**
 * One directory `Directory.Directories.openDirectories` opens: the child
 * `name` of the handle it is given, and the names in it to stat.
 *
 * @since 0.4.0
 * @category models
 */
export interface DirectoryToOpen {
  readonly name: Uint8Array
  readonly stat: ReadonlyArray<Uint8Array>
}

/**
 * One directory `Directory.Directories.openDirectories` opened: its handle
 * (closed with the caller's scope), its entries, and for each name asked
 * about its stat (not followed) or its error (`NotFound`: not there).
 *
 * @since 0.4.0
 * @category models
 */
export interface OpenedDirectory {
  readonly handle: Handle
  readonly entries: ReadonlyArray<Entry>
  readonly stats: ReadonlyArray<Stat | DirectoryError>
}

/**
 * One file `Directory.Directories.readFiles` read: the stat of the open file and all its bytes.
 *
 * @since 0.4.0
 * @category models
 */
export interface ReadFile {
  readonly stat: Stat
  readonly bytes: Uint8Array
}

/**
 * How far a batch (`Directory.Directories.copyFiles`, `renameAll`) went: the
 * first `done` were done; when `failure` is there, the next one failed with
 * it, and those after it were not tried.
 *
 * @since 0.4.0
 * @category models
 */
export interface BatchResult {
  readonly done: number
  readonly failure?: DirectoryError | undefined
}

/**
 * One rename of `Directory.Directories.renameAll`.
 *
 * @since 0.4.0
 * @category models
 */
export interface Move {
  readonly from: Handle
  readonly fromName: Uint8Array
  readonly to: Handle
  readonly toName: Uint8Array
}

/**
 * Options of `Directory.Directories.removeTree`.
 *
 * @since 0.4.0
 * @category models
 */
export interface RemoveTreeOptions {
  /** Log each removed path at debug as it goes (default false: counted, and reported up to the limits). */
  readonly events?: boolean | undefined
  readonly limits?: Limits | undefined
}

/**
 * Who the running process is, for ownership checks and for naming a lock's holder.
 *
 * @since 0.4.0
 * @category models
 */
export interface Credentials {
  /** The effective user id. */
  readonly uid: number
  /** The effective group id. */
  readonly gid: number
  /** The process id, as the host's process table shows it. */
  readonly pid: number
}

/**
 * The mount table of the calling process's namespace: what `MountInfo.read`
 * reads, and the table of a root, when none is named.
 *
 * @since 0.4.0
 * @category models
 */
export const DefaultMountInfo = "/proc/self/mountinfo"

/**
 * A mount to unmount, as the table listed it.
 *
 * @since 0.4.0
 * @category models
 */
export interface Target {
  /** Where the table shows it, as a full path of this process, below the root handle. */
  readonly path: string
  /** Its mount id (the table's first field): only that mount is unmounted. */
  readonly mountId: number
  /** Where the table shows it, as the table names it (what a command in the table's namespace is given). */
  readonly tablePath: string
}

/**
 * The outcome for one target:
 * - `Unmounted`;
 * - `Failed`: refused, in errno terms (`EBUSY`, `EINVAL` for "not a mount
 *   point", `ENOENT`, `EPERM`, ...), so the reason survives the trip through a
 *   command or an FFI call unchanged;
 * - `Unverified`, left mounted: `Moved` (the path now leads to another mount
 *   than the table listed), `LinkInPath` (a link, or something that is not a
 *   directory, where the table's path has a directory: not followed), `Gone`
 *   (the path no longer exists), `OutsideRoot` (not below the root handle);
 * - `Hung`: a call of its verification or its unmount did not return within
 *   its deadline (`call`, `seconds`); it is left as it is and never tried
 *   again in the same operation.
 *
 * @since 0.4.0
 * @category models
 */
export type UnmountResult =
  | { readonly _tag: "Unmounted"; readonly target: string }
  | {
      readonly _tag: "Failed"
      readonly target: string
      readonly failure: { readonly target: string; readonly errno: string; readonly message: string }
    }
  | {
      readonly _tag: "Unverified"
      readonly target: string
      readonly reason: "Moved" | "LinkInPath" | "Gone" | "OutsideRoot"
      readonly detail: string
    }
  | {
      readonly _tag: "Hung"
      readonly target: string
      readonly call: string
      readonly seconds: number
      readonly detail: string
    }
