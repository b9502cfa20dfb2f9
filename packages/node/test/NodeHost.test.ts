import { assert, describe, it } from "@effect/vitest"
import { Directory, DnsResolvers, IsolationBackend, Mounter, MountInfo, Systemd } from "@hostnode/core"
import { NodeHost } from "@hostnode/node"
import { Effect } from "effect"

describe("NodeHost.layer", () => {
  it.effect("provides every service the operations need, backed by this machine", () =>
    Effect.gen(function* () {
      // the real mount table, read through the real FileSystem
      const table = yield* MountInfo.read()
      assert.isTrue(table.some((e) => e.mountPoint === "/"))
      // the services exist (their behaviour has suites of its own)
      const mounter = yield* Mounter.Mounter
      const systemd = yield* Systemd.Systemd
      const dns = yield* DnsResolvers.DnsResolvers
      const backend = yield* IsolationBackend.IsolationBackend
      assert.strictEqual(typeof mounter.unmount, "function")
      assert.strictEqual(typeof systemd.restart, "function")
      assert.strictEqual(typeof dns.forServer, "function")
      assert.strictEqual(backend.name, "host")
      // nothing is unmounted for a path that has no mounts
      const dirs = yield* Directory.Directories
      const r = yield* Effect.scoped(
        Effect.flatMap(dirs.openRoot("/"), (root) => mounter.unmount(root, [], { lazy: true }))
      )
      assert.deepStrictEqual(r, [])
    }).pipe(Effect.provide(NodeHost.layer))
  )
})
