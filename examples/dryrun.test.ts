/**
 * The repave step as a dry run on the simulated node: the plan names the
 * unmounts and removals a real run makes, and the node is left as it was.
 */
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost, MemoryNode } from "@hostnode/test"
import { Effect, FileSystem, Redacted } from "effect"
import { dryRun } from "./dryrun.ts"
import { repave } from "./repave.ts"

const pod = "/var/lib/kubelet/pods/5f0c"

const node = MemoryNode.layer({
  files: {
    [`${pod}/volumes/kubernetes.io~secret/token/.keep`]: "",
    "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
    "/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap"
  }
})

describe("dryRun", () => {
  it.effect("the repave step plans its unmount and removals, and changes nothing", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* host.tmpfs(`${pod}/volumes/kubernetes.io~secret/token`)

      const { result, plan } = yield* dryRun(
        repave({
          nodeName: "node-a",
          apiServer: "https://10.0.0.1:6443",
          auth: {
            _tag: "BootstrapToken",
            token: Redacted.make("abcdef.0123456789abcdef"),
            bootstrapKubeconfig: "/var/lib/kubelet/bootstrap-kubeconfig"
          }
        })
      )

      // What a real run would report, and what it would do, in order.
      assert.deepStrictEqual(result.kept, [])
      assert.deepStrictEqual(plan, [
        `Mounter unmount (lazy) ${pod}/volumes/kubernetes.io~secret/token`,
        `FileSystem remove recursively ${pod}/volumes/kubernetes.io~secret/token`,
        `FileSystem remove recursively ${pod}/volumes/kubernetes.io~secret`,
        `FileSystem remove recursively ${pod}/volumes`,
        `FileSystem remove recursively ${pod}`,
        "FileSystem remove /var/lib/cni/networks/cbr0/10.244.0.7",
        "FileSystem remove recursively /var/lib/cni/networks/cbr0",
        "FileSystem remove recursively /var/lib/cni/networks",
        "FileSystem remove recursively /var/lib/cni"
      ])
      // Nothing was changed.
      assert.isTrue(yield* fs.exists(`${pod}/volumes/kubernetes.io~secret/token`))
      assert.strictEqual(yield* fs.readFileString("/var/lib/cni/networks/cbr0/10.244.0.7"), "c0ffee")
      const mounts = yield* host.mountTable
      assert.isTrue(mounts.some((m) => m.mountPoint === `${pod}/volumes/kubernetes.io~secret/token`))
    }).pipe(Effect.provide(node))
  )
})
