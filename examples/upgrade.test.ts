/**
 * The upgrade step on `MemoryHost.layer` alone: the layer's `Systemd` records
 * the calls (`RecordingSystemd`), so a program that takes a snapshot needs no
 * other layer, and the test says what reached systemd. Then on `MemoryNode`,
 * whose systemd runs units as systemd 252 does: the restarted kubelet runs
 * with the new drop-in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Systemd } from "@hostnode/core"
import { MemoryHost, MemoryNode, MemorySystemd, RecordingSystemd } from "@hostnode/test"
import { Effect, FileSystem } from "effect"
import { SnapshotDir, upgrade } from "./upgrade.ts"

const node = MemoryHost.layer({
  files: {
    "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": "[Service]\nEnvironment=KUBEADM=1\n",
    "/etc/default/kubelet": "KUBELET_EXTRA_ARGS=--v=2\n",
    "/var/lib/hostnode/snapshots": { directory: true }
  }
})

describe("upgrade", () => {
  it.effect("writes the new flags, restarts the kubelet and discards the snapshot", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const systemd = yield* RecordingSystemd.RecordingSystemd
      yield* upgrade("--v=4")

      assert.strictEqual(yield* fs.readFileString("/etc/default/kubelet"), "KUBELET_EXTRA_ARGS=--v=4\n")
      // A daemon-reload, then the restart: the restart runs the new drop-in.
      assert.deepStrictEqual(yield* systemd.calls, [
        { verb: "daemon-reload" },
        { verb: "restart", unit: "kubelet.service" }
      ])
      assert.isFalse(yield* fs.exists(SnapshotDir))
    }).pipe(Effect.provide(node))
  )

  it.effect("a failure part-way puts the configuration back and has systemd reload it", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      const systemd = yield* RecordingSystemd.RecordingSystemd
      // The drop-in is written; the flags file is not (a full disk).
      yield* host.failNth({ kind: "writeFile", path: "/etc/default/kubelet", code: "ENOSPC" })

      const error = yield* Effect.flip(upgrade("--v=4"))

      assert.strictEqual(error._tag, "PlatformError")
      assert.isFalse(yield* fs.exists("/etc/systemd/system/kubelet.service.d/20-upgrade.conf"))
      assert.strictEqual(yield* fs.readFileString("/etc/default/kubelet"), "KUBELET_EXTRA_ARGS=--v=2\n")
      assert.deepStrictEqual(yield* systemd.calls, [{ verb: "daemon-reload" }])
      assert.isFalse(yield* fs.exists(SnapshotDir))
    }).pipe(Effect.provide(node))
  )

  it.effect("on a simulated systemd, the restarted kubelet runs with the new drop-in", () =>
    Effect.gen(function* () {
      const systemd = yield* MemorySystemd.MemorySystemd
      yield* (yield* Systemd.Systemd).start("kubelet.service")
      yield* upgrade("--v=4")

      const kubelet = yield* systemd.unit("kubelet.service")
      assert.strictEqual(kubelet?.activeState, "active")
      assert.deepStrictEqual(yield* systemd.processEnvironment(kubelet?.mainPid ?? 0), ["KUBEADM=1", "UPGRADED=1"])
      assert.strictEqual(kubelet?.needDaemonReload, false)
    }).pipe(
      Effect.provide(
        MemoryNode.layer({
          files: {
            "/etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/bin/kubelet\n",
            "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": "[Service]\nEnvironment=KUBEADM=1\n",
            "/etc/default/kubelet": "KUBELET_EXTRA_ARGS=--v=2\n",
            "/var/lib/hostnode/snapshots": { directory: true }
          }
        })
      )
    )
  )
})
