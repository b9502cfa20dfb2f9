/**
 * The kernel's mount table, `/proc/<pid>/mountinfo`: one entry per mount, as a
 * Schema, with a strict parser, the inverse renderer, and a consistent read
 * through the FileSystem. Everything that decides what to unmount starts here,
 * so a table that does not parse is an error for the whole table: a half-read
 * table would make a mount invisible, and a directory with an invisible mount
 * below it is one `rm -rf` away from deleting a bind mount's source.
 *
 * Format (proc(5)):
 * `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`
 * mount id, parent id, major:minor, root, mount point, mount options, zero or
 * more optional fields, `-`, fs type, source, super options. The kernel escapes
 * space, tab, newline and backslash as `\040 \011 \012 \134` in the string
 * fields (newer kernels `#` as `\043` too); every string field is decoded here,
 * and an escape stands for one byte of the name (`\303\251` is `é`).
 *
 * @since 0.1.0
 */

import { Effect, FileSystem, Schema } from "effect"
import * as FileName from "./FileName.ts"
import { decodeEscapes } from "./internal/mountinfo/escape.ts"
import { propagated, subtrees } from "./internal/mountinfo/propagation.ts"
import { scan } from "./internal/mountinfo/table.ts"

// Ids and device numbers: what the kernel prints with %d/%u, as far as a
// JavaScript number holds them exactly.
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * One entry of a mountinfo table, with the kernel's escapes decoded. The
 * Schema is the domain of {@link render}: every entry it accepts renders to a
 * line that {@link parse} reads back as the same entry (the fields the kernel
 * never writes empty are non-empty; numbers are non-negative safe integers).
 *
 * @since 0.1.0
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
 * One entry of a mountinfo table.
 *
 * @since 0.1.0
 */
export type MountEntry = typeof MountEntry.Type

/**
 * A whole table, in the kernel's order (parents before children, older before newer).
 *
 * @since 0.1.0
 */
export type MountTable = ReadonlyArray<MountEntry>

/**
 * Why: a line of the table is not a mountinfo line. `line` is 1-based;
 * `field` names the field that was wrong (`mount id`, `device`, `root`,
 * `optional field`, `separator`, ...) and `value`, when the line has that
 * field, holds its text as the table has it (clipped to 256 characters, so a
 * huge line does not make a huge error); `detail` says what was wrong.
 *
 * @since 0.3.0
 */
export class Malformed extends Schema.TaggedError<Malformed>()("Malformed", {
  line: Schema.Int,
  field: Schema.String,
  value: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return `line ${this.line}: ${this.detail}`
  }
}

/**
 * Why: the table could not be read; `detail` says what the file system said.
 *
 * @since 0.3.0
 */
