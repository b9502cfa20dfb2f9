import { assert, describe, it } from "@effect/vitest"
import { Deadline, DnsResolvers, LocalDns, type NodeStart } from "@hostnode/core"
import * as LocalDnsRules from "@hostnode/test/internal/localDnsRules"
import { Effect, Fiber, Layer, Logger, PlatformError, References, Schema, Sink, Stream } from "effect"
import { Dns, NetAddress } from "effect/net"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { TestClock } from "effect/testing"
import * as Listeners from "../src/internal/localdns/listeners.ts"
import * as Rules from "../src/internal/localdns/rules.ts"

const nodeStart: NodeStart.NodeStart = LocalDnsRules.nodeStart

// A spawner that answers from a script and records every argv it was given.
const scripted = (
  answer: (argv: ReadonlyArray<string>) => { exitCode?: number; stdout?: string; stderr?: string } | "ENOENT"
) => {
  const calls: Array<ReadonlyArray<string>> = []
  const encode = (s: string) => new TextEncoder().encode(s)
  const spawner = ChildProcessSpawner.make((command) =>
    Effect.suspend(() => {
      if (!ChildProcess.isStandardCommand(command)) return Effect.die("no pipes here")
      const argv = [command.command, ...command.args].map(String)
      calls.push(argv)
      const a = answer(argv)
      if (a === "ENOENT") {
        return Effect.fail(
          PlatformError.systemError({
            _tag: "NotFound",
            module: "ChildProcess",
            method: "spawn",
            pathOrDescriptor: command.command
          })
        )
      }
      return Effect.succeed(
        ChildProcessSpawner.makeHandle({
          pid: ChildProcessSpawner.ProcessId(1),
          exitCode: Effect.succeed(ChildProcessSpawner.ExitCode(a.exitCode ?? 0)),
          isRunning: Effect.succeed(false),
          kill: () => Effect.void,
          stdin: Sink.drain,
          stdout: Stream.make(encode(a.stdout ?? "")),
          stderr: Stream.make(encode(a.stderr ?? "")),
          all: Stream.empty,
          getInputFd: () => Sink.drain,
          getOutputFd: () => Stream.empty,
          unref: Effect.succeed(Effect.void)
        })
      )
    })
  )
  return { calls, layer: Layer.succeed(ChildProcessSpawner.ChildProcessSpawner, spawner) }
}

describe("LocalDns rules", () => {
  it("are our 8 rules, rendered exactly as iptables -S lists them", () => {
    const rules = Rules.rules(["169.254.10.10", "169.254.10.11"])
    assert.strictEqual(rules.length, 8)
    assert.deepStrictEqual(rules.map(Rules.renderRule).sort(), [...LocalDnsRules.ourRules].sort())
  })

  it("listed lines parse back into the argv words, quotes and escapes removed", () => {
    for (const rule of Rules.rules(["10.0.0.1"])) {
      assert.deepStrictEqual(Rules.parseRuleLine(Rules.renderRule(rule)), ["-A", rule.chain, ...rule.spec])
    }
    assert.deepStrictEqual(Rules.parseRuleLine('-A OUTPUT -m comment --comment "a \\"b\\" c\\\\" -j NOTRACK'), [
      "-A",
      "OUTPUT",
      "-m",
      "comment",
      "--comment",
      'a "b" c\\',
      "-j",
      "NOTRACK"
    ])
  })

  it("a rule is ours only with exactly our comment, in one of our chains", () => {
    const ours = ["-A", "OUTPUT", "-p", "udp", "-m", "comment", "--comment", "hostnode:localdns", "-j", "NOTRACK"]
    assert.isTrue(Rules.isOurRule(ours))
    assert.isFalse(Rules.isOurRule(ours.map((w) => (w === "hostnode:localdns" ? "hostnode:localdns-v0" : w))))
    assert.isFalse(Rules.isOurRule(ours.map((w) => (w === "OUTPUT" ? "INPUT" : w))))
    assert.isFalse(Rules.isOurRule(["-A", "OUTPUT", "-j", "hostnode:localdns"]))
  })
})

