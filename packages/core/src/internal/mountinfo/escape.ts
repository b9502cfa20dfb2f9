/**
 * The kernel's `\ooo` escapes in mountinfo's string fields: deciding whether a
 * backslash starts one, and decoding a field. Boundary: single fields; which
 * field may hold what is `table.ts`.
 */
import * as FileName from "../../FileName.ts"

const octal = (c: number): boolean => c >= 48 && c <= 55

/** Whether `s[i]` (a backslash) starts an escape of a byte, `\000` to `\377`, that ends before `end`. */
const escapeAt = (s: string, i: number, end: number): boolean => {
  if (i + 3 >= end) return false
  const a = s.charCodeAt(i + 1)
  return a >= 48 && a <= 51 && octal(s.charCodeAt(i + 2)) && octal(s.charCodeAt(i + 3))
}

const escapedByte = (s: string, i: number): number =>
  (s.charCodeAt(i + 1) - 48) * 64 + (s.charCodeAt(i + 2) - 48) * 8 + (s.charCodeAt(i + 3) - 48)

/**
 * Whether every backslash of `text` in [from, to) starts an escape of a byte
 * that lies inside the range: what decoding the field strictly requires, asked
 * without building the decoded string.
 */
export const escapesValid = (text: string, from: number, to: number): boolean => {
  for (let i = text.indexOf("\\", from); i !== -1 && i < to; i = text.indexOf("\\", i + 4)) {
    if (!escapeAt(text, i, to)) return false
  }
  return true
}

// `s` decoded through bytes: its literal parts as the bytes FileName gives
// them back (the table's text came from FileName.decode), each escape as the
// byte it stands for, and the whole decoded losslessly again. The road for
// escapes of bytes >= 0x80 only: `\351` is the byte 0xE9 (U+DCE9 alone, as
// FileName has it), `\303\251` is `é`, never the characters U+00C3 U+00A9.
const unescapeBytes = (s: string): string => {
  const bytes: Array<number> = []
  let from = 0
  for (let i = s.indexOf("\\"); i !== -1; i = s.indexOf("\\", i + 1)) {
    if (!escapeAt(s, i, s.length)) continue
    for (const b of FileName.encode(s.slice(from, i))) bytes.push(b)
    bytes.push(escapedByte(s, i))
    from = i + 4
    i += 3
  }
  for (const b of FileName.encode(s.slice(from))) bytes.push(b)
  return FileName.decode(Uint8Array.from(bytes))
}

/**
 * Decodes the escapes of `s`; a backslash that starts none is `undefined`, or,
 * when `lenient`, a backslash of the text.
 */
export const decodeEscapes = (s: string, lenient: boolean): string | undefined => {
  if (s.indexOf("\\") === -1) return s
  let out = ""
  let from = 0
  let high = false
  for (let i = s.indexOf("\\"); i !== -1; i = s.indexOf("\\", i + 1)) {
    if (!escapeAt(s, i, s.length)) {
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
 */
export const escapeField = (s: string): string => s.replace(needsEscape, (ch) => escapes[ch] ?? ch)
