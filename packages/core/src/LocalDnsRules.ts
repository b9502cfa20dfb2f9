/**
 * The iptables rules LocalDNS installs: the comment that makes a rule ours,
 * the rules for a set of listener addresses as `iptables -S` prints them
 * back, and that listing's lines read back into argv words. Pure values; the
 * steps that list, add and delete rules are in `internal/localdns`.
 *
 * A leaf module, re-exported by `LocalDns`.
 *
 * @since 0.4.0
 */
import { Chains, Protocols } from "./internal/localdns/chains.ts"

/**
 * The comment every rule of ours carries (`-m comment --comment ...`). It is
 * what makes a rule ours: cleanup deletes exactly the rules with it.
 *
 * @category models
 * @since 0.1.0
 */
export const RuleComment = "hostnode:localdns"

/**
 * One iptables rule of ours: its chain and its spec, in the canonical form `iptables -S` prints it.
 *
 * @category models
 * @since 0.1.0
 */
export interface Rule {
  /** `OUTPUT` (locally generated traffic) or `PREROUTING` (traffic arriving from pods). */
  readonly chain: (typeof Chains)[number]
  readonly spec: ReadonlyArray<string>
}

/**
 * Our rules for `addresses`: per chain, per address, per protocol,
 * `-d <addr>/32 -p <proto> -m <proto> --dport 53 -m comment --comment
 * hostnode:localdns -j NOTRACK`. The spec is written exactly as `iptables -S`
 * prints it back (with the implicit `-m <proto>`), so `-C`, `-D` and the
 * listing all speak of the same rule.
 *
 * @category operations
 * @since 0.1.0
 */
export const rules = (addresses: ReadonlyArray<string>): ReadonlyArray<Rule> =>
  Chains.flatMap((chain) =>
    addresses.flatMap((address) =>
      Protocols.map((proto) => ({
        chain,
        spec: [
          "-d",
          `${address}/32`,
          "-p",
          proto,
          "-m",
          proto,
          "--dport",
          "53",
          "-m",
          "comment",
          "--comment",
          RuleComment,
          "-j",
          "NOTRACK"
        ]
      }))
    )
  )

/**
 * The argv words of one line of `iptables -S`: split on spaces, with the
 * double-quoted values iptables prints (comments) unquoted and unescaped, so
 * the words can be given back to `iptables -D` as they are.
 *
 * @category operations
 * @since 0.1.0
 */
export const parseRuleLine = (line: string): ReadonlyArray<string> => {
  const words: Array<string> = []
  let current = ""
  let inWord = false
  let quoted = false
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string
    if (quoted) {
      if (c === "\\" && i + 1 < line.length) current += line[++i]
      else if (c === '"') quoted = false
      else current += c
    } else if (c === '"') {
      quoted = true
      inWord = true
    } else if (c === " " || c === "\t") {
      if (inWord) words.push(current)
      current = ""
      inWord = false
    } else {
      current += c
      inWord = true
    }
  }
  if (inWord) words.push(current)
  return words
}
