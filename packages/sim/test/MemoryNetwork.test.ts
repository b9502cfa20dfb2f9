/**
 * The simulated network on a simulated node: the LocalDNS and GoalStateSource
 * conformance suites (which the real host passes in a private network
 * namespace with ip, iptables and dnsmasq, and on the real file system), the
 * DNS semantics `awaitLocalDns` relies on, and the failures a real host can
 * give the LocalDNS phases (a missing table or link kind, a refused command).
 * That the `ip` and `iptables` texts match the real tools is the differential
 * test's job (MemoryNetworkDifferential.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { DnsResolvers, LocalDns } from "@hostnode/core"
import { LocalDnsFixture, MemoryNetwork, MemoryNode } from "@hostnode/sim"
import { GoalStateConformance, LocalDnsConformance } from "@hostnode/test/conformance"
import * as LocalDnsRules from "@hostnode/test/internal/localDnsRules"
import { Cause, Effect, Exit, Fiber, Scope } from "effect"
import { Dns, NetAddress } from "effect/net"
import { TestClock } from "effect/testing"
import { saveString, saveWords } from "../src/internal/network/iptables.ts"

LocalDnsConformance.suite("MemoryNode", MemoryNode.layer())
GoalStateConformance.suite("MemoryNode", MemoryNode.layer())

const { nodeStart } = LocalDnsRules
const onNode = <A, E>(effect: Effect.Effect<A, E, MemoryNode.Services | Scope.Scope>, options?: MemoryNode.Options) =>
  Effect.provide(effect, MemoryNode.layer(options))

const ip = (...args: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.service(MemoryNetwork.MemoryNetwork), (n) => n.admin("ip", args))

/** The code of the error a query failed with (`EREFUSED`, ...), or "answer". */
const outcome = (effect: Effect.Effect<unknown, Dns.DnsError>) =>
  Effect.map(Effect.result(effect), (r) =>
    r._tag === "Success" ? "answer" : `${r.failure.reason}:${(r.failure.cause as { code?: string }).code}`
  )

