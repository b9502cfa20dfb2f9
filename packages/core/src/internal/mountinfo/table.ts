/**
 * The mount table as parsed: one strict scan of the text that records, per
 * line, its numbers and where its string fields are (typed arrays, no string
 * or object per field), and a table that builds an entry, as a plain object,
 * the first time it is read. Boundary: the scan's checks and the entries'
 * shape; the error a bad line becomes, and the Schema of an entry, are
 * `MountInfo.ts`.
 *
 * Why: tables reach tens of thousands of lines (stacked tmpfs mounts) and are
 * re-read on every unmount pass. Building eleven fields per line up front was
 * most of the parse, and most of its memory (about 340 bytes an entry), while
 * a reader mostly wants a few entries, or one field of each. The scan keeps
 * every check of the line (a table that does not parse is an error for the
 * whole table: nothing of it is trusted), so a line read later cannot fail.
 */
import type { MountEntry } from "../../MountInfo.ts"

type MountTable = ReadonlyArray<MountEntry>

import { decodeEscapes, escapesValid } from "./escape.ts"

/** What is wrong with a line: the message, the field, and the field's text (clipped). */
export interface Problem {
  readonly line: number
  readonly detail: string
  readonly field: string
  readonly value: string | undefined
}

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

const clipAt = 256

const clip = (text: string, from: number, to: number): string => text.slice(from, Math.min(to, from + clipAt))

const quoted = (text: string, from: number, to: number): string =>
  to - from > clipAt
    ? `${JSON.stringify(clip(text, from, to))}... (${to - from} characters)`
    : JSON.stringify(text.slice(from, to))

// A line's problem, without its number (the scan adds it).
type LineProblem = Omit<Problem, "line">

const problem = (field: string, detail: string, text: string, from: number, to: number): LineProblem => ({
  detail,
  field,
  value: clip(text, from, to)
})

// The fields before the optional ones, and then the separator: what is
// missing from a line that ends after n fields is fieldNames[n].
const fieldNames = ["mount id", "parent id", "device", "root", "mount point", "mount options", "separator"] as const

const tooFew = (n: number): LineProblem => ({
  detail: `has ${n} field${n === 1 ? "" : "s"}, a mountinfo line has at least 10 (no ${fieldNames[n]} and what follows)`,
  field: fieldNames[n] ?? "separator",
  value: undefined
})

const notNumber = (field: string, code: number, text: string, from: number, to: number): LineProblem =>
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

const badEscape = (field: string, text: string, from: number, to: number): LineProblem =>
  problem(
    field,
    `${field} ${quoted(text, from, to)} has an invalid escape (a backslash not starting \\000 to \\377)`,
    text,
    from,
    to
  )

const afterSeparator = ["fs type", "source", "super options"] as const

/**
 * The scanned table: for line k (of the lines that hold an entry),
 * `numbers[4k..4k+3]` are its id, parent id, major and minor;
 * `offsets[7k..7k+6]` where its root, mount point, mount options, the `-`
 * separator, source and super options start, and where the line ends (every
 * other boundary follows: a field ends one before the next starts, the fs
 * type is between the separator and the source); `escaped[k]` whether the
 * line holds a backslash at all (most lines do not, and their fields are
 * plain slices).
 */
interface Columns {
  readonly numbers: Float64Array
  readonly offsets: Uint32Array
  readonly escaped: Uint8Array
}

const Stride = 7

// Checks the line text[start, eol) as a mountinfo line and records it as
// entry k; returns what is wrong with it instead. The same checks, in the same
// order, as building the entry would make: the error names the first thing
// wrong. `escaped` says whether the line holds a backslash, so most lines
// never look for escapes.
const scanLine = (
  text: string,
  start: number,
  eol: number,
  escaped: boolean,
  columns: Columns,
  k: number
): LineProblem | undefined => {
  const valid = (from: number, to: number): boolean => !escaped || escapesValid(text, from, to)
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
  const rootStart = end + 1
  from = rootStart
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(4)
  if (!valid(from, end)) return badEscape("root", text, from, end)
  // An escape decodes to one character at least: a field decodes empty only when it is empty.
  if (end === from) return problem("root", "root is empty", text, from, end)
  const mountPointStart = end + 1
  from = mountPointStart
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(5)
  if (!valid(from, end)) return badEscape("mount point", text, from, end)
  if (end === from) return problem("mount point", "mount point is empty", text, from, end)
  const optionsStart = end + 1
  from = optionsStart
  end = fieldEnd(text, from, eol)
  if (end === eol) return tooFew(6)
  if (end === from) return problem("mount options", "mount options are empty", text, from, end)
  if (!valid(from, end)) return badEscape("mount options", text, from, end)
  from = end + 1
  // optional fields up to the "-" separator; an optional field that is "-"
  // itself is written `\055` (render), so the bare "-" is always the separator
  for (;;) {
    if (from > eol) {
      return problem("separator", "has no '-' separator after the optional fields", text, start, eol)
    }
    end = fieldEnd(text, from, eol)
    if (end === from + 1 && text.charCodeAt(from) === 45) break
    if (end === from) return problem("optional field", "has an empty optional field", text, from, end)
    if (!valid(from, end)) return badEscape("optional field", text, from, end)
    from = end + 1
  }
  const separator = from
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
  if (!valid(a, aEnd)) return badEscape("fs type", text, a, aEnd)
  if (aEnd === a) return problem("fs type", "fs type is empty", text, a, aEnd)
  if (!valid(b, bEnd)) return badEscape("source", text, b, bEnd)
  // Super options are the file system's own text (its show_options), and not
  // every one escapes what it writes (cifs wrote `unc=\\srv\share`): a
  // backslash that starts no escape is a backslash of the options, so they
  // are never wrong.
  const n = k * 4
  columns.numbers[n] = id
  columns.numbers[n + 1] = parentId
  columns.numbers[n + 2] = major
  columns.numbers[n + 3] = minor
  const o = k * Stride
  columns.offsets[o] = rootStart
  columns.offsets[o + 1] = mountPointStart
  columns.offsets[o + 2] = optionsStart
  columns.offsets[o + 3] = separator
  columns.offsets[o + 4] = b
  columns.offsets[o + 5] = c
  columns.offsets[o + 6] = eol
  columns.escaped[k] = escaped ? 1 : 0
  return undefined
}

