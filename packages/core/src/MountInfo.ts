/**
 * The kernel's mount table, `/proc/<pid>/mountinfo`: one entry per mount, as
 * a Schema, and a consistent read through the FileSystem, parsed strictly
 * (proc(5); every escaped string field decoded, an escape standing for one
 * byte of the name; the parser itself is `Layers.parseMountInfo`).
 *
 * A table that does not parse is an error for the whole table: a half-read
 * table would make a mount invisible, and a directory with an invisible mount
 * below it is one `rm -rf` away from deleting a bind mount's source.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Schema } from "effect"
import * as FileName from "./FileName.ts"
import { parseMountInfo as parse } from "./internal/mountinfo/parse.ts"
import { MountInfoError, Problem } from "./MountInfoError.ts"
import { DefaultMountInfo } from "./Programs.ts"

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * One entry of a mountinfo table, with the kernel's escapes decoded. The
 * Schema is the domain of `Layers.renderMountInfo`: every entry it accepts renders to a
 * line that `Layers.parseMountInfo` reads back as the same entry (the fields the kernel
 * never writes empty are non-empty; numbers are non-negative safe integers).
 *
 * @since 0.1.0
 * @category models
 */
export const MountEntry = Schema.Struct({
  /** Unique id of the mount (may be reused after an unmount). */
  id: NonNegativeInt,
  /** Id of the parent mount (the mount's own id for the namespace root). */
  parentId: NonNegativeInt,
  major: NonNegativeInt,
  minor: NonNegativeInt,
  /** The directory of the file system that forms the root of this mount (a bind mount's source subtree). */
  root: Schema.NonEmptyString,
  /** Where the mount is, relative to the process's root. */
  mountPoint: Schema.NonEmptyString,
  /** Per-mount options, comma-separated as the kernel writes them. */
  mountOptions: Schema.NonEmptyString,
  /** Optional fields such as `shared:12`, `master:3`, `propagate_from:2`, `unbindable`. */
  optionalFields: Schema.Array(Schema.NonEmptyString),
  fsType: Schema.NonEmptyString,
  /** The mount source (`/dev/sda1`, `tmpfs`, `server:/export`); may be empty. */
  source: Schema.String,
  /** Per-superblock options (the file system's own text: a backslash in it that starts no escape is kept). */
  superOptions: Schema.String
})

/**
 * The type of {@link MountEntry}.
 *
 * @since 0.1.0
 * @category models
 */
export type MountEntry = typeof MountEntry.Type

/**
 * The errors of this module, defined in the leaf module `MountInfoError`.
 *
 * @since 0.4.0
 * @category errors
 */
export * from "./MountInfoError.ts"

const failure = (path: string, reason: MountInfoError["reason"]): MountInfoError => new MountInfoError({ reason, path })

// The table of the calling process's mount namespace.
const DefaultPath = DefaultMountInfo

// Where the running kernel says what it is.
const KernelReleasePath = "/proc/sys/kernel/osrelease"

// True when `release` (as `uname -r` prints it) is Linux 5.8 or later: its
// mount table reads resume each chunk after the last mount shown (a cursor
// in the namespace's list, from 6.8 the next mount id), so a table that
// changes while it is read is never torn: every mount that stays is listed
// exactly once, whatever came or went meanwhile. Before 5.8 a read resumed
// at an index, and a mount that went between two chunks could hide another.
const readsAreConsistent = (release: string): boolean => {
  const m = /^(\d+)\.(\d+)/.exec(release.trim())
  if (m === null) return false
  const major = Number(m[1])
  const minor = Number(m[2])
  return major > 5 || (major === 5 && minor >= 8)
}

// Per FileSystem (the real one, a simulated one): whether its kernel's reads are consistent, read once.
const consistency = new WeakMap<FileSystem.FileSystem, boolean>()

const consistentOn = (fs: FileSystem.FileSystem): Effect.Effect<boolean> => {
  const known = consistency.get(fs)
  if (known !== undefined) return Effect.succeed(known)
  return fs.readFileString(KernelReleasePath).pipe(
    Effect.map(readsAreConsistent),
    // No such file (not Linux, a simulated host without one): the careful way.
    Effect.orElseSucceed(() => false),
    Effect.tap((c) => Effect.sync(() => consistency.set(fs, c)))
  )
}

/**
 * Reads and parses the table at `path` (default `/proc/self/mountinfo`, the calling process's) through
 * the FileSystem. Once, where the kernel's reads are consistent (Linux 5.8
 * and later, as `/proc/sys/kernel/osrelease` says: from 5.8 the kernel
 * resumes each chunk of a read after the last mount it showed, so a table
 * that changes meanwhile is never torn; every mount that stays is listed
 * exactly once): a table of 10,000 stacked mounts takes the
 * kernel half a second to write, so a second read doubles the cost of every
 * pass of an unmount. Elsewhere a table that changes while the kernel writes
 * it can come back torn (entries missing or doubled across read chunks), so
 * it is read until two consecutive reads agree; after `attempts` reads the
 * last one is used and a warning is logged.
 *
 * @example
 * ```ts
 * import { MountInfo } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The tmpfs mounts of this process's namespace (a pod's secrets, among others).
 * const tmpfs = MountInfo.read().pipe(Effect.map((table) => table.filter((e) => e.fsType === "tmpfs")))
 * ```
 *
 * @since 0.1.0
 * @category operations
 */
export const read = Effect.fn("MountInfo.read")(function* (
  given: string = DefaultPath,
  options?: {
    /**
     * How many reads to make at most (default: 1 where one read is consistent,
     * see {@link read}; else 3). Above 1 the table is read until two
     * consecutive reads agree, and after this many the last one is used.
     */
    readonly attempts?: number | undefined
  }
) {
  const fs = yield* FileSystem.FileSystem
  // The Go contract: an empty mountInfo means the process's own table.
  const path = given === "" ? DefaultPath : given
  const attempts = Math.max(1, options?.attempts ?? ((yield* consistentOn(fs)) ? 1 : 3))
  const readOnce = fs
    .readFile(path)
    // Mount points are bytes: decoded losslessly (FileName), so a name that is
    // not UTF-8 still names the directory it is.
    .pipe(Effect.map(FileName.decode))
    .pipe(Effect.mapError((e) => failure(path, new Problem({ _tag: "Unreadable", detail: e.message }))))
  let previous = yield* readOnce
  if (attempts === 1) return yield* parse(previous, path)
  for (let i = 1; i < attempts; i++) {
    const next = yield* readOnce
    if (next === previous) return yield* parse(next, path)
    previous = next
  }
  yield* Effect.logWarning("mount table changed on every read; using the last one").pipe(
    Effect.annotateLogs({ mountInfo: path, attempts })
  )
  return yield* parse(previous, path)
})