describe("DNS on the simulated network", () => {
  it.effect(
    "a listener answers when its address is on a link and a server runs on it; otherwise refused or silent",
    () =>
      onNode(
        Effect.gen(function* () {
          const network = yield* MemoryNetwork.MemoryNetwork
          const resolvers = yield* DnsResolvers.DnsResolvers
          yield* ip("link", "add", "name", "localdns", "type", "dummy")
          yield* ip("addr", "add", "169.254.10.10/32", "dev", "localdns")
          const dns = yield* resolvers.forServer("169.254.10.10", { timeout: "2 seconds" })
          const elsewhere = yield* resolvers.forServer("169.254.10.99", { timeout: "2 seconds" })
          // an address of the host where nothing listens refuses at once
          assert.strictEqual(yield* outcome(dns.resolve("health-check.localdns.local", "A")), "Refused:ECONNREFUSED")
          const record = Dns.makeRecordUnsafe("A", { address: NetAddress.ipFromStringUnsafe("10.0.0.7") as never })
          const server = yield* Effect.scoped(
            Effect.gen(function* () {
              const server = yield* network.startDnsServer(["169.254.10.10"], { records: { "db.internal": [record] } })
              // dnsmasq --no-resolv refuses what it has no records for: still an answer for awaitLocalDns
              const refused = yield* Effect.flip(dns.resolve("health-check.localdns.local", "A"))
              assert.strictEqual(refused.reason, "Refused")
              assert.deepStrictEqual(
                resolvers.classify(refused),
                new DnsResolvers.QueryFailure({ _tag: "Responded", detail: "Refused (EREFUSED)" })
              )
              assert.deepStrictEqual(yield* dns.resolve("db.internal.", "A"), [record])
              assert.strictEqual(yield* outcome(dns.resolve("db.internal", "AAAA")), "NotFound:ENODATA")
              // the listener's address going away silences it: the query times out
              yield* ip("addr", "del", "169.254.10.10/32", "dev", "localdns")
              const fiber = yield* Effect.forkChild(outcome(dns.resolve("db.internal", "A")))
              yield* TestClock.adjust("2 seconds")
              assert.strictEqual(yield* Fiber.join(fiber), "Timeout:ETIMEOUT")
              return server
            })
          )
          assert.isFalse(yield* server.running)
          // an address the host does not have: no answer before the timeout
          const fiber = yield* Effect.forkChild(outcome(elsewhere.resolve("x", "A")))
          yield* TestClock.adjust("1999 millis")
          assert.isUndefined(fiber.pollUnsafe())
          yield* TestClock.adjust("1 millis")
          assert.strictEqual(yield* Fiber.join(fiber), "Timeout:ETIMEOUT")
          assert.deepStrictEqual(
            (yield* network.dnsQueries).map((q) => q.outcome),
            ["ECONNREFUSED", "EREFUSED", "answer", "ENODATA", "ETIMEOUT", "ETIMEOUT"]
          )
        })
      )
  )

  it.effect("closing the resolver's scope cancels its pending queries", () =>
    onNode(
      Effect.gen(function* () {
        const resolvers = yield* DnsResolvers.DnsResolvers
        const scope = yield* Scope.make()
        const dns = yield* resolvers.forServer("192.0.2.1", { timeout: "1 minute" }).pipe(Scope.provide(scope))
        const fiber = yield* Effect.forkChild(outcome(dns.resolve("x", "A")))
        yield* Effect.yieldNow
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual(yield* Fiber.join(fiber), "Unknown:ECANCELLED")
      })
    )
  )

  it.effect("a DNS server cannot listen on an address the host does not have, like dnsmasq", () =>
    onNode(
      Effect.gen(function* () {
        const network = yield* MemoryNetwork.MemoryNetwork
        const e = yield* Effect.flip(Effect.scoped(network.startDnsServer(["169.254.10.10"])))
        assert.strictEqual(e.reason.address, "169.254.10.10")
        assert.include(e.message, "Cannot assign requested address")
        const fx = yield* LocalDnsFixture.LocalDnsFixture
        const exit = yield* Effect.exit(Effect.scoped(fx.dnsServer(["169.254.10.10"])))
        assert.isTrue(Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof LocalDnsFixture.LocalDnsFixtureError)
      })
    )
  )

  it.effect("a silent server (up but never answering) makes awaitLocalDns time out naming both listeners", () =>
    onNode(
      Effect.gen(function* () {
        const network = yield* MemoryNetwork.MemoryNetwork
        yield* LocalDns.setupLocalDnsNetwork(nodeStart)
        yield* network.startDnsServer(["169.254.10.10", "169.254.10.11"], { unknownNames: "silent" })
        const fiber = yield* Effect.forkChild(
          Effect.flip(LocalDns.awaitLocalDns(nodeStart, { timeout: "3 seconds", probeTimeout: "500 millis" }))
        )
        yield* TestClock.adjust("10 seconds")
        const e = yield* Fiber.join(fiber)
        if (e.reason._tag !== "Timeout") return assert.fail(`reason ${e.reason._tag}`)
        assert.deepStrictEqual(
          e.reason.listeners.map((l) => [l.address, l.reason]),
          [
            ["169.254.10.10", "Timeout (ETIMEOUT)"],
            ["169.254.10.11", "Timeout (ETIMEOUT)"]
          ]
        )
      }).pipe(Effect.scoped)
    )
  )
})

