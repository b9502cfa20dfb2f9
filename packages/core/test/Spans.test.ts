/**
 * Span names: every span the operations open is named `Module.function`
 * (one style, so a trace reads as the API does), checked with a capturing
 * tracer over a run of several operations on the simulated node; and the
 * attributes an operator filters traces by (host root, prefixes, units,
 * counts) on the operations' spans.
 */
import { assert, describe, it } from "@effect/vitest"
import { Repave, RestartChanged, Snapshot, Systemd, Unmount } from "@hostnode/core"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, FileSystem, Tracer } from "effect"

describe("span names", () => {
  it.effect("every span of unmount, repave, snapshot and restart is Module.function", () => {
    const names: Array<string> = []
    const tracer = Tracer.make({
      span(options) {
        names.push(options.name)
        return new Tracer.NativeSpan(options)
      }
    })
    return Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      const systemd = yield* Systemd.Systemd
      yield* fs.makeDirectory("/var/lib/kubelet/pods/p/volumes/v", { recursive: true })
      yield* host.tmpfs("/var/lib/kubelet/pods/p/volumes/v")
      yield* fs.makeDirectory("/var/lib/cni/networks", { recursive: true })
      yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
      yield* fs.writeFileString("/etc/systemd/system/a.service", "[Service]\nExecStart=/bin/sleep infinity\n")
      yield* systemd.daemonReload
      yield* systemd.start("a.service")

      yield* Unmount.unmountBelow(["/var/lib/kubelet"])
      yield* Repave.resetCniState()
      const snapshot = yield* Snapshot.takeOf({ dir: "/var/lib/snap", paths: ["/etc/systemd/system"] })
      yield* fs.writeFileString("/etc/systemd/system/a.service", "[Service]\nExecStart=/bin/sleep 1000\n")
      yield* snapshot.restore
      yield* RestartChanged.restartChanged({ wasRunning: true, units: [{ unit: "a.service", changed: true }] })

      // The operations above opened spans of their own (not only the test's).
      for (const expected of [
        "Unmount.unmountBelow",
        "Repave.resetCniState",
        "Snapshot.takeOf",
        "Snapshot.restore",
        "Systemd.restart"
      ]) {
        assert.include(names, expected)
      }
      const misnamed = names.filter((n) => !/^[A-Z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)+$/.test(n))
      assert.deepStrictEqual([...new Set(misnamed)], [])
    }).pipe(Effect.scoped, Effect.provide(MemoryNode.layer()), Effect.provideService(Tracer.Tracer, tracer))
  })

  it.effect(
    "the operations' spans carry what an operator filters by: host root, prefixes, paths, units and counts",
    () => {
      const spans: Array<Tracer.NativeSpan> = []
      const tracer = Tracer.make({
        span(options) {
          const span = new Tracer.NativeSpan(options)
          spans.push(span)
          return span
        }
      })
      return Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const host = yield* MemoryHost.MemoryHost
        const systemd = yield* Systemd.Systemd
        yield* fs.makeDirectory("/var/lib/kubelet/pods/p/volumes/v", { recursive: true })
        yield* host.tmpfs("/var/lib/kubelet/pods/p/volumes/v")
        yield* fs.makeDirectory("/etc/cni/net.d", { recursive: true })
        yield* fs.writeFileString("/etc/cni/net.d/10-bridge.conflist", "{}")
        yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
        yield* fs.writeFileString("/etc/systemd/system/a.service", "[Service]\nExecStart=/bin/sleep infinity\n")
        yield* systemd.start("a.service")

        yield* Unmount.unmountBelow(["/var/lib/kubelet"])
        yield* Repave.resetCniState()
        yield* Snapshot.takeOf({ dir: "/var/lib/snap", paths: ["/etc/systemd/system"] })
        yield* RestartChanged.restartChanged({ wasRunning: true, units: [{ unit: "a.service", changed: true }] })

        const attributes = (name: string) => {
          const span = spans.find((s) => s.name === name)
          assert.isDefined(span, name)
          return Object.fromEntries(span?.attributes ?? [])
        }
        assert.deepInclude(attributes("Unmount.unmountBelow"), {
          hostRoot: "/",
          prefixes: ["/var/lib/kubelet"],
          unmounted: 1,
          remaining: 0
        })
        assert.deepInclude(attributes("Repave.resetCniState"), { hostRoot: "/", removed: 1, kept: 0 })
        assert.deepInclude(attributes("Snapshot.takeOf"), { dir: "/var/lib/snap", hostRoot: "/" })
        assert.deepInclude(attributes("RestartChanged.restartChanged"), {
          units: ["a.service"],
          reload: "always",
          reloaded: true,
          restarted: 1
        })
        assert.deepInclude(attributes("Systemd.restart"), { unit: "a.service" })
      }).pipe(Effect.scoped, Effect.provide(MemoryNode.layer()), Effect.provideService(Tracer.Tracer, tracer))
    }
  )
})