const noOptionalFields: ReadonlyArray<string> = Object.freeze([])

/**
 * The strings the last entry built used, by field. Values repeat from line to
 * line (`/`, `rw,relatime`, `tmpfs`, the same options on every stacked
 * mount), and entries are mostly built in order: a field whose text matches
 * the last one's reuses its string instead of making another.
 */
interface Last {
  root: string
  mountOptions: string
  readonly optional: Array<{ readonly text: string; readonly fields: ReadonlyArray<string> }>
  fsType: string
  source: string
  superOptions: string
}

const sliceOr = (text: string, from: number, to: number, last: string): string =>
  to - from === last.length && text.startsWith(last, from) ? last : text.slice(from, to)

// A number as the engine stores small integers (unboxed), as parsing it from the text gave it: the typed
// array hands back every number as a double, which an object would otherwise keep in a box of its own.
const int = (x: number | undefined): number => (x === undefined ? 0 : x < 1073741824 ? x | 0 : x)

// A field of a line that holds a backslash: decoded (the scan checked every escape of it).
const decoded = (text: string, from: number, to: number): string => {
  const raw = text.slice(from, to)
  return decodeEscapes(raw, false) ?? raw
}

// The optional fields in [from, to): each decoded when the line holds a backslash.
const optionalAt = (text: string, from: number, to: number, escaped: boolean): ReadonlyArray<string> => {
  const fields: Array<string> = []
  while (from < to) {
    const sp = text.indexOf(" ", from)
    const end = sp === -1 || sp > to ? to : sp
    fields.push(escaped ? decoded(text, from, end) : text.slice(from, end))
    from = end + 1
  }
  // Frozen: the same array may serve the next entries with the same fields.
  return Object.freeze(fields)
}

// Entry k of the scanned table, built from the text.
const entryAt = (text: string, columns: Columns, k: number, last: Last): MountEntry => {
  const n = k * 4
  const o = k * Stride
  const { numbers, offsets } = columns
  const rootStart = offsets[o] ?? 0
  const mountPointStart = offsets[o + 1] ?? 0
  const optionsStart = offsets[o + 2] ?? 0
  const separator = offsets[o + 3] ?? 0
  const sourceStart = offsets[o + 4] ?? 0
  const superStart = offsets[o + 5] ?? 0
  const eol = offsets[o + 6] ?? 0
  const sp = text.indexOf(" ", optionsStart)
  const optionsEnd = sp === -1 || sp > eol ? eol : sp
  const optionalFrom = optionsEnd + 1
  const optionalTo = separator - 1
  if (columns.escaped[k] === 1) {
    const superOptions = text.slice(superStart, eol)
    return {
      id: int(numbers[n]),
      parentId: int(numbers[n + 1]),
      major: int(numbers[n + 2]),
      minor: int(numbers[n + 3]),
      root: decoded(text, rootStart, mountPointStart - 1),
      mountPoint: decoded(text, mountPointStart, optionsStart - 1),
      mountOptions: decoded(text, optionsStart, optionsEnd),
      optionalFields: optionalFrom < separator ? optionalAt(text, optionalFrom, optionalTo, true) : noOptionalFields,
      fsType: decoded(text, separator + 2, sourceStart - 1),
      source: decoded(text, sourceStart, superStart - 1),
      // Super options: a backslash that starts no escape is the options' own (see the scan).
      superOptions: decodeEscapes(superOptions, true) ?? superOptions
    }
  }
  let optionalFields = noOptionalFields
  if (optionalFrom < separator) {
    // The last few distinct optional fields are kept: neighbours often alternate (shared:5, master:1, none).
    const width = optionalTo - optionalFrom
    for (const seen of last.optional) {
      if (seen.text.length === width && text.startsWith(seen.text, optionalFrom)) {
        optionalFields = seen.fields
        break
      }
    }
    if (optionalFields === noOptionalFields) {
      optionalFields = optionalAt(text, optionalFrom, optionalTo, false)
      last.optional.unshift({ text: text.slice(optionalFrom, optionalTo), fields: optionalFields })
      if (last.optional.length > 4) last.optional.pop()
    }
  }
  const entry: MountEntry = {
    id: int(numbers[n]),
    parentId: int(numbers[n + 1]),
    major: int(numbers[n + 2]),
    minor: int(numbers[n + 3]),
    root: sliceOr(text, rootStart, mountPointStart - 1, last.root),
    mountPoint: text.slice(mountPointStart, optionsStart - 1),
    mountOptions: sliceOr(text, optionsStart, optionsEnd, last.mountOptions),
    optionalFields,
    fsType: sliceOr(text, separator + 2, sourceStart - 1, last.fsType),
    source: sliceOr(text, sourceStart, superStart - 1, last.source),
    superOptions: sliceOr(text, superStart, eol, last.superOptions)
  }
  last.root = entry.root
  last.mountOptions = entry.mountOptions
  last.fsType = entry.fsType
  last.source = entry.source
  last.superOptions = entry.superOptions
  return entry
}

