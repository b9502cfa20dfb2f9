/**
 * The conformance suite of the LocalDNS phases (`setupLocalDnsNetwork`,
 * `cleanupHostNetwork`, `awaitLocalDns`, and the `Hooks` that wire them):
 * what the real host does in a private network namespace with real `ip`,
 * `iptables` and `dnsmasq`, and what the simulated host must do the same way.
 * A function taking a Layer, so every host runs the very same tests.
 *
 * The tests share one host (one network namespace) and run one after the
 * other; each starts from and leaves a clean slate (no LocalDNS interface, no
 * rule of ours), and rules of someone else are planted next to ours to prove
 * they survive everything.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { AgentConfig, type DnsResolvers, Hooks, LocalDns } from "@hostnode/core"
import { LocalDnsFixture } from "@hostnode/sim"
import { Effect, Fiber, type Layer, Logger, References, Schedule } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as FaultyCommands from "./FaultyCommands.ts"
import { clusterListener, foreignRules, nodeListener, nodeStart, ourRules, rulesFor } from "./internal/localDnsRules.ts"

const iface = "localdns"

const sorted = (xs: ReadonlyArray<string>): Array<string> => [...xs].sort()

/** A clean slate, the foreign rules planted, and the listing before any rule of ours: what every network test starts from. */
const prepare = (name = iface) =>
  Effect.gen(function* () {
    const fx = yield* LocalDnsFixture.LocalDnsFixture
    yield* fx.cleanSlate(name)
    const baseline = yield* fx.rawRules
    for (const r of foreignRules) yield* fx.addRule(r.chain, r.spec)
    const others = [...baseline, ...foreignRules.map((r) => r.line)]
    assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others), "planted rules are listed as expected")
    return { fx, others }
  })

const expectNetwork = (others: ReadonlyArray<string>, name = iface) =>
  Effect.gen(function* () {
    const fx = yield* LocalDnsFixture.LocalDnsFixture
    const link = yield* fx.link(name)
    assert.isDefined(link, `${name} exists`)
    assert.strictEqual(link?.kind, fx.interfaceKind)
    assert.isTrue(link?.up, `${name} is up`)
    assert.deepStrictEqual(link?.ipv4, [`${nodeListener}/32`, `${clusterListener}/32`])
    assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted([...others, ...ourRules]))
    return link
  })

const setup = Effect.gen(function* () {
  const fx = yield* LocalDnsFixture.LocalDnsFixture
  yield* LocalDns.setupLocalDnsNetwork(nodeStart, { interfaceKind: fx.interfaceKind })
})

// Logs of awaitLocalDns's failed rounds, counted to start a server "late".
const countingRounds = (counter: { n: number }) =>
  Logger.layer([
    Logger.make(({ message }) => {
      const parts = Array.isArray(message) ? message : [message]
      if (parts.includes("LocalDNS not answering yet")) counter.n++
    })
  ])

/**
 * Registers the suite under `name`. `hostLayer` provides the spawner the
 * phases run `ip` and `iptables` through, the `DnsResolvers` the wait asks
 * with, and a `LocalDnsFixture` on the same host.
 *
 * @category conformance
 * @since 0.1.0
 */
