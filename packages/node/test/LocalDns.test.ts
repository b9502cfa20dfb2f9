import { NodeServices } from "@effect/platform-node"
import { describe } from "@effect/vitest"
import { NodeDns } from "@hostnode/node"
import { Gate, LocalDnsFixture } from "@hostnode/test"
import { LocalDnsConformance } from "@hostnode/test/conformance"
import { Layer } from "effect"

const gate = Gate.check("LocalDNS (real ip, iptables and dnsmasq)", [
  "root",
  "private-net-namespace",
  { command: "ip", args: ["-V"] },
  { command: "iptables", args: ["--version"] },
  { command: "dnsmasq", args: ["--version"] }
])

describe.skipIf(gate.skip)("LocalDNS on a real network namespace", () => {
  LocalDnsConformance.suite(
    "ip, iptables and dnsmasq in the test namespace, NodeDns",
    Layer.mergeAll(LocalDnsFixture.layerReal({ interfaceKind: "bridge" }), NodeDns.layer).pipe(
      Layer.provideMerge(NodeServices.layer)
    )
  )
})
