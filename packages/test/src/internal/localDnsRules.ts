/** The node start, our rules and foreign rules of the LocalDNS suite, shared with the tests that check them. */
import type { NodeStart } from "@hostnode/core"
import { localDnsRuleComment } from "@hostnode/core/Programs"

export const nodeListener = "169.254.10.10"
export const clusterListener = "169.254.10.11"

/** The comment that makes a rule LocalDNS's (`-m comment --comment hostnode:localdns`): cleanup deletes by it. */
export const RuleComment = localDnsRuleComment

/**
 * Our rules for `addresses` as planted (chain, then the words `iptables -S`
 * prints back), per chain, address and protocol, in the order `LocalDns`
 * adds them.
 */
export const rulesFor = (
  addresses: ReadonlyArray<string>
): ReadonlyArray<{ readonly chain: string; readonly spec: ReadonlyArray<string> }> =>
  ["OUTPUT", "PREROUTING"].flatMap((chain) =>
    addresses.flatMap((address) =>
      ["tcp", "udp"].map((proto) => ({
        chain,
        spec: ["-d", `${address}/32`, "-p", proto, "-m", proto, "--dport", "53"].concat([
          "-m",
          "comment",
          "--comment",
          RuleComment,
          "-j",
          "NOTRACK"
        ])
      }))
    )
  )

/**
 * A node start using LocalDNS on the AKS listener addresses.
 */
export const nodeStart: NodeStart.NodeStart = {
  nodeName: "node-a",
  apiServer: "https://10.0.0.1:6443",
  auth: { _tag: "Kubeconfig", path: "/var/lib/kubelet/kubeconfig" },
  localDns: { nodeListener, clusterListener }
}

/**
 * Our 8 rules exactly as `iptables -t raw -S` prints them.
 */
export const ourRules: ReadonlyArray<string> = [
  `-A PREROUTING -d ${nodeListener}/32 -p tcp -m tcp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A PREROUTING -d ${nodeListener}/32 -p udp -m udp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A PREROUTING -d ${clusterListener}/32 -p tcp -m tcp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A PREROUTING -d ${clusterListener}/32 -p udp -m udp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A OUTPUT -d ${nodeListener}/32 -p tcp -m tcp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A OUTPUT -d ${nodeListener}/32 -p udp -m udp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A OUTPUT -d ${clusterListener}/32 -p tcp -m tcp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`,
  `-A OUTPUT -d ${clusterListener}/32 -p udp -m udp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK`
]

/**
 * Rules of someone else in our chains, each as planted (chain, words) and as
 * listed: one matching exactly what ours match with another comment, one
 * without a comment, one whose comment only extends ours.
 */
export const foreignRules: ReadonlyArray<{
  readonly chain: string
  readonly spec: ReadonlyArray<string>
  readonly line: string
}> = [
  {
    chain: "OUTPUT",
    spec: [
      "-d",
      `${nodeListener}/32`,
      "-p",
      "udp",
      "-m",
      "udp",
      "--dport",
      "53",
      "-m",
      "comment",
      "--comment",
      "someone else",
      "-j",
      "NOTRACK"
    ],
    line: `-A OUTPUT -d ${nodeListener}/32 -p udp -m udp --dport 53 -m comment --comment "someone else" -j NOTRACK`
  },
  {
    chain: "PREROUTING",
    spec: ["-p", "tcp", "-m", "tcp", "--dport", "53", "-j", "NOTRACK"],
    line: "-A PREROUTING -p tcp -m tcp --dport 53 -j NOTRACK"
  },
  {
    chain: "OUTPUT",
    spec: [
      "-d",
      `${clusterListener}/32`,
      "-p",
      "tcp",
      "-m",
      "tcp",
      "--dport",
      "53",
      "-m",
      "comment",
      "--comment",
      "hostnode:localdns-v0",
      "-j",
      "NOTRACK"
    ],
    line: `-A OUTPUT -d ${clusterListener}/32 -p tcp -m tcp --dport 53 -m comment --comment "hostnode:localdns-v0" -j NOTRACK`
  }
]
