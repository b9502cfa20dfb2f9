import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DnsResolvers } from "@hostnode/core"
import { NodeDns } from "@hostnode/node"
import { Gate, LocalDnsFixture } from "@hostnode/test"
import { LocalDnsConformance } from "@hostnode/test/conformance"
import { Effect, Layer } from "effect"
import { Dns } from "effect/net"

const dnsError = (reason: Dns.DnsErrorReason, code: string) =>
  new Dns.DnsError({ reason, method: "resolve", hostname: "health-check.localdns.local", cause: { code } })

describe("NodeDns: classify", () => {
  it.effect("any DNS response counts; a timeout or an unreachable server does not", () =>
    Effect.gen(function* () {
      const { classify } = yield* DnsResolvers.DnsResolvers
      const responded = (e: Dns.DnsError) => classify(e)._tag === "Responded"
      assert.isTrue(responded(dnsError("NotFound", "ENOTFOUND")))
      assert.isTrue(responded(dnsError("NotFound", "ENODATA")))
      assert.isTrue(responded(dnsError("ServerFailure", "ESERVFAIL")))
      assert.isTrue(responded(dnsError("Refused", "EREFUSED")))
      assert.isTrue(responded(dnsError("InvalidResponse", "EFORMERR")))
      assert.isTrue(responded(dnsError("Unsupported", "ENOTIMP")))
      assert.isFalse(responded(dnsError("Refused", "ECONNREFUSED")))
      assert.isFalse(responded(dnsError("Timeout", "ETIMEOUT")))
      assert.isFalse(responded(dnsError("Unknown", "ECANCELLED")))
      assert.isFalse(responded(new Dns.DnsError({ reason: "Refused", method: "resolve", hostname: "x" })))
    }).pipe(Effect.provide(NodeDns.layer))
  )

  it.effect("the detail is the reason and the resolver's code, node:dns's DNS_ prefix dropped", () =>
    Effect.gen(function* () {
      const { classify } = yield* DnsResolvers.DnsResolvers
      assert.strictEqual(classify(dnsError("Refused", "ECONNREFUSED")).detail, "Refused (ECONNREFUSED)")
      assert.strictEqual(classify(dnsError("NotFound", "DNS_ENOTFOUND")).detail, "NotFound (ENOTFOUND)")
      assert.strictEqual(
        classify(new Dns.DnsError({ reason: "Timeout", method: "resolve", hostname: "x" })).detail,
        "Timeout"
      )
    }).pipe(Effect.provide(NodeDns.layer))
  )
})

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
