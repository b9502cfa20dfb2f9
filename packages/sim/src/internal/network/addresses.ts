/**
 * IPv4 addresses as the simulated kernel and iptables read them: dotted
 * quads as numbers, prefixes and netmasks, networks.
 *
 * Internal to `MemoryNetwork`.
 *
 * @since 0.3.0
 */

export const parseIpv4 = (text: string): number | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  let n = 0
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined
    const v = Number(p)
    if (v > 255) return undefined
    n = n * 256 + v
  }
  return n
}

export const formatIpv4 = (n: number): string => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".")

export const maskOf = (prefix: number): number => (prefix === 0 ? 0 : (0xffffffff - (2 ** (32 - prefix) - 1)) >>> 0)

export const network = (address: number, prefix: number): number => (address & maskOf(prefix)) >>> 0

/** `a.b.c.d[/n]` as an address and a prefix, or undefined when invalid. */
export const parseCidr = (text: string): { readonly address: number; readonly prefix: number } | undefined => {
  const slash = text.indexOf("/")
  const address = parseIpv4(slash === -1 ? text : text.slice(0, slash))
  if (address === undefined) return undefined
  if (slash === -1) return { address, prefix: 32 }
  const p = text.slice(slash + 1)
  if (/^\d{1,2}$/.test(p) && Number(p) <= 32) return { address, prefix: Number(p) }
  // A dotted netmask (iptables accepts one).
  const mask = parseIpv4(p)
  if (mask === undefined) return undefined
  for (let prefix = 0; prefix <= 32; prefix++) if (maskOf(prefix) === mask) return { address, prefix }
  return undefined
}