describe("what a real host can make the LocalDNS phases meet", () => {
  it.effect("a kernel without dummy links: setup fails with UnsupportedKind and says what ip said", () =>
    onNode(
      Effect.gen(function* () {
        const e = yield* Effect.flip(LocalDns.setupLocalDnsNetwork(nodeStart))
        if (e.reason._tag !== "UnsupportedKind") return assert.fail(`reason ${e.reason._tag}`)
        assert.strictEqual(e.reason.stderr, "Error: Unknown device type.\n")
        assert.deepStrictEqual(e.reason.args, ["link", "add", "name", "localdns", "type", "dummy"])
        yield* LocalDns.setupLocalDnsNetwork(nodeStart, { interfaceKind: "bridge" })
        const link = yield* (yield* MemoryNetwork.MemoryNetwork).link("localdns")
        assert.strictEqual(link?.kind, "bridge")
      }),
      { network: { unsupportedKinds: ["dummy"] } }
    )
  )

  // iptables-nft 1.8.9 says "iptables v1.8.9 (nf_tables): table 'raw' does not
  // exist" (exit 3; checked with the real tool), which must classify as
  // TableUnavailable, and cleanup must still remove the link.
  it.effect("a kernel without the raw table: setup fails with TableUnavailable and removes the link it made", () =>
    onNode(
      Effect.gen(function* () {
        const e = yield* Effect.flip(LocalDns.setupLocalDnsNetwork(nodeStart))
        if (e.reason._tag !== "TableUnavailable") return assert.fail(`reason ${e.reason._tag}`)
        assert.strictEqual(e.reason.exitCode, 3)
        const network = yield* MemoryNetwork.MemoryNetwork
        // The link this setup created is gone again: a failed setup leaves the host as it found it.
        assert.isUndefined(yield* network.link("localdns"))
        yield* LocalDns.cleanupHostNetwork()
        assert.isUndefined(yield* network.link("localdns"))
      }),
      { network: { missingTables: ["raw"] } }
    )
  )

  it.effect("an injected refusal of iptables is classified PermissionDenied; the fault fires once", () =>
    onNode(
      Effect.gen(function* () {
        const network = yield* MemoryNetwork.MemoryNetwork
        yield* network.failCommand({
          command: "iptables",
          when: (args) => args.includes("-A"),
          exitCode: 4,
          stderr:
            "iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)"
        })
        const e = yield* Effect.flip(LocalDns.setupLocalDnsNetwork(nodeStart))
        if (e.reason._tag !== "PermissionDenied") return assert.fail(`reason ${e.reason._tag}`)
        assert.strictEqual(e.reason.exitCode, 4)
        yield* LocalDns.setupLocalDnsNetwork(nodeStart)
        assert.deepStrictEqual([...(yield* network.rules("raw"))].sort(), [...LocalDnsRules.ourRules].sort())
        // the phases ran their commands through the node's command line, nsenter-free
        const commands = (yield* (yield* MemoryNode.MemoryNode).invocations).map((i) => i.command)
        assert.includeMembers(commands, ["ip", "iptables"])
      })
    )
  )
})

describe("DnsServerError", () => {
  it.effect("catchReason reaches its reason", () =>
    Effect.gen(function* () {
      const failing = Effect.fail(
        new MemoryNetwork.DnsServerError({
          reason: new MemoryNetwork.AddressNotAvailable({ address: "169.254.10.10" })
        })
      )
      const address = yield* failing.pipe(
        Effect.catchReason("MemoryDnsServerError", "AddressNotAvailable", (reason) => Effect.succeed(reason.address))
      )
      assert.strictEqual(address, "169.254.10.10")
      // @ts-expect-error: DnsServerError has no reason tagged "Refused"
      void failing.pipe(Effect.catchReason("MemoryDnsServerError", "Refused", () => Effect.void))
    })
  )
})

describe("iptables -S lines", () => {
  it("saveWords reads back what saveString quoted, comments with blanks, quotes and backslashes included", () => {
    for (const comment of ["hostnode:localdns", 'a "b" c\\', "it's", "plain"]) {
      const line = `-A OUTPUT -d 169.254.10.10/32 -m comment --comment ${saveString(comment)} -j NOTRACK`
      assert.deepStrictEqual(saveWords(line), [
        "-A",
        "OUTPUT",
        "-d",
        "169.254.10.10/32",
        "-m",
        "comment",
        "--comment",
        comment,
        "-j",
        "NOTRACK"
      ])
    }
  })
})