describe("LocalDns network phases, on a scripted host", () => {
  it.effect("setup on a clean host runs argv commands: the interface, its addresses, -C before each -A, then up", () =>
    Effect.gen(function* () {
      let created = false
      const host = scripted((argv) => {
        const [cmd, ...args] = argv
        if (cmd === "ip" && args[0] === "-j") {
          if (!created) return { exitCode: 1, stderr: 'Device "localdns" does not exist.\n' }
          return {
            stdout: '[{"ifindex":7,"ifname":"localdns","flags":["BROADCAST"],"linkinfo":{"info_kind":"dummy"}}]'
          }
        }
        if (cmd === "ip" && args[0] === "link" && args[1] === "add") created = true
        if (cmd === "iptables" && args.includes("-C")) {
          return { exitCode: 1, stderr: "iptables: Bad rule (does a matching rule exist in that chain?).\n" }
        }
        return {}
      })
      yield* LocalDns.setupLocalDnsNetwork(nodeStart).pipe(Effect.provide(host.layer))
      const commands = host.calls.map((c) => c.join(" "))
      assert.deepStrictEqual(commands.slice(0, 6), [
        "ip -j -d addr show dev localdns",
        "ip link add name localdns type dummy",
        "ip -j -d addr show dev localdns",
        "ip addr add 169.254.10.10/32 dev localdns",
        "ip addr add 169.254.10.11/32 dev localdns",
        "iptables -w -t raw -C OUTPUT -d 169.254.10.10/32 -p tcp -m tcp --dport 53 -m comment --comment hostnode:localdns -j NOTRACK"
      ])
      // What a failed setup could not take back comes last: bringing the interface up.
      assert.strictEqual(commands.at(-1), "ip link set dev localdns up")
      const iptables = commands.filter((c) => c.startsWith("iptables"))
      assert.strictEqual(iptables.filter((c) => c.includes(" -C ")).length, 8)
      assert.strictEqual(iptables.filter((c) => c.includes(" -A ")).length, 8)
      for (let i = 0; i < 16; i += 2) {
        assert.strictEqual(iptables[i]?.replace(" -C ", " -A "), iptables[i + 1], "each -A follows its -C")
      }
    })
  )

  it.effect("a command that fails is a LocalDnsError whose reason has the command, exit code and stderr", () =>
    Effect.gen(function* () {
      const host = scripted((argv) => {
        if (argv[1] === "-j") return { exitCode: 1, stderr: 'Device "localdns" does not exist.\n' }
        if (argv[1] === "link") return { exitCode: 2, stderr: "Error: Unknown device type.\n" }
        return {}
      })
      const e = yield* Effect.flip(LocalDns.setupLocalDnsNetwork(nodeStart).pipe(Effect.provide(host.layer)))
      assert.strictEqual(e._tag, "LocalDnsError")
      if (e.reason._tag !== "UnsupportedKind") return assert.fail(`reason ${e.reason._tag}`)
      assert.strictEqual(e.reason.command, "ip")
      assert.deepStrictEqual(e.reason.args, ["link", "add", "name", "localdns", "type", "dummy"])
      assert.strictEqual(e.reason.exitCode, 2)
      assert.include(e.message, "Unknown device type")

      const missing = scripted((argv) => (argv[0] === "iptables" ? "ENOENT" : {}))
      const e2 = yield* Effect.flip(LocalDns.cleanupHostNetwork().pipe(Effect.provide(missing.layer)))
      assert.strictEqual(e2.reason._tag, "CommandUnavailable")
      // it never ran: there is no exit code
      assert.notProperty(e2.reason, "exitCode")
      assert.include(e2.message, "could not run")
    })
  )

  it.effect("catchReason reaches each reason: a network step's, a listener's", () =>
    Effect.gen(function* () {
      const host = scripted((argv) =>
        argv[0] === "iptables" ? { exitCode: 4, stderr: "iptables: Permission denied (you must be root).\n" } : {}
      )
      const recovered = yield* LocalDns.cleanupHostNetwork().pipe(
        Effect.provide(host.layer),
        Effect.catchReason("LocalDnsError", "PermissionDenied", (reason) => Effect.succeed(reason.exitCode))
      )
      assert.strictEqual(recovered, 4)
      const { localDns: _, ...base } = nodeStart
      const same = { ...base, localDns: { nodeListener: "169.254.10.10", clusterListener: "169.254.10.10" } }
      const listener = yield* Listeners.decode(same).pipe(
        Effect.as("decoded"),
        Effect.catchReason("LocalDnsError", "SameAddress", (reason, error) =>
          Effect.succeed(`${reason.listener} ${reason.address}: ${error.message}`)
        )
      )
      assert.strictEqual(
        listener,
        `cluster 169.254.10.10: LocalDNS cluster listener "169.254.10.10" is the node listener's address too; the two must differ`
      )
      const refused = LocalDns.cleanupHostNetwork().pipe(
        // @ts-expect-error: no reason "LocalDnsNetworkError" (the old class is gone; its reasons are LocalDnsError's)
        Effect.catchReason("LocalDnsError", "LocalDnsNetworkError", () => Effect.void)
      )
      assert.isTrue(Effect.isEffect(refused))
    })
  )

  it.effect("cleanup deletes our listed rules by spec and only those; a missing interface is success", () =>
    Effect.gen(function* () {
      const listing = [
        "-P OUTPUT ACCEPT",
        '-A OUTPUT -d 169.254.10.12/32 -p udp -m udp --dport 53 -m comment --comment "hostnode:localdns" -j NOTRACK',
        '-A OUTPUT -d 169.254.10.10/32 -p udp -m udp --dport 53 -m comment --comment "someone else" -j NOTRACK',
        "-A PREROUTING -p tcp -m tcp --dport 53 -j NOTRACK",
        '-A INPUT -p tcp -m comment --comment "hostnode:localdns" -j NOTRACK'
      ].join("\n")
      const host = scripted((argv) => {
        if (argv.includes("-S")) return { stdout: `${listing}\n` }
        if (argv[1] === "link") return { exitCode: 1, stderr: 'Cannot find device "localdns"\n' }
        return {}
      })
      yield* LocalDns.cleanupHostNetwork().pipe(Effect.provide(host.layer))
      assert.deepStrictEqual(
        host.calls.map((c) => c.join(" ")),
        [
          "iptables -w -t raw -S",
          "iptables -w -t raw -D OUTPUT -d 169.254.10.12/32 -p udp -m udp --dport 53 -m comment --comment hostnode:localdns -j NOTRACK",
          "ip link del dev localdns"
        ]
      )
    })
  )
})

