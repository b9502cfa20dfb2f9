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

const octal = (c: number): boolean => c >= 48 && c <= 55

// Whether s[i] (a backslash) starts an escape of a byte, `\000` to `\377`.
const escapeAt = (s: string, i: number): boolean => {
  if (i + 3 >= s.length) return false
  const a = s.charCodeAt(i + 1)
  return a >= 48 && a <= 51 && octal(s.charCodeAt(i + 2)) && octal(s.charCodeAt(i + 3))
}

const escapedByte = (s: string, i: number): number =>
  (s.charCodeAt(i + 1) - 48) * 64 + (s.charCodeAt(i + 2) - 48) * 8 + (s.charCodeAt(i + 3) - 48)

// `s` decoded through bytes: its literal parts as the bytes FileName gives
// them back (the table's text came from FileName.decode), each escape as the
// byte it stands for, and the whole decoded losslessly again. The road for
// escapes of bytes >= 0x80 only: `\351` is the byte 0xE9 (U+DCE9 alone, as
// FileName has it), `\303\251` is `é`, never the characters U+00C3 U+00A9.
const unescapeBytes = (s: string): string => {
  const bytes: Array<number> = []
  let from = 0
  for (let i = s.indexOf("\\"); i !== -1; i = s.indexOf("\\", i + 1)) {
    if (!escapeAt(s, i)) continue
    for (const b of FileName.encode(s.slice(from, i))) bytes.push(b)
    bytes.push(escapedByte(s, i))
    from = i + 4
    i += 3
  }
  for (const b of FileName.encode(s.slice(from))) bytes.push(b)
  return FileName.decode(Uint8Array.from(bytes))
}

// Decodes the escapes of `s`; a backslash that starts none is `undefined`, or,
// when `lenient`, a backslash of the text.
const decodeEscapes = (s: string, lenient: boolean): string | undefined => {
  if (s.indexOf("\\") === -1) return s
  let out = ""
  let from = 0
  let high = false
  for (let i = s.indexOf("\\"); i !== -1; i = s.indexOf("\\", i + 1)) {
    if (!escapeAt(s, i)) {
      if (lenient) continue
      return undefined
    }
    const byte = escapedByte(s, i)
    if (byte >= 0x80) high = true
    out += s.slice(from, i) + String.fromCharCode(byte)
    from = i + 4
    i += 3
  }
  return high ? unescapeBytes(s) : out + s.slice(from)
}

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

const noOptionalFields: ReadonlyArray<string> = Object.freeze([])

// What decimalAt says of a field that is not a number it returns.
const NotANumber = -1
const LeadingZero = -2
const TooLarge = -3

// A decimal field of `text` in [from, to): its value, or NotANumber when it is
// empty or holds anything but digits, LeadingZero when it has one (the kernel
// writes none), TooLarge beyond Number.MAX_SAFE_INTEGER (where a number no
// longer holds every integer, so two mount ids could compare equal).
const decimalAt = (text: string, from: number, to: number): number => {
  if (to <= from) return NotANumber
  let n = 0
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i) - 48
    if (c < 0 || c > 9) return NotANumber
    n = n * 10 + c
  }
  if (text.charCodeAt(from) === 48 && to - from > 1) return LeadingZero
  // rounding is monotonic: a value beyond the limit never computes below it
  return n > Number.MAX_SAFE_INTEGER ? TooLarge : n
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

// What is wrong with a line: the message, the field, and the field's text.
interface Problem {
  readonly detail: string
  readonly field: string
  readonly value: string | undefined
}

const clipAt = 256

const clip = (text: string, from: number, to: number): string => text.slice(from, Math.min(to, from + clipAt))

const quoted = (text: string, from: number, to: number): string =>
  to - from > clipAt
    ? `${JSON.stringify(clip(text, from, to))}... (${to - from} characters)`
    : JSON.stringify(text.slice(from, to))

const problem = (field: string, detail: string, text: string, from: number, to: number): Problem => ({
  detail,
  field,
  value: clip(text, from, to)
})

// The fields before the optional ones, and then the separator: what is
// missing from a line that ends after n fields is fieldNames[n].
const fieldNames = ["mount id", "parent id", "device", "root", "mount point", "mount options", "separator"] as const

const tooFew = (n: number): Problem => ({
  detail: `has ${n} field${n === 1 ? "" : "s"}, a mountinfo line has at least 10 (no ${fieldNames[n]} and what follows)`,
  field: fieldNames[n] ?? "separator",
  value: undefined
})

const notNumber = (field: string, code: number, text: string, from: number, to: number): Problem =>
  problem(
    field,
    code === LeadingZero
      ? `${field} ${quoted(text, from, to)} has a leading zero, which the kernel never writes`
      : code === TooLarge
        ? `${field} ${quoted(text, from, to)} is beyond ${Number.MAX_SAFE_INTEGER}, the largest integer a number holds exactly`
        : `${field} ${quoted(text, from, to)} is not a number`,
    text,
    from,
    to
  )

const badEscape = (field: string, text: string, from: number, to: number): Problem =>
  problem(
    field,
    `${field} ${quoted(text, from, to)} has an invalid escape (a backslash not starting \\000 to \\377)`,
    text,
    from,
    to
  )

const afterSeparator = ["fs type", "source", "super options"] as const

