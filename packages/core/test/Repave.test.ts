import { assert, describe, it } from "@effect/vitest"
import { Repave } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem } from "effect"
import { isClientCredential } from "../src/internal/repave.ts"

describe("Repave", () => {
  it("isClientCredential: the rotated client pairs, the current and updated links, the pending key; nothing else", () => {
    for (const name of [
      "kubelet-client-2024-01-01-00-00-00.pem",
      "kubelet-client-current.pem",
      "kubelet-client-updated.pem",
      "kubelet-client.key.tmp"
    ]) {
      assert.isTrue(isClientCredential(name), name)
    }
    for (const name of [
      "kubelet.crt",
      "kubelet.key",
      "kubelet-server-2024-01-01-00-00-00.pem",
      "kubelet-server-current.pem",
      "kubelet-client-.pem",
      "kubelet-client.crt",
      "kubelet-client.key",
      "ca.crt",
      "bootstrap-kubeconfig",
      "xkubelet-client-current.pem",
      "kubelet-client-current.pem.bak"
    ]) {
      assert.isFalse(isClientCredential(name), name)
    }
  })

  it("ResetError names the operation, what was kept and why, and how much was removed", () => {
    const e = new Repave.ResetError({
      reason: new Repave.Failure({
        _tag: "MountBelow",
        path: "/r/etc/cni/net.d/x",
        mountPoint: "/r/etc/cni/net.d/x",
        detail: "a mount at or below it: tmpfs"
      }),
      operation: "resetCniState",
      kept: [
        {
          path: "/r/etc/cni/net.d/x",
          reason: "MountBelow",
          mountPoint: "/r/etc/cni/net.d/x",
          detail: "a mount at or below it: tmpfs"
        }
      ],
      removed: ["/r/var/lib/cni"]
    })
    assert.include(e.message, "resetCniState")
    assert.include(e.message, "/r/etc/cni/net.d/x")
    assert.include(e.message, "MountBelow")
    assert.include(e.message, "1 removed, 1 kept")
  })

  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      yield* fs.makeDirectory("/etc/cni/net.d/x", { recursive: true })
      yield* host.tmpfs("/etc/cni/net.d/x")
      const failing = Repave.resetCniState()
      const kept = yield* failing.pipe(
        Effect.map(() => undefined),
        Effect.catchReason("ResetError", "MountBelow", (reason, error) =>
          Effect.succeed([reason.path, reason.mountPoint, error.operation])
        )
      )
      assert.deepStrictEqual(kept, ["/etc/cni/net.d/x", "/etc/cni/net.d/x", "resetCniState"])
      // @ts-expect-error: ResetError has no reason tagged "Busy"
      void failing.pipe(Effect.catchReason("ResetError", "Busy", () => Effect.void))
    }).pipe(Effect.provide(MemoryHost.layer()))
  )
})