export const suite = (
  name: string,
  hostLayer: Layer.Layer<
    ChildProcessSpawner.ChildProcessSpawner | DnsResolvers.DnsResolvers | LocalDnsFixture.LocalDnsFixture
  >
): void =>
  layer(hostLayer, { excludeTestServices: true })(`LocalDNS conformance: ${name}`, (it) => {
    it.effect(
      "setup: the interface carries exactly both /32 listeners and is up; raw holds our 8 rules next to everyone else's",
      () =>
        Effect.gen(function* () {
          const { others } = yield* prepare()
          yield* setup
          yield* expectNetwork(others)
        })
    )

    it.effect("setup again changes nothing: the same interface, still exactly 8 rules of ours", () =>
      Effect.gen(function* () {
        const { fx, others } = yield* prepare()
        yield* setup
        const first = yield* expectNetwork(others)
        // a rule planted after ours: a second run that appended and then
        // deleted (even its own duplicates) would reorder the chain
        const late = { chain: "OUTPUT", spec: ["-p", "udp", "-m", "udp", "--dport", "5353", "-j", "NOTRACK"] }
        yield* fx.addRule(late.chain, late.spec)
        const withLate = [...others, "-A OUTPUT -p udp -m udp --dport 5353 -j NOTRACK"]
        const listing = yield* fx.rawRules
        yield* setup
        const second = yield* expectNetwork(withLate)
        assert.strictEqual(second?.index, first?.index, "the interface was reused, not recreated")
        assert.deepStrictEqual(yield* fx.rawRules, listing, "the listing is unchanged, order included")
      })
    )

    it.effect(
      "an existing interface of the same kind is reused with exactly the listener addresses, and brought up",
      () =>
        Effect.gen(function* () {
          const { fx, others } = yield* prepare()
          yield* fx.createLink(iface, {
            sameKind: true,
            ipv4: ["10.99.0.1/32", `${nodeListener}/32`, "10.98.0.1/24"],
            up: false
          })
          const before = yield* fx.link(iface)
          yield* setup
          const after = yield* expectNetwork(others)
          assert.strictEqual(after?.index, before?.index)
        })
    )

    it.effect("an existing interface of another kind is recreated as the configured kind", () =>
      Effect.gen(function* () {
        const { fx, others } = yield* prepare()
        yield* fx.createLink(iface, { sameKind: false, ipv4: [`${clusterListener}/32`], up: true })
        const before = yield* fx.link(iface)
        assert.notStrictEqual(before?.kind, fx.interfaceKind)
        yield* setup
        yield* expectNetwork(others)
      })
    )

    it.effect("rules of ours for another address, and a duplicate of ours, are removed by setup", () =>
      Effect.gen(function* () {
        const { fx, others } = yield* prepare()
        const stale = rulesFor(["169.254.10.12"])
        for (const r of stale) yield* fx.addRule(r.chain, r.spec)
        const [dup] = rulesFor([nodeListener])
        if (dup !== undefined) {
          yield* fx.addRule(dup.chain, dup.spec)
          yield* fx.addRule(dup.chain, dup.spec)
        }
        yield* setup
        yield* expectNetwork(others)
      })
    )

    it.effect("listener addresses are decoded before any command runs: a bad one changes nothing", () =>
      Effect.gen(function* () {
        const { fx, others } = yield* prepare()
        const bad: ReadonlyArray<readonly [string, string, string]> = [
          ["not-an-ip", clusterListener, "node"],
          // leading zeros: some tools read 010 as octal 8
          ["169.254.010.10", clusterListener, "node"],
          ["999.1.1.1", clusterListener, "node"],
          [nodeListener, "10.0.0.53", "cluster"],
          [nodeListener, nodeListener, "cluster"]
        ]
        for (const [n, c, which] of bad) {
          const ran: Array<string> = []
          const record = FaultyCommands.layer((command, args) => {
            ran.push([command, ...args].join(" "))
            return undefined
          })
          const start = { ...nodeStart, localDns: { nodeListener: n, clusterListener: c } }
          const e = yield* Effect.flip(
            LocalDns.setupLocalDnsNetwork(start, { interfaceKind: fx.interfaceKind }).pipe(Effect.provide(record))
          )
          const expected = n === c ? "SameAddress" : "InvalidListener"
          assert.strictEqual(e.reason._tag, expected, `${n} ${c}`)
          if (e.reason._tag === "InvalidListener" || e.reason._tag === "SameAddress") {
            assert.strictEqual(e.reason.listener, which)
          }
          const w = yield* Effect.flip(LocalDns.awaitLocalDns(start, { timeout: "1 second" }))
          assert.strictEqual(w.reason._tag, expected, `${n} ${c}`)
          assert.deepStrictEqual(ran, [], "no command ran")
          assert.isUndefined(yield* fx.link(iface))
          assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
        }
      })
    )

    it.effect("a setup that fails part-way removes the interface, addresses and rules it made itself", () =>
      Effect.gen(function* () {
        const { fx, others } = yield* prepare()
        const failAdd = (n: number) =>
          FaultyCommands.layer(
            FaultyCommands.nth(n, (command, args) => command === "iptables" && args.includes("-A"), {
              exitCode: 4,
              stderr: "iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied\n"
            })
          )
        // No interface before: the one it created goes again, and so do the rules it added.
        const e = yield* Effect.flip(
          LocalDns.setupLocalDnsNetwork(nodeStart, { interfaceKind: fx.interfaceKind }).pipe(Effect.provide(failAdd(3)))
        )
        assert.strictEqual(e.reason._tag, "PermissionDenied")
        assert.isUndefined(yield* fx.link(iface))
        assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
        // An interface that was there stays, down, with its own addresses; the listener address it lacked is gone again.
        yield* fx.createLink(iface, { sameKind: true, ipv4: [`${nodeListener}/32`, "10.99.0.1/32"], up: false })
        const before = yield* fx.link(iface)
        const again = yield* Effect.flip(
          LocalDns.setupLocalDnsNetwork(nodeStart, { interfaceKind: fx.interfaceKind }).pipe(Effect.provide(failAdd(2)))
        )
        assert.strictEqual(again.reason._tag, "PermissionDenied")
        const after = yield* fx.link(iface)
        assert.strictEqual(after?.index, before?.index)
        assert.deepStrictEqual(sorted(after?.ipv4 ?? []), sorted(before?.ipv4 ?? []))
        assert.isFalse(after?.up)
        assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
        // And a setup that succeeds afterwards is complete.
        yield* setup
        yield* expectNetwork(others)
      })
    )

    it.effect("cleanup removes our rules and the interface; again succeeds; nobody else's rule is touched", () =>
      Effect.gen(function* () {
        const { fx, others } = yield* prepare()
        yield* setup
        yield* expectNetwork(others)
        // a rule of ours for an address no node start names any more goes too
        const [stale] = rulesFor(["169.254.10.12"])
        if (stale !== undefined) yield* fx.addRule(stale.chain, stale.spec)
        yield* LocalDns.cleanupHostNetwork()
        assert.isUndefined(yield* fx.link(iface))
        assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
        yield* LocalDns.cleanupHostNetwork()
        assert.isUndefined(yield* fx.link(iface))
        assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
      })
    )

    it.effect(
      "Hooks: the default phases use the configured interface name and kind; a node without LocalDNS gets nothing",
      () =>
        Effect.gen(function* () {
          const { fx, others } = yield* prepare("ldns-hooks")
          const config = yield* AgentConfig.decode({
            localDns: { interfaceName: "ldns-hooks", interfaceKind: fx.interfaceKind }
          })
          const hooks = Hooks.make(config)
          const { localDns: _, ...withoutLocalDns } = nodeStart
          yield* hooks.setupLocalDnsNetwork(withoutLocalDns)
          assert.isUndefined(yield* fx.link("ldns-hooks"))
          assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
          yield* hooks.setupLocalDnsNetwork(nodeStart)
          yield* expectNetwork(others, "ldns-hooks")
          assert.isUndefined(yield* fx.link(iface), "the default name is not used")
          yield* hooks.cleanupHostNetwork()
          assert.isUndefined(yield* fx.link("ldns-hooks"))
          assert.deepStrictEqual(sorted(yield* fx.rawRules), sorted(others))
        })
    )

    it.effect(
      "awaitLocalDns succeeds once a DNS server answers on both listeners; the server is gone with its scope",
      () =>
        Effect.gen(function* () {
          const { fx } = yield* prepare()
          yield* setup
          const server = yield* Effect.scoped(
            Effect.gen(function* () {
              const server = yield* fx.dnsServer([nodeListener, clusterListener])
              yield* LocalDns.awaitLocalDns(nodeStart, { timeout: "10 seconds", interval: "100 millis" })
              assert.isTrue(yield* server.running)
              return server
            })
          )
          assert.isFalse(yield* server.running, `the DNS server (pid ${server.pid}) is gone`)
        })
    )

    it.effect("with the server stopped, a short deadline fails with a Timeout naming both listeners", () =>
      Effect.gen(function* () {
        const { fx } = yield* prepare()
        yield* setup
        const server = yield* fx.dnsServer([nodeListener, clusterListener])
        yield* LocalDns.awaitLocalDns(nodeStart, { timeout: "10 seconds", interval: "100 millis" })
        yield* server.stop
        assert.isFalse(yield* server.running)
        const error = yield* Effect.flip(
          LocalDns.awaitLocalDns(nodeStart, {
            timeout: "1500 millis",
            interval: "200 millis",
            probeTimeout: "300 millis"
          })
        )
        assert.strictEqual(error.reason._tag, "Timeout")
        if (error.reason._tag !== "Timeout") return
        assert.deepStrictEqual(
          error.reason.listeners.map((l) => [l.name, l.address]),
          [
            ["node", nodeListener],
            ["cluster", clusterListener]
          ]
        )
        assert.deepStrictEqual(error.reason.answered, [])
        assert.isAbove(error.reason.attempts, 1)
        assert.include(error.message, nodeListener)
        assert.include(error.message, clusterListener)
      })
    )

    it.effect("a server on the node listener only: the timeout names the cluster listener alone", () =>
      Effect.gen(function* () {
        const { fx } = yield* prepare()
        yield* setup
        yield* fx.dnsServer([nodeListener])
        const error = yield* Effect.flip(
          LocalDns.awaitLocalDns(nodeStart, { timeout: "1 second", interval: "200 millis", probeTimeout: "300 millis" })
        )
        assert.strictEqual(error.reason._tag, "Timeout")
        if (error.reason._tag !== "Timeout") return
        assert.deepStrictEqual(
          error.reason.listeners.map((l) => [l.name, l.address]),
          [["cluster", clusterListener]]
        )
        assert.deepStrictEqual(error.reason.answered, [nodeListener])
      })
    )

    it.effect("a server started late, after failed attempts: awaitLocalDns succeeds", () =>
      Effect.gen(function* () {
        const { fx } = yield* prepare()
        yield* setup
        const rounds = { n: 0 }
        const waiting = yield* LocalDns.awaitLocalDns(nodeStart, {
          timeout: "20 seconds",
          interval: "100 millis",
          probeTimeout: "300 millis"
        }).pipe(
          Effect.provide(countingRounds(rounds)),
          Effect.provideService(References.MinimumLogLevel, "Debug"),
          Effect.forkChild
        )
        yield* Effect.sync(() => rounds.n).pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (n) => n >= 3 })
        )
        yield* fx.dnsServer([nodeListener, clusterListener])
        yield* Fiber.join(waiting)
        assert.isAtLeast(rounds.n, 3)
      })
    )
  })
