import { assert, describe, it } from "@effect/vitest"
import type { MountInfo, SafeRemove } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Effect } from "effect"
import { blockers, indexTable } from "#internal/safeRemove/table.ts"
import { merge } from "#internal/safeRemove/walk.ts"

// Builds a table from short lines: "id parent major:minor root mountPoint fsType".
const table = (lines: ReadonlyArray<string>) =>
  Layers.parseMountInfo(
    lines
      .map((l) => {
        const [id, parent, dev, root, mp, fsType] = l.split(" ")
        return `${id} ${parent} ${dev} ${root} ${mp} rw - ${fsType} src rw`
      })
      .join("\n")
  )

const blockedBy = (t: ReadonlyArray<MountInfo.MountEntry>, path: string) =>
  blockers(indexTable(t), path).map((b) => [b.reason, b.entry.mountPoint, b.at])

const host = [
  "1 0 8:1 / / ext4",
  "2 1 0:30 / /var/lib/kubelet/pods/a/volumes/secret tmpfs",
  "3 1 8:1 /data/csi/pv1 /var/lib/kubelet/pods/b/volumes/csi/mount ext4"
]

describe("SafeRemove.blockers (what in the mount table keeps a path)", () => {
  it.effect("a mount at or below the path keeps it; path boundaries count", () =>
    Effect.gen(function* () {
      const t = yield* table(host)
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/a"), [
        ["MountBelow", "/var/lib/kubelet/pods/a/volumes/secret", "/var/lib/kubelet/pods/a/volumes/secret"]
      ])
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/a/volumes/secret"), [
        ["MountBelow", "/var/lib/kubelet/pods/a/volumes/secret", "/var/lib/kubelet/pods/a/volumes/secret"]
      ])
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/a/volumes/secret2"), [])
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/c"), [])
    })
  )

  it.effect("the source of a bind mount keeps the directory it lies in, found through the mount it is seen in", () =>
    Effect.gen(function* () {
      const t = yield* table(host)
      // /data/csi/pv1 on the root device is the source of pod b's CSI mount.
      assert.deepStrictEqual(blockedBy(t, "/data"), [
        ["MountSourceBelow", "/var/lib/kubelet/pods/b/volumes/csi/mount", "/data/csi/pv1"]
      ])
      assert.deepStrictEqual(blockedBy(t, "/data/csi/pv1"), [
        ["MountSourceBelow", "/var/lib/kubelet/pods/b/volumes/csi/mount", "/data/csi/pv1"]
      ])
      assert.deepStrictEqual(blockedBy(t, "/data/csi/pv2"), [])
      assert.deepStrictEqual(blockedBy(t, "/data/csi/pv1/sub"), [])
    })
  )

  it.effect("a source on a dedicated disk is found relative to that disk's mount", () =>
    Effect.gen(function* () {
      const t = yield* table([
        "1 0 8:1 / / ext4",
        "2 1 8:16 / /var/lib/kubelet xfs",
        "3 2 8:16 /pods/e/volumes/shared /mnt/view xfs"
      ])
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/e"), [
        ["MountSourceBelow", "/mnt/view", "/var/lib/kubelet/pods/e/volumes/shared"]
      ])
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/f"), [])
      // The same names on the root device are another directory.
      assert.deepStrictEqual(blockedBy(t, "/pods/e"), [])
    })
  )

  it.effect("a bind of an ancestor (the kubelet dir onto itself, / at /rootfs) does not keep what is below it", () =>
    Effect.gen(function* () {
      const t = yield* table([
        "1 0 8:1 / / ext4",
        "2 1 8:1 /var/lib/kubelet /var/lib/kubelet ext4",
        "3 1 8:1 / /rootfs ext4"
      ])
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/a"), [])
      assert.deepStrictEqual(blockedBy(t, "/etc/cni/net.d/10-x.conf"), [])
      // The kubelet dir itself is a mount point; /var holds one.
      assert.deepStrictEqual(
        blockedBy(t, "/var").map((b) => b[0]),
        ["MountBelow"]
      )
    })
  )

  it.effect("subvolume roots (btrfs) map like any other root", () =>
    Effect.gen(function* () {
      const t = yield* table([
        "1 0 0:40 /@ / btrfs",
        "2 1 0:40 /@home /home btrfs",
        "3 1 0:40 /@home/u/data /mnt/d btrfs"
      ])
      assert.deepStrictEqual(blockedBy(t, "/home/u"), [["MountSourceBelow", "/mnt/d", "/home/u/data"]])
      assert.deepStrictEqual(blockedBy(t, "/u"), [])
    })
  )

  it.effect("mount points with escaped names are compared decoded", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(
        "1 0 8:1 / / rw - ext4 src rw\n2 1 0:31 / /var/lib/kubelet/pods/sp\\040ace/v rw - tmpfs tmpfs rw\n"
      )
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/sp ace").length, 1)
      assert.deepStrictEqual(blockedBy(t, "/var/lib/kubelet/pods/sp"), [])
    })
  )

  it.effect("20,000 stacked copies of the kubelet bind: 200 pod paths are checked without a quadratic blow-up", () =>
    Effect.gen(function* () {
      const lines = ["1 0 8:1 / / ext4"]
      for (let i = 0; i < 20_000; i++) lines.push(`${i + 2} 1 8:1 /var/lib/kubelet /var/lib/kubelet ext4`)
      lines.push("20002 1 0:50 / /var/lib/kubelet/pods/p7/volumes/v tmpfs")
      const index = indexTable(yield* table(lines))
      const blocked: Array<string> = []
      for (let p = 0; p < 200; p++) {
        const path = `/var/lib/kubelet/pods/p${p}`
        if (blockers(index, path).length > 0) blocked.push(path)
      }
      assert.deepStrictEqual(blocked, ["/var/lib/kubelet/pods/p7"])
    })
  )
})

describe("SafeRemove reports", () => {
  it("merge keeps order", () => {
    const k: SafeRemove.Kept = { path: "/r/x", reason: "MountBelow", mountPoint: "/r/x", detail: "d" }
    assert.deepStrictEqual(
      merge(
        { removed: ["/a"], kept: [], removedCount: 1, keptCount: 0 },
        { removed: ["/b"], kept: [k], removedCount: 1, keptCount: 1 }
      ),
      { removed: ["/a", "/b"], kept: [k], removedCount: 2, keptCount: 1 }
    )
  })
})