// The index a property key names, when it is a canonical array index below `length`; otherwise -1.
const indexOf = (key: string | symbol, length: number): number => {
  if (typeof key !== "string" || key.length === 0 || key.length > 16) return -1
  let i = 0
  for (let j = 0; j < key.length; j++) {
    const c = key.charCodeAt(j) - 48
    if (c < 0 || c > 9) return -1
    i = i * 10 + c
  }
  return (key.length > 1 && key.charCodeAt(0) === 48) || i >= length ? -1 : i
}

/**
 * The table over `columns`: an array (`Array.isArray` holds, and every array
 * method, iteration and JSON work on it) whose entry k is built the first time
 * it is read and kept. An entry is a plain object of the {@link MountEntry}
 * fields, as a parse always gave: spreading, copying or cloning one works.
 */
const lazyTable = (text: string, columns: Columns, length: number): MountTable => {
  // Dense (every index present, undefined until built), so `in` and the array methods see every entry.
  const built: Array<MountEntry | undefined> = new Array(length).fill(undefined)
  const last: Last = {
    root: "",
    mountOptions: "",
    optional: [],
    fsType: "",
    source: "",
    superOptions: ""
  }
  const at = (k: number): MountEntry => {
    const entry = built[k]
    if (entry !== undefined) return entry
    const made = entryAt(text, columns, k, last)
    built[k] = made
    return made
  }
  // Iteration (for..of, spread, Array.from) is how a whole table is read: it runs here, not through the proxy.
  const values = function* (): IterableIterator<MountEntry> {
    for (let k = 0; k < built.length; k++) yield at(k)
  }
  const table = new Proxy(built, {
    get: (target, key, receiver) => {
      if (key === Symbol.iterator || key === "values") return values
      const k = indexOf(key, length)
      return k === -1 ? Reflect.get(target, key, receiver) : at(k)
    }
  }) as MountTable
  // Node's inspection (console.log) looks at a proxy's target, where unread entries are not built yet:
  // it is shown the entries instead. A global symbol, so core needs no node:util.
  Object.defineProperty(built, Symbol.for("nodejs.util.inspect.custom"), {
    value: () => Array.from(table),
    enumerable: false
  })
  return table
}

/**
 * Scans `text` as a whole mountinfo table: the table, or the first line that
 * is wrong (its 1-based number, the field, its text and what was wrong).
 * Blank lines are skipped; a CR before a newline, or at the very end, is a
 * CRLF line end.
 */
export const scan = (text: string): { readonly table: MountTable } | { readonly problem: Problem } => {
  // At most one entry per line: the newlines, and a last line without one.
  let lines = text.length === 0 || text.charCodeAt(text.length - 1) === 10 ? 0 : 1
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) lines++
  const columns: Columns = {
    numbers: new Float64Array(lines * 4),
    offsets: new Uint32Array(lines * Stride),
    escaped: new Uint8Array(lines)
  }
  let k = 0
  let lineNo = 0
  let backslash = text.indexOf("\\")
  for (let from = 0; from < text.length; ) {
    lineNo++
    let next = text.indexOf("\n", from)
    if (next === -1) next = text.length
    const eol = next > from && text.charCodeAt(next - 1) === 13 ? next - 1 : next
    if (eol > from) {
      if (backslash !== -1 && backslash < from) backslash = text.indexOf("\\", from)
      const wrong = scanLine(text, from, eol, backslash !== -1 && backslash < eol, columns, k)
      if (wrong !== undefined) return { problem: { line: lineNo, ...wrong } }
      k++
    }
    from = next + 1
  }
  // Blank lines took no entry; the columns keep their room (the rare blank line costs a few bytes).
  return { table: lazyTable(text, columns, k) }
}