export class Unreadable extends Schema.TaggedError<Unreadable>()("Unreadable", {
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why: the table does not list the mount the host root is on (an empty
 * table, or one read in another mount namespace); `detail` says which mount.
 *
 * @since 0.3.0
 */
export class DoesNotCover extends Schema.TaggedError<DoesNotCover>()("DoesNotCover", {
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why a mount table could not be used: one of {@link Malformed},
 * {@link Unreadable}, {@link DoesNotCover} (the tags were this literal's
 * values before 0.3.0).
 *
 * @since 0.1.0
 */
export const MountInfoErrorReason = Schema.Union([Malformed, Unreadable, DoesNotCover])

/**
 * Why a mount table could not be used.
 *
 * @since 0.1.0
 */
export type MountInfoErrorReason = typeof MountInfoErrorReason.Type

/**
 * A mount table at `path` that could not be read or parsed, or that does not
 * list the mount the host root is on. `reason` says which, with the facts of
 * that case (the line, field and text of a malformed line; since 0.3.0 they
 * are fields of the {@link Malformed} reason, not of the error). Nothing of
 * such a table is used.
 *
 * @since 0.1.0
 */
export class MountInfoError extends Schema.TaggedError<MountInfoError>()("MountInfoError", {
  reason: MountInfoErrorReason,
  path: Schema.String
}) {
  override get message(): string {
    const r = this.reason
    return r._tag === "Unreadable"
      ? `cannot read mount table ${this.path}: ${r.message}`
      : r._tag === "DoesNotCover"
        ? `mount table ${this.path} does not describe the host root: ${r.message}`
        : `malformed mount table ${this.path}, ${r.message}`
  }
}

const failure = (path: string, reason: MountInfoErrorReason): MountInfoError => new MountInfoError({ reason, path })

/**
 * The table of the calling process's mount namespace.
 *
 * @since 0.1.0
 */
export const DefaultPath = "/proc/self/mountinfo"

/**
 * Decodes the kernel's `\ooo` escapes. Returns `undefined` for a backslash that
 * does not start a three-digit octal escape of a byte (`\000` to `\377`): the
 * kernel escapes every backslash it writes in the fields it escapes, so a bare
 * one means the text is not a mountinfo table. An escape stands for one byte of
 * the name, so escapes of bytes >= 0x80 decode as {@link FileName.decode}
 * decodes the bytes.
 *
 * @since 0.1.0
 */
export const unescapeField = (s: string): string | undefined => decodeEscapes(s, false)

const needsEscape = /[ \t\n\r\\]/g
const escapes: Readonly<Record<string, string>> = {
  " ": "\\040",
  "\t": "\\011",
  "\n": "\\012",
  "\r": "\\015",
  "\\": "\\134"
}

/**
 * Escapes a string field as the kernel does (space, tab, newline, backslash),
 * and a carriage return too (`\015`), so that a CR at the end of the last
 * field is not taken for part of a CRLF line end.
 *
 * @since 0.1.0
 */
export const escapeField = (s: string): string => s.replace(needsEscape, (ch) => escapes[ch] ?? ch)

/**
 * Parses a whole table. Blank lines are skipped (a table ends with a newline,
 * or not). A carriage return just before a newline, or at the very end, is a
 * CRLF line end (a table saved on another system), not part of the super
 * options; {@link render} escapes a CR of a field, so none is lost. Every
 * string field is decoded ({@link unescapeField}); a backslash that starts no
 * escape fails the line, except in the super options, which file systems
 * write themselves and not always escaped (kept as a backslash there). Ids and
 * device numbers are decimal as the kernel writes them (no sign, no leading
 * zero) up to `Number.MAX_SAFE_INTEGER`. The first malformed line fails the
 * whole parse with its line number, the field and its text: no entry of a
 * table that is partly garbage is trusted.
 *
 * Since 0.4.0 the whole text is checked in one scan that keeps only where each
 * line's fields are, and an entry is built when it is first read (then kept):
 * a table of 300,000 mounts takes a fraction of the time and memory it did,
 * and a reader that wants a few entries pays for those. The table is an
 * array (`Array.isArray` holds; iteration, array methods and JSON work) whose
 * entries are plain objects as before; it keeps the text alive while it is.
 *
 * @since 0.1.0
 */
export const parse: (text: string, path?: string) => Effect.Effect<MountTable, MountInfoError> = Effect.fn(
  "MountInfo.parse"
)(function* (text: string, path: string = DefaultPath) {
  const scanned = scan(text)
  if ("table" in scanned) return scanned.table
  const { line, field, value, detail } = scanned.problem
  return yield* failure(path, new Malformed({ line, field, ...(value === undefined ? {} : { value }), detail }))
})

// An optional field that is "-" would read as the separator.
const escapeOptional = (s: string): string => (s === "-" ? "\\055" : escapeField(s))

/**
 * Writes `entries` back in the kernel's format, one line each,
 * newline-terminated, every string field escaped (an optional field that is
 * `-` as `\055`); `parse(render(t))` is `t` for every table of entries the
 * {@link MountEntry} Schema accepts.
 *
 * @since 0.1.0
 */
export const render = (entries: MountTable): string => {
  let out = ""
  for (const e of entries) {
    let optional = ""
    for (const o of e.optionalFields) optional += ` ${escapeOptional(o)}`
    out += `${e.id} ${e.parentId} ${e.major}:${e.minor} ${escapeField(e.root)} ${escapeField(e.mountPoint)} ${escapeField(e.mountOptions)}${optional} - ${escapeField(e.fsType)} ${escapeField(e.source)} ${escapeField(e.superOptions)}\n`
  }
  return out
}

/**
 * Options of {@link read}.
 *
 * @since 0.1.0
 */
export interface ReadOptions {
  /**
   * How many reads to make at most (default: 1 where one read is consistent,
   * see {@link read}; else 3). Above 1 the table is read until two
   * consecutive reads agree, and after this many the last one is used.
   */
  readonly attempts?: number | undefined
}

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
 * Reads and parses the table at `path` (default {@link DefaultPath}) through
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
 * @since 0.1.0
 */
export const read = Effect.fn("MountInfo.read")(function* (given: string = DefaultPath, options?: ReadOptions) {
  const fs = yield* FileSystem.FileSystem
  // The Go contract: an empty mountInfo means the process's own table.
  const path = given === "" ? DefaultPath : given
  const attempts = Math.max(1, options?.attempts ?? ((yield* consistentOn(fs)) ? 1 : 3))
  const readOnce = fs
    .readFile(path)
    // Mount points are bytes: decoded losslessly (FileName), so a name that is
    // not UTF-8 still names the directory it is.
    .pipe(Effect.map(FileName.decode))
    .pipe(Effect.mapError((e) => failure(path, new Unreadable({ detail: e.message }))))
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

/**
 * A mount the kernel detaches by propagation (see {@link propagatedUnmounts}),
 * and the detached mount it is a copy of.
 *
 * @since 0.4.0
 */
export interface PropagatedUnmount {
  readonly entry: MountEntry
  /** The id of the mount taken out whose detach propagated here (its cognate: the same place of the same file system). */
  readonly cognateOf: number
}

/**
 * The mounts of `table` the kernel detaches along with a lazy detach of each
 * of `targets` (mount ids; each goes with every mount below it), by umount
 * propagation, in table order. A mount on a shared mount (`shared:N`) has
 * copies on that mount's peers and slaves (`master:N`, recursively) wherever
 * they are in the namespace, another view of a data disk outside the host
 * root included; detaching it detaches each copy too, unless something not
 * detached is mounted inside the copy (a mount stacked on the copy's root
 * stays, moved onto the copy's place). This is how a dry run predicts them
 * and how an unmount names what left the table this way; the rule was
 * checked against Linux 6.x by the differential tests.
 *
 * @since 0.4.0
 */
export const propagatedUnmounts = (table: MountTable, targets: Iterable<number>): ReadonlyArray<PropagatedUnmount> => {
  const taken = propagated(table, subtrees(table, targets))
  const out: Array<PropagatedUnmount> = []
  for (const entry of table) {
    const of = taken.get(entry.id)
    if (of !== undefined) out.push({ entry, cognateOf: of })
  }
  return out
}