// Parses the line text[start, eol) into an entry, or returns what is wrong
// with it. Tables reach tens of thousands of lines (stacked tmpfs mounts) and
// are re-read on every unmount pass, so this scans the text in place with
// indexOf and slices each field once, with no split, regular expression or
// intermediate array; `escaped` says whether the line holds a backslash at
// all, so most lines never look for escapes.
const parseLine = (
  text: string,
  start: number,
  eol: number,
  escaped: boolean,
  prev: Previous
): MountEntry | Problem => {
  const f = (s: string): string | undefined => (escaped ? unescapeField(s) : s)
  let from = start
  let end = fieldEnd(text, from, eol)
  const id = decimalAt(text, from, end)
  if (end === eol) return tooFew(1)
  if (id < 0) return notNumber("mount id", id, text, from, end)
  from = end + 1
  end = fieldEnd(text, from, eol)
  const parentId = decimalAt(text, from, end)
  if (end === eol) return tooFew(2)
  if (parentId < 0) return notNumber("parent id", parentId, text, from, end)
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(3)
  const colon = text.indexOf(":", from)
  if (colon === -1 || colon > end) {
    return problem("device", `device ${quoted(text, from, end)} is not major:minor`, text, from, end)
  }
  const major = decimalAt(text, from, colon)
  const minor = decimalAt(text, colon + 1, end)
  if (major === NotANumber || minor === NotANumber) {
    return problem("device", `device ${quoted(text, from, end)} is not major:minor`, text, from, end)
  }
  if (major < 0) return notNumber("major", major, text, from, colon)
  if (minor < 0) return notNumber("minor", minor, text, colon + 1, end)
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(4)
  const root = f(sliceOr(text, from, end, prev.root))
  if (root === undefined) return badEscape("root", text, from, end)
  if (root === "") return problem("root", "root is empty", text, from, end)
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(5)
  const mountPoint = f(text.slice(from, end))
  if (mountPoint === undefined) return badEscape("mount point", text, from, end)
  if (mountPoint === "") return problem("mount point", "mount point is empty", text, from, end)
  from = end + 1
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(6)
  if (end === from) return problem("mount options", "mount options are empty", text, from, end)
  const mountOptions = f(sliceOr(text, from, end, prev.mountOptions))
  if (mountOptions === undefined) return badEscape("mount options", text, from, end)
  from = end + 1
  // optional fields up to the "-" separator; an optional field that is "-"
  // itself is written `\055` (render), so the bare "-" is always the separator
  let optionalFields = noOptionalFields
  for (;;) {
    if (from > eol) {
      return problem("separator", "has no '-' separator after the optional fields", text, start, eol)
    }
    end = fieldEnd(text, from, eol)
    if (end === from + 1 && text.charCodeAt(from) === 45) break
    if (end === from) return problem("optional field", "has an empty optional field", text, from, end)
    const optional = f(text.slice(from, end))
    if (optional === undefined) return badEscape("optional field", text, from, end)
    if (optionalFields === noOptionalFields) optionalFields = []
    ;(optionalFields as Array<string>).push(optional)
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
    const detail = `has ${n} fields after '-', expected 3 (fs type, source, super options)`
    return n > 3
      ? problem("super options", detail, text, c, eol)
      : { detail, field: afterSeparator[n] ?? "super options", value: undefined }
  }
  const fsType = f(sliceOr(text, a, aEnd, prev.fsType))
  if (fsType === undefined) return badEscape("fs type", text, a, aEnd)
  if (fsType === "") return problem("fs type", "fs type is empty", text, a, aEnd)
  const source = f(sliceOr(text, b, bEnd, prev.source))
  if (source === undefined) return badEscape("source", text, b, bEnd)
  // Super options are the file system's own text (its show_options), and
  // not every one escapes what it writes (cifs wrote `unc=\\srv\share`):
  // a backslash that starts no escape is a backslash of the options.
  const superOptions = sliceOr(text, c, cEnd, prev.superOptions)
  const superDecoded = escaped ? (decodeEscapes(superOptions, true) ?? superOptions) : superOptions
  if (!escaped) {
    prev.root = root
    prev.mountOptions = mountOptions
    prev.fsType = fsType
    prev.source = source
    prev.superOptions = superOptions
  }
  return {
    id,
    parentId,
    major,
    minor,
    root,
    mountPoint,
    mountOptions,
    optionalFields,
    fsType,
    source,
    superOptions: superDecoded
  }
}

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
 * @since 0.1.0
 */
export const parse: (text: string, path?: string) => Effect.Effect<MountTable, MountInfoError> = Effect.fn(
  "MountInfo.parse"
)(function* (text: string, path: string = DefaultPath) {
  const out: Array<MountEntry> = []
  let lineNo = 0
  let backslash = text.indexOf("\\")
  const prev: Previous = { root: "", mountOptions: "", fsType: "", source: "", superOptions: "" }
  for (let from = 0; from < text.length; ) {
    lineNo++
    let next = text.indexOf("\n", from)
    if (next === -1) next = text.length
    const eol = next > from && text.charCodeAt(next - 1) === 13 ? next - 1 : next
    if (eol > from) {
      if (backslash !== -1 && backslash < from) backslash = text.indexOf("\\", from)
      const r = parseLine(text, from, eol, backslash !== -1 && backslash < eol, prev)
      if ("detail" in r) {
        return yield* failure(
          path,
          new Malformed({
            line: lineNo,
            field: r.field,
            ...(r.value === undefined ? {} : { value: r.value }),
            detail: r.detail
          })
        )
      }
      out.push(r)
    }
    from = next + 1
  }
  return out as MountTable
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
    .pipe(Effect.mapError((e) => failure(path, new Unreadable({ detail: e.message }))))
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
