import { assert, describe, it } from "@effect/vitest"
import { AgentConfig, DnsResolvers, Hooks, HostPath, LocalDns, type NodeStart } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import { Effect, Fiber, FileSystem, Layer } from "effect"
import { Dns } from "effect/net"
import { ChildProcessSpawner } from "effect/process"
import { TestClock } from "effect/testing"

const nodeStart: NodeStart.NodeStart = {
  nodeName: "n",
  apiServer: "https://10.0.0.1:6443",
  auth: { _tag: "Kubeconfig", path: "/k" },
  localDns: { nodeListener: "169.254.10.10", clusterListener: "169.254.10.11" }
}

// A spawner that must never be used: the overrides replace every command.
const noCommands = Layer.succeed(
  ChildProcessSpawner.ChildProcessSpawner,
  ChildProcessSpawner.make((command) => Effect.die(`unexpected command ${JSON.stringify(command)}`))
)

describe("Hooks", () => {
  it.effect(
    "snapshotDir is the override when set, else the name in the agent configuration directory below hostRoot",
    () =>
      Effect.gen(function* () {
        const config = yield* AgentConfig.decode({})
        // Roots are decoded (they must exist): two directories of a simulated host.
        const fs = yield* FileSystem.FileSystem
        yield* fs.makeDirectory("/srv/root", { recursive: true })
        yield* fs.makeDirectory("/r")
        const r = yield* HostPath.decodeRoot("/r")
        assert.strictEqual(Hooks.make(config).snapshotDir("confsnap"), "/etc/hostnode/confsnap")
        assert.strictEqual(
          Hooks.make(config, { hostRoot: yield* HostPath.decodeRoot("/srv/root/") }).snapshotDir("confsnap"),
          "/srv/root/etc/hostnode/confsnap"
        )
        assert.strictEqual(Hooks.make(config, { hostRoot: r }).snapshotDir("../../x"), "/r/x", "never above the root")
        assert.strictEqual(
          Hooks.make(config, { hostRoot: r, configSnapshotDir: "/custom" }).snapshotDir("confsnap"),
          "/custom"
        )
        assert.strictEqual(Hooks.make(config, { configSnapshotDir: "" }).snapshotDir("s"), "/etc/hostnode/s")
      }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("network overrides replace the real phases", () =>
    Effect.gen(function* () {
      const config = yield* AgentConfig.decode({})
      const seen: Array<string> = []
      const hooks = Hooks.make(config, {
        setupNetwork: (ns) => Effect.sync(() => seen.push(`setup ${ns.nodeName}`)),
        cleanupNetwork: () => Effect.sync(() => seen.push("cleanup")),
        waitLocalDns: (ns) => Effect.sync(() => seen.push(`wait ${ns.localDns?.nodeListener}`))
      })
      yield* hooks.setupLocalDnsNetwork(nodeStart).pipe(Effect.provide(noCommands))
      yield* hooks.cleanupHostNetwork().pipe(Effect.provide(noCommands))
      yield* hooks.awaitLocalDns(nodeStart).pipe(
        Effect.provideService(DnsResolvers.DnsResolvers, {
          forServer: () => Effect.die("no DNS"),
          classify: () => new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail: "no DNS" })
        })
      )
      assert.deepStrictEqual(seen, ["setup n", "cleanup", "wait 169.254.10.10"])
      const failing = Hooks.make(config, {
        setupNetwork: () =>
          Effect.fail(
            new LocalDns.LocalDnsError({
              reason: new LocalDns.Failure({
                _tag: "CommandFailed",
                step: "fake",
                command: "ip",
                args: [],
                exitCode: 1,
                stderr: "boom"
              })
            })
          )
      })
      const e = yield* Effect.flip(failing.setupLocalDnsNetwork(nodeStart).pipe(Effect.provide(noCommands)))
      assert.strictEqual(e.reason._tag === "CommandFailed" && e.reason.stderr, "boom")
    })
  )

  it.effect("the default wait uses the configured deadline and interval", () =>
    Effect.gen(function* () {
      const config = yield* AgentConfig.decode({
        localDns: { readinessTimeout: "5 seconds", probeInterval: "1 second" }
      })
      const never = DnsResolvers.DnsResolvers.of({
        forServer: () =>
          Effect.succeed(
            Dns.make({
              lookup: () => Effect.succeed([]),
              resolve: (name) =>
                Effect.fail(
                  new Dns.DnsError({
                    reason: "Refused",
                    method: "resolve",
                    hostname: name,
                    cause: { code: "ECONNREFUSED" }
                  })
                )
            })
          ),
        // what NodeDns says of a closed port
        classify: (e) =>
          new DnsResolvers.QueryFailure({
            _tag: "NoResponse",
            detail: `${e.reason} (${String((e.cause as { code: unknown }).code)})`
          })
      })
      const fiber = yield* Hooks.make(config)
        .awaitLocalDns(nodeStart)
        .pipe(Effect.provideService(DnsResolvers.DnsResolvers, never), Effect.flip, Effect.forkChild)
      yield* TestClock.adjust("1 minute")
      const e = yield* Fiber.join(fiber)
      if (e.reason._tag !== "Timeout") return assert.fail(`reason ${e.reason._tag}`)
      assert.strictEqual(e.reason.timeoutMillis, 5_000)
      assert.strictEqual(e.reason.attempts, 6)
      assert.deepStrictEqual(
        e.reason.listeners.map((l) => l.reason),
        ["Refused (ECONNREFUSED)", "Refused (ECONNREFUSED)"]
      )
    })
  )
})
