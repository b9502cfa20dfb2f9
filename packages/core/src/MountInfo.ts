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
import * as FileName from "./FileName.ts"

/**
 * One entry of a mountinfo table, with the kernel's escapes decoded.
 *
 * @since 0.1.0
 */
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
 * Why a mount table could not be used.
 *
 * @since 0.1.0
 */
export const MountInfoErrorReason = Schema.Literals(["Malformed", "Unreadable", "DoesNotCover"])

/**
 * Why a mount table could not be used.
 *
 * @since 0.1.0
 */
export type MountInfoErrorReason = typeof MountInfoErrorReason.Type

/**
 * A mount table that could not be read or parsed, or that does not list the
 * mount the host root is on (`DoesNotCover`: an empty table, or one read in
 * another mount namespace). `line` is 1-based (0 when the whole table is
 * concerned); `detail` says what was wrong with it. Nothing of such a table
 * is used.
 *
 * @since 0.1.0
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
      : this.reason === "DoesNotCover"
        ? `mount table ${this.path} does not describe the host root: ${this.detail}`
        : `malformed mount table ${this.path}, line ${this.line}: ${this.detail}`
  }
}

/**
 * The table of the calling process's mount namespace.
 *
 * @since 0.1.0
 */
export const DefaultPath = "/proc/self/mountinfo"

const octal = (c: number): boolean => c >= 48 && c <= 55

/**
 * Decodes the kernel's `\ooo` escapes. Returns `undefined` for a backslash that
 * does not start a three-digit octal escape: the kernel escapes every backslash
 * it writes, so a bare one means the text is not a mountinfo table.
 *
 * @since 0.1.0
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

/**
 * Escapes a string field as the kernel does (space, tab, newline, backslash).
 *
 * @since 0.1.0
 */
export const escapeField = (s: string): string => s.replace(needsEscape, (ch) => escapes[ch] ?? ch)

const noOptionalFields: ReadonlyArray<string> = Object.freeze([])

// A decimal field of `text` in [from, to): its value, or -1 when it is empty,
// has a leading zero, or holds anything but digits.
const decimalAt = (text: string, from: number, to: number): number => {
  if (to <= from || to - from > 15) return -1
  if (text.charCodeAt(from) === 48 && to - from > 1) return -1
  let n = 0
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i) - 48
    if (c < 0 || c > 9) return -1
    n = n * 10 + c
  }
  return n
}

// The end of the field starting at `from` on the line ending at `eol`.
const fieldEnd = (text: string, from: number, eol: number): number => {
  const sp = text.indexOf(" ", from)
  return sp === -1 || sp > eol ? eol : sp
}

// Field values repeat from line to line (`/`, `rw,relatime`, `tmpfs`, the
// same super options on every stacked mount); reusing the previous line's
// string when the text matches saves an allocation per field on big tables.
interface Previous {
  root: string
  mountOptions: string
  fsType: string
  source: string
  superOptions: string
}

const sliceOr = (text: string, from: number, to: number, previous: string): string =>
  to - from === previous.length && text.startsWith(previous, from) ? previous : text.slice(from, to)

const quoted = (text: string, from: number, to: number): string => JSON.stringify(text.slice(from, to))

