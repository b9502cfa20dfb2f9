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
 * fields.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Schema } from "effect"

/** One entry of a mountinfo table, with the kernel's escapes decoded. */
export const MountEntry = Schema.Struct({
  /** Unique id of the mount (may be reused after an unmount). */
  id: Schema.Int,
  /** Id of the parent mount (the mount's own id for the namespace root). */
  parentId: Schema.Int,
  major: Schema.Int,
  minor: Schema.Int,
  /** The directory of the file system that forms the root of this mount (a bind mount's source subtree). */
  root: Schema.String,
  /** Where the mount is, relative to the process's root. */
  mountPoint: Schema.String,
  /** Per-mount options, comma-separated as the kernel writes them. */
  mountOptions: Schema.String,
  /** Optional fields such as `shared:12`, `master:3`, `propagate_from:2`, `unbindable`. */
  optionalFields: Schema.Array(Schema.String),
  fsType: Schema.String,
  /** The mount source (`/dev/sda1`, `tmpfs`, `server:/export`); may be empty. */
  source: Schema.String,
  /** Per-superblock options. */
  superOptions: Schema.String
})

/** One entry of a mountinfo table. */
export type MountEntry = typeof MountEntry.Type

/** A whole table, in the kernel's order (parents before children, older before newer). */
export type MountTable = ReadonlyArray<MountEntry>

/** Why a mount table could not be used. */
export const MountInfoErrorReason = Schema.Literals(["Malformed", "Unreadable"])

/** Why a mount table could not be used. */
export type MountInfoErrorReason = typeof MountInfoErrorReason.Type

/**
 * A mount table that could not be read or parsed. `line` is 1-based (0 when
 * the whole table is unreadable); `detail` says what was wrong with it. Nothing
 * of such a table is used.
 */
export class MountInfoError extends Schema.TaggedError<MountInfoError>()("MountInfoError", {
  reason: MountInfoErrorReason,
  path: Schema.String,
  line: Schema.Int,
  detail: Schema.String
}) {
  override get message(): string {
    return this.reason === "Unreadable"
      ? `cannot read mount table ${this.path}: ${this.detail}`
      : `malformed mount table ${this.path}, line ${this.line}: ${this.detail}`
  }
}

/** The table of the calling process's mount namespace. */
export const DefaultPath = "/proc/self/mountinfo"

const octal = (c: number): boolean => c >= 48 && c <= 55

/**
 * Decodes the kernel's `\ooo` escapes. Returns `undefined` for a backslash that
 * does not start a three-digit octal escape: the kernel escapes every backslash
 * it writes, so a bare one means the text is not a mountinfo table.
 */
export const unescapeField = (s: string): string | undefined => {
  if (s.indexOf("\\") === -1) return s
  let out = ""
  let from = 0
  for (let i = s.indexOf("\\"); i !== -1; i = s.indexOf("\\", from)) {
    if (i + 3 >= s.length) return undefined
    const a = s.charCodeAt(i + 1)
    const b = s.charCodeAt(i + 2)
    const c = s.charCodeAt(i + 3)
    if (!(octal(a) && octal(b) && octal(c))) return undefined
    out += s.slice(from, i) + String.fromCharCode((a - 48) * 64 + (b - 48) * 8 + (c - 48))
    from = i + 4
  }
  return out + s.slice(from)
}

const needsEscape = /[ \t\n\\]/g
const escapes: Readonly<Record<string, string>> = { " ": "\\040", "\t": "\\011", "\n": "\\012", "\\": "\\134" }

/** Escapes a string field as the kernel does (space, tab, newline, backslash). */
export const escapeField = (s: string): string => s.replace(needsEscape, (ch) => escapes[ch] ?? ch)

const decimal = /^(0|[1-9][0-9]*)$/

type ParsedLine = MountEntry | string

// Parses one line; a string result is what is wrong with it. Written with plain
// string operations rather than a Schema decode: tables reach tens of thousands
// of lines (stacked tmpfs mounts) and this runs on every pass of an unmount.
const parseLine = (line: string): ParsedLine => {
  const f = line.split(" ")
  const sep = f.indexOf("-", 6)
  if (f.length < 10) return `has ${f.length} fields, a mountinfo line has at least 10`
  if (sep === -1) return "has no '-' separator after the optional fields"
  if (f.length - sep !== 4)
    return `has ${f.length - sep - 1} fields after '-', expected 3 (fs type, source, super options)`
  const [id, parent, devno, root, mountPoint, mountOptions] = f as [string, string, string, string, string, string]
  if (!decimal.test(id)) return `mount id ${JSON.stringify(id)} is not a number`
  if (!decimal.test(parent)) return `parent id ${JSON.stringify(parent)} is not a number`
  const colon = devno.indexOf(":")
  const major = devno.slice(0, colon)
  const minor = devno.slice(colon + 1)
  if (colon === -1 || !decimal.test(major) || !decimal.test(minor)) {
    return `device ${JSON.stringify(devno)} is not major:minor`
  }
  const optionalFields = f.slice(6, sep)
  for (const o of optionalFields) if (o === "") return "has an empty optional field"
  const rootD = unescapeField(root)
  const mountPointD = unescapeField(mountPoint)
  const fsType = unescapeField(f[sep + 1] as string)
  const source = unescapeField(f[sep + 2] as string)
  const superOptions = unescapeField(f[sep + 3] as string)
  if (rootD === undefined) return `root ${JSON.stringify(root)} has an invalid escape`
  if (mountPointD === undefined) return `mount point ${JSON.stringify(mountPoint)} has an invalid escape`
  if (fsType === undefined || source === undefined || superOptions === undefined) {
    return "an invalid escape after '-'"
  }
  if (rootD === "") return "root is empty"
  if (mountPointD === "") return "mount point is empty"
  if (mountOptions === "") return "mount options are empty"
  if (fsType === "") return "fs type is empty"
  return {
    id: Number(id),
    parentId: Number(parent),
    major: Number(major),
    minor: Number(minor),
    root: rootD,
    mountPoint: mountPointD,
    mountOptions,
    optionalFields,
    fsType,
    source,
    superOptions
  }
}

/**
 * Parses a whole table. Blank lines are skipped (a table ends with a newline).
 * The first malformed line fails the whole parse with its line number: no
 * entry of a table that is partly garbage is trusted.
 */
export const parse = (text: string, path: string = DefaultPath): Effect.Effect<MountTable, MountInfoError> =>
  Effect.suspend(() => {
    const out: Array<MountEntry> = []
    const lines = text.split("\n")
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as string
      if (line === "") continue
      const r = parseLine(line)
      if (typeof r === "string") {
        return Effect.fail(new MountInfoError({ reason: "Malformed", path, line: i + 1, detail: r }))
      }
      out.push(r)
    }
    return Effect.succeed(out)
  })

/** Writes `entries` back in the kernel's format, one line each, newline-terminated; `parse(render(t))` is `t`. */
export const render = (entries: MountTable): string => {
  let out = ""
  for (const e of entries) {
    const optional = e.optionalFields.length === 0 ? "" : ` ${e.optionalFields.join(" ")}`
    out += `${e.id} ${e.parentId} ${e.major}:${e.minor} ${escapeField(e.root)} ${escapeField(e.mountPoint)} ${e.mountOptions}${optional} - ${escapeField(e.fsType)} ${escapeField(e.source)} ${escapeField(e.superOptions)}\n`
  }
  return out
}

/** Options of {@link read}. */
export interface ReadOptions {
  /** How many reads to try for two that agree (default 3). */
  readonly attempts?: number | undefined
}

/**
 * Reads and parses the table at `path` (default {@link DefaultPath}) through
 * the FileSystem. A table that changes while the kernel writes it can come back
 * inconsistent (entries missing or doubled across read chunks), so it is read
 * until two consecutive reads agree; after `attempts` reads the last one is used
 * and a warning is logged.
 */
export const read = Effect.fn("MountInfo.read")(function* (path: string = DefaultPath, options?: ReadOptions) {
  const fs = yield* FileSystem.FileSystem
  const attempts = Math.max(2, options?.attempts ?? 3)
  const readOnce = fs
    .readFileString(path)
    .pipe(Effect.mapError((e) => new MountInfoError({ reason: "Unreadable", path, line: 0, detail: e.message })))
  let previous = yield* readOnce
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
