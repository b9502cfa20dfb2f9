/**
 * File names as the kernel has them: bytes (any but `/` and NUL; pods make
 * names that are not UTF-8, and a name decoded lossily names another file).
 * This module is the one lossless correspondence between such names and
 * JavaScript strings the library uses wherever a path is a string: valid UTF-8
 * decodes as usual, every other byte becomes the lone surrogate U+DC80 + byte
 * (Python's `surrogateescape`, PEP 383), a bijection that JSON keeps. A display
 * form for logs writes those bytes as `\xNN`. Directory handles take and give
 * names as bytes; operations report paths in the lossless string form.
 *
 * @since 0.2.0
 */

/** The part of the web platform's `TextDecoder` used here; core's library types do not declare it. */
interface Utf8Decoder {
  readonly decode: (bytes: Uint8Array) => string
}

const utf8: Utf8Decoder | undefined = (() => {
  const Ctor = (
    globalThis as {
      readonly TextDecoder?: new (label: string, options: { readonly ignoreBOM: boolean }) => Utf8Decoder
    }
  ).TextDecoder
  // ignoreBOM: a leading EF BB BF is part of the name, not a mark to drop.
  return Ctor === undefined ? undefined : new Ctor("utf-8", { ignoreBOM: true })
})()

const isContinuation = (b: number | undefined): boolean => b !== undefined && (b & 0xc0) === 0x80

/**
 * Decodes `bytes` losslessly: valid UTF-8 sequences as their characters,
 * every other byte as U+DC80 + byte (see the module comment).
 *
 * @since 0.2.0
 * @category constructors
 */
export const decode = (bytes: Uint8Array): string => {
  // The platform's UTF-8 decoder where there is one (every JavaScript runtime
  // the library runs on): a text without U+FFFD in its output was valid UTF-8
  // and is the answer. Only one that has U+FFFD (a replacement, or a real
  // U+FFFD, which is rare in paths) takes the byte-by-byte road below.
  if (utf8 !== undefined && bytes.length > 64) {
    const fast = utf8.decode(bytes)
    if (!fast.includes("\ufffd")) return fast
  }
  let out = ""
  let ascii = true
  for (let i = 0; i < bytes.length; i++) {
    if ((bytes[i] as number) >= 0x80) {
      ascii = false
      break
    }
  }
  if (ascii) {
    // The common case, kept fast: every byte is a character.
    for (let i = 0; i < bytes.length; i += 8192) {
      // `apply` over the bytes, not a spread: a spread builds an array first, several times the cost for a short name.
      out += String.fromCharCode.apply(
        null,
        bytes.subarray(i, Math.min(bytes.length, i + 8192)) as unknown as Array<number>
      )
    }
    return out
  }
  let i = 0
  while (i < bytes.length) {
    const b0 = bytes[i] as number
    if (b0 < 0x80) {
      out += String.fromCharCode(b0)
      i += 1
      continue
    }
    const b1 = bytes[i + 1]
    const b2 = bytes[i + 2]
    const b3 = bytes[i + 3]
    // Each branch accepts exactly the well-formed sequences of RFC 3629
    // (no overlongs, no surrogates, nothing above U+10FFFF).
    if (b0 >= 0xc2 && b0 <= 0xdf && isContinuation(b1)) {
      out += String.fromCharCode(((b0 & 0x1f) << 6) | ((b1 as number) & 0x3f))
      i += 2
      continue
    }
    if (b0 >= 0xe0 && b0 <= 0xef && isContinuation(b1) && isContinuation(b2)) {
      const cp = ((b0 & 0x0f) << 12) | (((b1 as number) & 0x3f) << 6) | ((b2 as number) & 0x3f)
      if (cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff)) {
        out += String.fromCharCode(cp)
        i += 3
        continue
      }
    }
    if (b0 >= 0xf0 && b0 <= 0xf4 && isContinuation(b1) && isContinuation(b2) && isContinuation(b3)) {
      const cp =
        ((b0 & 0x07) << 18) | (((b1 as number) & 0x3f) << 12) | (((b2 as number) & 0x3f) << 6) | ((b3 as number) & 0x3f)
      if (cp >= 0x10000 && cp <= 0x10ffff) {
        out += String.fromCodePoint(cp)
        i += 4
        continue
      }
    }
    out += String.fromCharCode(0xdc00 + b0)
    i += 1
  }
  return out
}

/** The number of bytes {@link encode} gives for `text`. */
const encodedLength = (text: string): number => {
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4
        i++
      } else n += 3
    } else if (c >= 0xdc80 && c <= 0xdcff) n += 1
    else n += 3
  }
  return n
}

/**
 * Encodes `text` to the bytes it stands for: the inverse of {@link decode}.
 * A lone surrogate U+DC80..U+DCFF is the byte it escapes; any other lone
 * surrogate (which {@link decode} never produces) is encoded as U+FFFD, as
 * Node encodes it.
 *
 * @since 0.2.0
 * @category constructors
 */
export const encode = (text: string): Uint8Array => {
  const out = new Uint8Array(encodedLength(text))
  let o = 0
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i)
    if (c < 0x80) {
      out[o++] = c
      continue
    }
    if (c < 0x800) {
      out[o++] = 0xc0 | (c >> 6)
      out[o++] = 0x80 | (c & 0x3f)
      continue
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
        out[o++] = 0xf0 | (cp >> 18)
        out[o++] = 0x80 | ((cp >> 12) & 0x3f)
        out[o++] = 0x80 | ((cp >> 6) & 0x3f)
        out[o++] = 0x80 | (cp & 0x3f)
        i++
        continue
      }
    }
    if (c >= 0xdc80 && c <= 0xdcff) {
      out[o++] = c - 0xdc00
      continue
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd
    out[o++] = 0xe0 | (c >> 12)
    out[o++] = 0x80 | ((c >> 6) & 0x3f)
    out[o++] = 0x80 | (c & 0x3f)
  }
  return out
}

/**
 * `text` (a lossless string) for a person: each byte that is not valid UTF-8
 * as `\xNN` (`caf\xe9.txt`), control characters as `\xNN` too, everything
 * else as it is. For logs and reports; it is not meant to be decoded back.
 *
 * @example
 * ```ts
 * import { FileName } from "@hostnode/core"
 *
 * // A name whose bytes are Latin-1, not UTF-8: its lossless string, and how a person reads it.
 * const name = FileName.decode(new Uint8Array([0x63, 0x61, 0x66, 0xe9]))
 * assert.strictEqual(FileName.display(name), "caf\\xe9")
 * assert.deepStrictEqual([...FileName.encode(name)], [0x63, 0x61, 0x66, 0xe9])
 * ```
 *
 * @since 0.2.0
 * @category operations
 */
export const display = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0xdc80 && c <= 0xdcff && !(i > 0 && isHigh(text.charCodeAt(i - 1)))) {
      out += `\\x${(c - 0xdc00).toString(16).padStart(2, "0")}`
    } else if (c < 0x20 || c === 0x7f) {
      out += `\\x${c.toString(16).padStart(2, "0")}`
    } else {
      out += text[i]
    }
  }
  return out
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff
