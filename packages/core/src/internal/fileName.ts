/**
 * Comparing and checking names as bytes, for the walks and the kernel's limits.
 *
 * @since 0.4.0
 */

/**
 * True when `text` stands for bytes that are not valid UTF-8 (it holds an escaped byte).
 */
export const hasEscapedBytes = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0xdc80 && c <= 0xdcff) {
      const prev = i > 0 ? text.charCodeAt(i - 1) : 0
      if (!(prev >= 0xd800 && prev <= 0xdbff)) return true
    }
  }
  return false
}

/**
 * Compares two names by their bytes, as `ls` in the C locale sorts them.
 */
export const compare = (a: Uint8Array, b: Uint8Array): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number)
    if (d !== 0) return d
  }
  return a.length - b.length
}

/**
 * True when `a` and `b` hold the same bytes.
 */
export const equals = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && compare(a, b) === 0

/**
 * True when `name` is a single path component the kernel accepts: non-empty, not `.` or `..`, no `/` or NUL.
 */
export const isComponent = (name: Uint8Array): boolean => {
  if (name.length === 0 || name.length > 255) return false
  if (name.length === 1 && name[0] === 0x2e) return false
  if (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e) return false
  for (const b of name) if (b === 0x2f || b === 0) return false
  return true
}