// ---------------------------------------------------------------------------
// awaitLocalDns against resolvers whose answers are scripted per attempt

// The scripted resolvers classify their own failures: each carries what it amounts to as its cause.
const responded = (detail: string) => new DnsResolvers.QueryFailure({ _tag: "Responded", detail })
const noResponse = (detail: string) => new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail })
const isQueryFailure = Schema.is(DnsResolvers.QueryFailure)
const classify = (e: Dns.DnsError): DnsResolvers.QueryFailure =>
  isQueryFailure(e.cause) ? e.cause : assert.fail(`not a scripted failure: ${e.message}`)
const dnsError = (failure: DnsResolvers.QueryFailure) =>
  new Dns.DnsError({ reason: "Unknown", method: "resolve", hostname: "health-check.localdns.local", cause: failure })

const resolvers = (answer: (address: string, attempt: number) => DnsResolvers.QueryFailure | "ok") => {
  const attempts = new Map<string, number>()
  const service = DnsResolvers.DnsResolvers.of({
    forServer: (address) =>
      Effect.succeed(
        Dns.make({
          lookup: () => Effect.succeed([]),
          resolve: () =>
            Effect.suspend(() => {
              const n = (attempts.get(address) ?? 0) + 1
              attempts.set(address, n)
              const a = answer(address, n)
              return a === "ok"
                ? Effect.succeed([
                    Dns.makeRecordUnsafe("A", {
                      address: NetAddress.ipFromStringUnsafe("10.0.0.1") as NetAddress.Ipv4Address
                    })
                  ])
                : Effect.fail(dnsError(a))
            })
        })
      ),
    classify
  })
  return { attempts, layer: Layer.succeed(DnsResolvers.DnsResolvers, service) }
}

