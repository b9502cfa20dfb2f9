/**
 * The repave step against the in-memory host: a node with a pod whose secret
 * is a tmpfs and whose CSI volume is bound from outside the kubelet's
 * directory. Nothing here needs root.
 */
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, Redacted } from "effect"
import { repave } from "./repave.ts"

const pod = "/var/lib/kubelet/pods/5f0c"

const node = MemoryHost.layer({
  files: {
    [`${pod}/volumes/kubernetes.io~secret/token/.keep`]: "",
    [`${pod}/volumes/kubernetes.io~csi/pvc-1/mount/.keep`]: "",
    "/mnt/csi/pvc-1/data": "the volume's data",
    "/etc/cni/net.d/10-bridge.conflist": "{}",
    "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
    "/var/lib/kubelet/pki/kubelet-client-2026-11-30.pem": "cert",
    "/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap"
  }
})

describe("repave", () => {
  it.effect("unmounts and removes the pods, keeps the CSI volume's data and the bootstrap kubeconfig", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* host.tmpfs(`${pod}/volumes/kubernetes.io~secret/token`)
      yield* host.bind("/mnt/csi/pvc-1", `${pod}/volumes/kubernetes.io~csi/pvc-1/mount`)

      const report = yield* repave({
        nodeName: "node-a",
        apiServer: "https://10.0.0.1:6443",
        auth: {
          _tag: "BootstrapToken",
          token: Redacted.make("abcdef.0123456789abcdef"),
          bootstrapKubeconfig: "/var/lib/kubelet/bootstrap-kubeconfig"
        }
      })

      assert.deepStrictEqual(report.kept, [])
      assert.isFalse(yield* fs.exists(pod))
      assert.strictEqual(yield* fs.readFileString("/mnt/csi/pvc-1/data"), "the volume's data")
      assert.isFalse(yield* fs.exists("/var/lib/cni"))
      assert.isFalse(yield* fs.exists("/var/lib/kubelet/pki/kubelet-client-2026-11-30.pem"))
      assert.isTrue(yield* fs.exists("/var/lib/kubelet/bootstrap-kubeconfig"))
      const mounts = yield* host.mountTable
      assert.isFalse(mounts.some((m) => m.mountPoint.startsWith("/var/lib/kubelet/")))
    }).pipe(Effect.provide(node))
  )
})
