/**
 * What the operations log, checked on the simulated host with a capturing
 * logger: every unmount with its mount point and fs type as annotations, and
 * every restart with its unit and the caller's annotations.
 */
import { assert, describe, it } from "@effect/vitest"
import { RestartChanged, Systemd, Unmount } from "@hostnode/core"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, FileSystem, Layer, Logger, References } from "effect"

interface Entry {
  readonly message: unknown
  readonly annotations: Readonly<Record<string, unknown>>
}

const capture = () => {
  const entries: Array<Entry> = []
  const layer = Layer.mergeAll(
    Logger.layer([Logger.map(Logger.formatStructured, (e) => void entries.push(e as unknown as Entry))]),
    Layer.succeed(References.MinimumLogLevel, "Debug")
  )
  return { entries, layer }
}

const text = (e: Entry) => (Array.isArray(e.message) ? e.message.join(" ") : String(e.message))

describe("logging", () => {
  it.effect("every unmount is logged with its mount point and fs type", () => {
    const { entries, layer } = capture()
    return Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      for (const p of ["/k/pods/a/vol", "/k/pods/b/vol"]) {
        yield* fs.makeDirectory(p, { recursive: true })
        yield* host.tmpfs(p)
      }
      yield* host.bind("/k/pods/a/vol", "/k/pods/b/vol")
      yield* Unmount.unmountBelow(["/k"])
      const unmounted = entries.filter((e) => text(e) === "unmounted")
      assert.deepStrictEqual(
        unmounted.map((e) => [e.annotations.mountPoint, e.annotations.fsType]),
        [
          ["/k/pods/b/vol", "tmpfs"],
          ["/k/pods/b/vol", "tmpfs"],
          ["/k/pods/a/vol", "tmpfs"]
        ]
      )
    }).pipe(Effect.provide([MemoryHost.layer(), layer]))
  })

  it.effect("every restart is logged with its unit and the caller's annotations", () => {
    const { entries, layer } = capture()
    return Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const systemd = yield* Systemd.Systemd
      for (const u of ["a.service", "b.service"]) {
        yield* fs.makeDirectory("/etc/systemd/system", { recursive: true })
        yield* fs.writeFileString(`/etc/systemd/system/${u}`, "[Service]\nExecStart=/bin/sleep infinity\n")
      }
      yield* systemd.daemonReload
      yield* systemd.start("a.service")
      yield* systemd.start("b.service")
      yield* RestartChanged.restartChanged({
        wasRunning: true,
        units: [
          { unit: "b.service", changed: true },
          { unit: "a.service", changed: false }
        ],
        annotations: { phase: "upgrade", slot: "host" }
      })
      const restarts = entries.filter((e) => text(e).startsWith("restarted unit"))
      assert.deepStrictEqual(
        restarts.map((e) => [e.annotations.unit, e.annotations.phase, e.annotations.slot]),
        [["b.service", "upgrade", "host"]]
      )
    }).pipe(Effect.provide([MemoryNode.layer(), layer]))
  })
})