// Parses the line text[start, eol) into an entry, or returns what is wrong
// with it. Tables reach tens of thousands of lines (stacked tmpfs mounts) and
// are re-read on every unmount pass, so this scans the text in place with
// indexOf and slices each field once, with no split, regular expression or
// intermediate array; `escaped` says whether the line holds a backslash at
// all, so most lines never look for escapes.
const parseLine = (text: string, start: number, eol: number, escaped: boolean, prev: Previous): MountEntry | string => {
  const f = (s: string): string | undefined => (escaped ? unescapeField(s) : s)
  let from = start
  let end = fieldEnd(text, from, eol)
  const id = decimalAt(text, from, end)
  if (end === eol) return "has 1 fields, a mountinfo line has at least 10"
  if (id < 0) return `mount id ${quoted(text, from, end)} is not a number`
  from = end + 1
  end = fieldEnd(text, from, eol)
  const parentId = decimalAt(text, from, end)
  if (end === eol) return "has 2 fields, a mountinfo line has at least 10"
  if (parentId < 0) return `parent id ${quoted(text, from, end)} is not a number`
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return "has 3 fields, a mountinfo line has at least 10"
  const colon = text.indexOf(":", from)
  const major = colon === -1 || colon > end ? -1 : decimalAt(text, from, colon)
  const minor = major < 0 ? -1 : decimalAt(text, colon + 1, end)
  if (minor < 0) return `device ${quoted(text, from, end)} is not major:minor`
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return "has 4 fields, a mountinfo line has at least 10"
  const root = f(sliceOr(text, from, end, prev.root))
  if (root === undefined) return `root ${quoted(text, from, end)} has an invalid escape`
  if (root === "") return "root is empty"
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return "has 5 fields, a mountinfo line has at least 10"
  const mountPoint = f(text.slice(from, end))
  if (mountPoint === undefined) return `mount point ${quoted(text, from, end)} has an invalid escape`
  if (mountPoint === "") return "mount point is empty"
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return "has 6 fields, a mountinfo line has at least 10"
  if (end === from) return "mount options are empty"
  const mountOptions = sliceOr(text, from, end, prev.mountOptions)
  from = end + 1
  // optional fields up to the "-" separator
  let optionalFields = noOptionalFields
  for (;;) {
    if (from > eol) return "has no '-' separator after the optional fields"
    end = fieldEnd(text, from, eol)
    if (end === from + 1 && text.charCodeAt(from) === 45) break
    if (end === from) return "has an empty optional field"
    if (optionalFields === noOptionalFields) optionalFields = []
    ;(optionalFields as Array<string>).push(text.slice(from, end))
    from = end + 1
  }
  // fs type, source, super options: exactly three fields
  const a = end + 1
  const aEnd = a > eol ? a : fieldEnd(text, a, eol)
  const b = aEnd + 1
  const bEnd = b > eol ? b : fieldEnd(text, b, eol)
  const c = bEnd + 1
  const cEnd = c > eol ? c : fieldEnd(text, c, eol)
  if (a > eol || b > eol || c > eol || cEnd !== eol) {
    let n = 0
    for (let i = end; i < eol; i++) if (text.charCodeAt(i) === 32) n++
    return `has ${n} fields after '-', expected 3 (fs type, source, super options)`
  }
  const fsType = f(sliceOr(text, a, aEnd, prev.fsType))
  const source = f(sliceOr(text, b, bEnd, prev.source))
  const superOptions = f(sliceOr(text, c, cEnd, prev.superOptions))
  if (fsType === undefined || source === undefined || superOptions === undefined) {
    return "an invalid escape after '-'"
  }
  if (fsType === "") return "fs type is empty"
  if (!escaped) {
    prev.root = root
    prev.mountOptions = mountOptions
    prev.fsType = fsType
    prev.source = source
    prev.superOptions = superOptions
  }
  return { id, parentId, major, minor, root, mountPoint, mountOptions, optionalFields, fsType, source, superOptions }
}

/**
 * Parses a whole table. Blank lines are skipped (a table ends with a newline).
 * The first malformed line fails the whole parse with its line number: no
 * entry of a table that is partly garbage is trusted.
 *
 * @since 0.1.0
 */
export const parse = (text: string, path: string = DefaultPath): Effect.Effect<MountTable, MountInfoError> =>
  Effect.suspend(() => {
    const out: Array<MountEntry> = []
    let lineNo = 0
    let backslash = text.indexOf("\\")
    const prev: Previous = { root: "", mountOptions: "", fsType: "", source: "", superOptions: "" }
    for (let from = 0; from < text.length; ) {
      lineNo++
      let eol = text.indexOf("\n", from)
      if (eol === -1) eol = text.length
      if (eol > from) {
        if (backslash !== -1 && backslash < from) backslash = text.indexOf("\\", from)
        const r = parseLine(text, from, eol, backslash !== -1 && backslash < eol, prev)
        if (typeof r === "string") {
          return Effect.fail(new MountInfoError({ reason: "Malformed", path, line: lineNo, detail: r }))
        }
        out.push(r)
      }
      from = eol + 1
    }
    return Effect.succeed(out)
  })

/**
 * Writes `entries` back in the kernel's format, one line each, newline-terminated; `parse(render(t))` is `t`.
 *
 * @since 0.1.0
 */
export const render = (entries: MountTable): string => {
  let out = ""
  for (const e of entries) {
    const optional = e.optionalFields.length === 0 ? "" : ` ${e.optionalFields.join(" ")}`
    out += `${e.id} ${e.parentId} ${e.major}:${e.minor} ${escapeField(e.root)} ${escapeField(e.mountPoint)} ${e.mountOptions}${optional} - ${escapeField(e.fsType)} ${escapeField(e.source)} ${escapeField(e.superOptions)}\n`
  }
  return out
}

/**
 * Options of {@link read}.
 *
 * @since 0.1.0
 */
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
 *
 * @since 0.1.0
 */
export const read = Effect.fn("MountInfo.read")(function* (given: string = DefaultPath, options?: ReadOptions) {
  const fs = yield* FileSystem.FileSystem
  // The Go contract: an empty mountInfo means the process's own table.
  const path = given === "" ? DefaultPath : given
  const attempts = Math.max(2, options?.attempts ?? 3)
  const readOnce = fs
    .readFile(path)
    // Mount points are bytes: decoded losslessly (FileName), so a name that is
    // not UTF-8 still names the directory it is.
    .pipe(Effect.map(FileName.decode))
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