describe("LocalDns.awaitLocalDns", () => {
  it.effect("waits on a Schedule until each listener answered, asking an answered one no more", () =>
    Effect.gen(function* () {
      const r = resolvers((address, n) =>
        address === "169.254.10.10"
          ? "ok"
          : n < 4
            ? noResponse("Refused (ECONNREFUSED)")
            : responded("NotFound (ENOTFOUND)")
      )
      const logged: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
      const capture = Logger.layer([Logger.map(Logger.formatStructured, (entry) => logged.push(entry))])
      const fiber = yield* LocalDns.awaitLocalDns(nodeStart, { timeout: "1 minute", interval: "1 second" }).pipe(
        Effect.provide([r.layer, capture]),
        Effect.provideService(References.MinimumLogLevel, "Debug"),
        Effect.forkChild
      )
      yield* TestClock.adjust("3 seconds")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(Object.fromEntries(r.attempts), { "169.254.10.10": 1, "169.254.10.11": 4 })
      // messages are sentences; the facts are annotations
      const last = logged.at(-1)
      assert.deepStrictEqual(
        [last?.message, last?.annotations.attempts],
        ["LocalDNS is answering on every listener", 4]
      )
      const rounds = logged.filter((m) => m.message === "LocalDNS not answering yet")
      assert.deepStrictEqual(
        rounds.map((m) => m.annotations.attempt),
        [1, 2, 3]
      )
      assert.isTrue(logged.every((m) => typeof m.message === "string"))
    })
  )

  it.effect("at the deadline fails with LocalDnsTimeout naming only the listeners that never answered", () =>
    Effect.gen(function* () {
      const r = resolvers((address) =>
        address === "169.254.10.10" ? responded("Refused (EREFUSED)") : noResponse("Timeout (ETIMEOUT)")
      )
      const fiber = yield* LocalDns.awaitLocalDns(nodeStart, { timeout: "10 seconds", interval: "1 second" }).pipe(
        Effect.provide(r.layer),
        Effect.flip,
        Effect.forkChild
      )
      yield* TestClock.adjust("1 minute")
      const e = yield* Fiber.join(fiber)
      if (e.reason._tag !== "Timeout") return assert.fail(`reason ${e.reason._tag}`)
      assert.deepStrictEqual(e.reason.listeners, [
        { name: "cluster", address: "169.254.10.11", reason: "Timeout (ETIMEOUT)" }
      ])
      assert.deepStrictEqual(e.reason.answered, ["169.254.10.10"])
      // rounds at 0, 1, ..., 10 s: the deadline bounds the schedule
      assert.strictEqual(e.reason.attempts, 11)
      assert.strictEqual(r.attempts.get("169.254.10.11"), 11)
      assert.include(e.message, "cluster listener 169.254.10.11")
    })
  )

  it.effect("the deadline in effect bounds the wait: it ends by then with its own Timeout, not cut off", () =>
    Effect.gen(function* () {
      const r = resolvers(() => noResponse("Refused (ECONNREFUSED)"))
      const fiber = yield* LocalDns.awaitLocalDns(nodeStart, { interval: "1 second" }).pipe(
        Deadline.within("3 seconds"),
        Effect.provide(r.layer),
        Effect.flip,
        Effect.forkChild
      )
      yield* TestClock.adjust("10 seconds")
      const e = yield* Fiber.join(fiber)
      if (e.reason._tag !== "Timeout") return assert.fail(`reason ${e.reason._tag}`)
      // rounds at 0, 1, 2, 3 s: the deadline's 3 seconds, not the default 2 minutes
      assert.strictEqual(e.reason.attempts, 4)
      assert.deepStrictEqual(
        e.reason.listeners.map((l) => l.address),
        ["169.254.10.10", "169.254.10.11"]
      )
    })
  )

  it.effect("a probe that hangs counts as no answer after the probe timeout", () =>
    Effect.gen(function* () {
      const service = DnsResolvers.DnsResolvers.of({
        forServer: () => Effect.succeed(Dns.make({ lookup: () => Effect.succeed([]), resolve: () => Effect.never })),
        classify
      })
      const fiber = yield* LocalDns.awaitLocalDns(nodeStart, {
        timeout: "3 seconds",
        interval: "1 second",
        probeTimeout: "500 millis"
      }).pipe(Effect.provideService(DnsResolvers.DnsResolvers, service), Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("1 minute")
      const e = yield* Fiber.join(fiber)
      if (e.reason._tag !== "Timeout") return assert.fail(`reason ${e.reason._tag}`)
      assert.deepStrictEqual(
        e.reason.listeners.map((l) => [l.name, l.reason]),
        [
          ["node", "no answer within 500ms"],
          ["cluster", "no answer within 500ms"]
        ]
      )
    })
  )

  it.effect("a node without LocalDNS has nothing to wait for", () =>
    Effect.gen(function* () {
      const r = resolvers(() => noResponse("Timeout (ETIMEOUT)"))
      const { localDns: _, ...without } = nodeStart
      yield* LocalDns.awaitLocalDns(without).pipe(Effect.provide(r.layer))
      assert.strictEqual(r.attempts.size, 0)
    })
  )
})
