/**
 * The iptables rules LocalDNS installs: the comment that makes a rule ours,
 * and the rules for a set of listener addresses as `iptables -S` prints them
 * back. Pure values; the steps that list, add and delete rules, and the
 * reading of `iptables -S`, are in `internal/localdns`.
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
 * Our rules for `addresses`: per chain, per address, per protocol,
 * `-d <addr>/32 -p <proto> -m <proto> --dport 53 -m comment --comment
 * hostnode:localdns -j NOTRACK`. The spec is written exactly as `iptables -S`
 * prints it back (with the implicit `-m <proto>`), so `-C`, `-D` and the
 * listing all speak of the same rule.
 *
 * @category operations
 * @since 0.1.0
 */
export const rules = (
  addresses: ReadonlyArray<string>
): ReadonlyArray<{
  /** `OUTPUT` (locally generated traffic) or `PREROUTING` (traffic arriving from pods). */
  readonly chain: (typeof Chains)[number]
  /** The rule's spec, in the canonical form `iptables -S` prints it. */
  readonly spec: ReadonlyArray<string>
}> =>
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
