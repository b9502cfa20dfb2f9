/**
 * SHA-256 (FIPS 180-4) in plain TypeScript, incremental: `update` any
 * number of times with chunks of any size, then `digestHex`. Memory is the
 * 64-byte block buffer and the eight-word state, whatever the input's size.
 *
 * Internal: the portable `Hashing` implementation for runtimes without a
 * native one (the in-memory host, a browser). The node layer provides the
 * platform's, which is several times faster on CPUs with SHA instructions.
 *
 * @since 0.2.0
 */

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
])

const Initial = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]

/** An incremental SHA-256. */
export interface Sha256 {
  readonly update: (bytes: Uint8Array) => void
  /** The digest of everything given so far, as 64 lowercase hex digits; the hasher is spent after it. */
  readonly digestHex: () => string
}

/** A new SHA-256 computation. */
export const make = (): Sha256 => {
  const h = new Int32Array(Initial)
  const w = new Int32Array(64)
  const block = new Uint8Array(64)
  let filled = 0
  let length = 0

  // Compresses the 64-byte block at `at` of `bytes` into the state.
  const compress = (bytes: Uint8Array, at: number) => {
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4
      w[i] =
        ((bytes[j] as number) << 24) |
        ((bytes[j + 1] as number) << 16) |
        ((bytes[j + 2] as number) << 8) |
        (bytes[j + 3] as number)
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15] as number
      const y = w[i - 2] as number
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)
      w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) | 0
    }
    let a = h[0] as number
    let b = h[1] as number
    let c = h[2] as number
    let d = h[3] as number
    let e = h[4] as number
    let f = h[5] as number
    let g = h[6] as number
    let k = h[7] as number
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
      const ch = (e & f) ^ (~e & g)
      const t1 = (k + S1 + ch + (K[i] as number) + (w[i] as number)) | 0
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
      const maj = (a & b) ^ (a & c) ^ (b & c)
      const t2 = (S0 + maj) | 0
      k = g
      g = f
      f = e
      e = (d + t1) | 0
      d = c
      c = b
      b = a
      a = (t1 + t2) | 0
    }
    h[0] = ((h[0] as number) + a) | 0
    h[1] = ((h[1] as number) + b) | 0
    h[2] = ((h[2] as number) + c) | 0
    h[3] = ((h[3] as number) + d) | 0
    h[4] = ((h[4] as number) + e) | 0
    h[5] = ((h[5] as number) + f) | 0
    h[6] = ((h[6] as number) + g) | 0
    h[7] = ((h[7] as number) + k) | 0
  }

  const update = (bytes: Uint8Array) => {
    length += bytes.length
    let i = 0
    if (filled > 0) {
      const n = Math.min(64 - filled, bytes.length)
      block.set(bytes.subarray(0, n), filled)
      filled += n
      i = n
      if (filled < 64) return
      compress(block, 0)
      filled = 0
    }
    for (; i + 64 <= bytes.length; i += 64) compress(bytes, i)
    if (i < bytes.length) {
      block.set(bytes.subarray(i), 0)
      filled = bytes.length - i
    }
  }

  const digestHex = () => {
    const bits = length * 8
    const pad = new Uint8Array((filled < 56 ? 56 : 120) - filled + 8)
    pad[0] = 0x80
    const view = new DataView(pad.buffer)
    // The length in bits as a 64-bit big-endian number (lengths below 2^53 bytes).
    view.setUint32(pad.length - 8, Math.floor(bits / 0x1_0000_0000))
    view.setUint32(pad.length - 4, bits >>> 0)
    update(pad)
    let out = ""
    for (let i = 0; i < 8; i++) out += ((h[i] as number) >>> 0).toString(16).padStart(8, "0")
    return out
  }

  return { update, digestHex }
}
