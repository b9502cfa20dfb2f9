/**
 * The mount part of the repave suites: `teardownKubeletDir` and `SafeRemove`
 * on real mounts (binds of data outside, stacks, mounts made or swapped in
 * while a removal runs, tables of another namespace). Internal:
 * `RepaveConformance.mounts` runs these tests in its layer.
 *
 * @since 0.3.0
 */
import { assert, type Vitest } from "@effect/vitest"
import { Directory, HostPath, Metrics, type Mounter, type MountInfo, Repave, SafeRemove } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Lexical, stackTop } from "@hostnode/core/Programs"
import { Effect, FileSystem, Metric } from "effect"
import * as FaultyMounter from "../../FaultyMounter.ts"
import * as Fence from "../../FencedFileSystem.ts"
import { MountFixture } from "../../MountFixture.ts"
import { rootAt } from "../rootAt.ts"
import { buildKubeletLayout, cniTree, makeSandbox } from "./fixtures.ts"
import { differences, isUnder, mountsBelow, plant, relativeTo, snapshot } from "./trees.ts"

/** The tests of `RepaveConformance.mounts`. */
export const mountTests = (
  it: Vitest.MethodsNonLive<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>
): void => {
  const tableBelow = (dir: string) =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      return mountsBelow(yield* fx.table, dir)
    })

  it.effect("a same-device bind mount made after the table was read is not entered: the mount id says so", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      const csiBefore = yield* snapshot(l.csiData)
      const victim = `${l.pods.c}/volumes/kubernetes.io~empty-dir/data/late`
      yield* fs.makeDirectory(victim, { recursive: true }).pipe(Effect.orDie)
      const report = yield* Effect.scoped(
        Effect.gen(function* () {
          // The session reads the table now; the bind comes after, as a pod's mount made meanwhile would.
          const session = yield* SafeRemove.session({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo })
          yield* fx.bind(l.csiData, victim)
          return yield* session.remove(["/var/lib/kubelet/pods/cccccccc-3333"])
        })
      ).pipe(Fence.within([l.sandbox]))
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason]).filter(([p]) => p === victim),
        [[victim, "OtherFileSystem"]]
      )
      // Nothing was deleted through it: the source is whole.
      assert.deepStrictEqual(yield* snapshot(l.csiData), csiBefore)
      assert.deepStrictEqual(yield* snapshot(victim), csiBefore)
    })
  )

  it.effect("a table that does not list the mount the root is on is refused before anything is removed", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      const empty = `${l.sandbox}/empty-mountinfo`
      yield* fs.writeFileString(empty, "").pipe(Effect.orDie)
      const foreign = `${l.sandbox}/foreign-mountinfo`
      yield* fs.writeFileString(foreign, "999999 1 8:1 / / rw - ext4 /dev/sda1 rw\n").pipe(Effect.orDie)
      const before = yield* snapshot(l.sandbox)
      for (const table of [empty, foreign]) {
        const e = yield* Effect.flip(
          Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: table }).pipe(
            Fence.within([l.sandbox])
          )
        )
        assert.strictEqual(e._tag === "MountInfoError" && e.reason._tag, "DoesNotCover", table)
        const r = yield* Effect.flip(
          SafeRemove.remove(["/var/lib/kubelet/pods"], { hostRoot: yield* rootAt(l.root), mountInfo: table })
        )
        assert.strictEqual(r._tag === "MountInfoError" && r.reason._tag, "DoesNotCover", table)
      }
      assert.deepStrictEqual(differences(before, yield* snapshot(l.sandbox)), [])
    })
  )

  it.effect("names that are not UTF-8 are removed by the teardown and the reset, and reported losslessly", () =>
    Effect.gen(function* () {
      const dirs = yield* Directory.Directories
      const l = yield* buildKubeletLayout
      const cafe = new Uint8Array([0x63, 0x61, 0x66, 0xe9])
      // Planted through handles: the FileSystem's strings cannot name them.
      yield* Effect.scoped(
        Effect.gen(function* () {
          const root = yield* dirs.openRoot(l.root)
          const at = (path: string) =>
            Effect.flatMap(dirs.resolve(root, path, { followFinal: true }), (r) =>
              r.name === undefined ? Effect.succeed(r.parent) : dirs.openDirectory(r.parent, r.name)
            )
          const data = yield* at("/var/lib/kubelet/pods/cccccccc-3333/volumes/kubernetes.io~empty-dir/data")
          yield* dirs.makeDirectory(data, cafe, 0o755)
          const sub = yield* dirs.openDirectory(data, cafe)
          yield* dirs.openFile(sub, cafe, { mode: "create", permissions: 0o644 })
        })
      ).pipe(Effect.orDie)
      const teardown = yield* Repave.teardownKubeletDir({
        hostRoot: yield* rootAt(l.root),
        mountInfo: l.mountInfo
      }).pipe(Effect.provide(FaultyMounter.layer((t) => t === l.csiMount)), Fence.within([l.sandbox]))
      const escaped = "caf\udce9"
      assert.include(teardown.removed, `${l.pods.c}/volumes/kubernetes.io~empty-dir/data/${escaped}/${escaped}`)
      assert.include(teardown.removed, `${l.pods.c}/volumes/kubernetes.io~empty-dir/data/${escaped}`)
      assert.notInclude(
        teardown.kept.map((k) => k.path),
        l.pods.c
      )
      const fs = yield* FileSystem.FileSystem
      assert.isFalse(yield* fs.exists(l.pods.c))
      yield* plant(l.sandbox, cniTree)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const root = yield* dirs.openRoot(l.root)
          for (const path of ["/etc/cni/net.d/x", "/var/lib/cni/networks/k8s-pod-network/x"]) {
            const at = yield* dirs.resolve(root, path)
            yield* dirs.openFile(at.parent, cafe, { mode: "create", permissions: 0o644 })
          }
        })
      ).pipe(Effect.orDie)
      const reset = yield* Repave.resetCniState({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo }).pipe(
        Fence.within([l.sandbox])
      )
      assert.include(reset.removed, `${l.root}/etc/cni/net.d/${escaped}`)
      assert.include(reset.removed, `${l.root}/var/lib/cni/networks/k8s-pod-network/${escaped}`)
      assert.isFalse(yield* fs.exists(`${l.root}/var/lib/cni`))
      assert.deepStrictEqual(yield* fs.readDirectory(`${l.root}/etc/cni/net.d`), [])
    })
  )

  it.effect("teardownKubeletDir keeps the pod whose bind mount could not be unmounted; the CSI data is intact", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      const before = yield* snapshot(l.sandbox)
      const csiBefore = yield* snapshot(l.csiData)
      assert.strictEqual(csiBefore.db?.slice(0, 6), "f 644 ")
      const report = yield* Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo }).pipe(
        Effect.provide(FaultyMounter.layer((t) => t === l.csiMount)),
        Fence.within([l.sandbox])
      )
      const { a, b, c, d } = l.pods
      assert.deepStrictEqual(report.prefixes, [a, b, c, d])
      assert.deepStrictEqual([...report.unmountFailures.keys()], [b])
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
        [[b, "UnmountFailed", l.csiMount]]
      )
      for (const p of [a, c, d]) assert.isFalse(yield* fs.exists(p), p)
      assert.isTrue(yield* fs.exists(b))
      assert.deepStrictEqual(yield* fs.readDirectory(`${l.kubelet}/pods`), ["bbbbbbbb-2222"])
      // No mount remains below the root but the refused one.
      assert.deepStrictEqual(
        (yield* tableBelow(l.root)).map((e) => e.mountPoint),
        [l.csiMount]
      )
      // The CSI data, byte for byte, at its source and through the mount.
      assert.deepStrictEqual(yield* snapshot(l.csiData), csiBefore)
      assert.deepStrictEqual(yield* snapshot(l.csiMount), csiBefore)
      // Everything else is as it was: the kept pod but for its unmounted secret,
      // the rest of the kubelet directory, the sentinel.
      const after = yield* snapshot(l.sandbox)
      const rel = (p: string) => relativeTo(l.sandbox, p)
      const gone = [a, c, d].map(rel)
      assert.deepStrictEqual(
        differences(before, after, (k) => gone.some((g) => isUnder(g, k)) || isUnder(rel(l.secretB), k)),
        []
      )
      for (const g of gone) for (const k of Object.keys(after)) assert.isFalse(isUnder(g, k), k)
      // The report lists what was removed, all of it below the removed pods.
      for (const r of report.removed)
        assert.isTrue(
          [a, c, d].some((p) => isUnder(p, r)),
          r
        )
      for (const p of [a, c, d, `${a}/etc-hosts`, `${c}/volumes/kubernetes.io~empty-dir/data/to-root`]) {
        assert.include(report.removed, p)
      }
    })
  )

  it.effect("a teardown's metrics equal its report: paths removed, kept by reason, mounts detached and remaining", () =>
    Effect.gen(function* () {
      const l = yield* buildKubeletLayout
      const mountsBefore = (yield* tableBelow(l.root)).length
      const report = yield* Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo }).pipe(
        Effect.provide(FaultyMounter.layer((t) => t === l.csiMount)),
        Fence.within([l.sandbox])
      )
      const mountsAfter = (yield* tableBelow(l.root)).length
      const count = (metric: Metric.Counter<number>, attributes: Record<string, string>) =>
        Effect.map(Metric.value(Metric.withAttributes(metric, attributes)), (s) => s.count)
      const teardown = { operation: "Repave.teardownKubeletDir" }
      const unmount = { operation: "Unmount.unmountBelowByPrefix" }
      assert.isAbove(report.removed.length, 0)
      assert.strictEqual(yield* count(Metrics.Metrics.pathsRemoved, teardown), report.removed.length)
      const byReason = new Map<string, number>()
      for (const k of report.kept) byReason.set(k.reason, (byReason.get(k.reason) ?? 0) + 1)
      assert.deepStrictEqual([...byReason], [["UnmountFailed", 1]])
      for (const reason of SafeRemove.Kept.fields.reason.literals) {
        assert.strictEqual(
          yield* count(Metrics.Metrics.pathsKept, { ...teardown, reason }),
          byReason.get(reason) ?? 0,
          reason
        )
      }
      // Each mount that left the table was detached on its own (deepest first); the refused one remains.
      assert.strictEqual(mountsAfter, 1)
      assert.strictEqual(yield* count(Metrics.Metrics.mountsDetached, unmount), mountsBefore - mountsAfter)
      assert.strictEqual(yield* count(Metrics.Metrics.mountsRemaining, unmount), mountsAfter)
      const runs = yield* Metric.value(
        Metric.withAttributes(Metrics.Metrics.operationDuration, { ...teardown, outcome: "success" })
      )
      assert.strictEqual(runs.count, 1)
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map()))
  )

  it.effect("teardownKubeletDir with every unmount working leaves no pod, no mount, and the CSI data", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      const csiBefore = yield* snapshot(l.csiData)
      const before = yield* snapshot(l.sandbox)
      const report = yield* Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo }).pipe(
        Fence.within([l.sandbox])
      )
      assert.deepStrictEqual(report.kept, [])
      assert.strictEqual(report.unmountFailures.size, 0)
      assert.deepStrictEqual(yield* fs.readDirectory(`${l.kubelet}/pods`), [])
      assert.deepStrictEqual(yield* tableBelow(l.root), [])
      assert.deepStrictEqual(yield* snapshot(l.csiData), csiBefore)
      const pods = relativeTo(l.sandbox, `${l.kubelet}/pods`)
      assert.deepStrictEqual(
        differences(before, yield* snapshot(l.sandbox), (k) => k !== pods && isUnder(pods, k)),
        []
      )
      // The same teardown again finds nothing to do.
      const again = yield* Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo }).pipe(
        Fence.within([l.sandbox])
      )
      assert.deepStrictEqual([again.prefixes, again.removed, again.kept], [[], [], []])
    })
  )

  it.effect("SafeRemove alone never deletes through a bind mount: the pod is kept and says which mount", () =>
    Effect.gen(function* () {
      const l = yield* buildKubeletLayout
      const before = yield* snapshot(l.sandbox)
      const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/bbbbbbbb-2222"], {
        hostRoot: yield* rootAt(l.root),
        mountInfo: l.mountInfo
      }).pipe(Fence.within([l.sandbox]))
      assert.deepStrictEqual(report.removed, [])
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
        [[l.pods.b, "MountBelow", l.csiMount]]
      )
      assert.deepStrictEqual(differences(before, yield* snapshot(l.sandbox)), [])
    })
  )

  it.effect("a host root reached through a symlink still sees the mounts below it", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      yield* fs.symlink(l.root, `${l.sandbox}/rootlink`)
      const before = yield* snapshot(l.sandbox)
      const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/bbbbbbbb-2222"], {
        hostRoot: yield* rootAt(`${l.sandbox}/rootlink`),
        mountInfo: l.mountInfo
      }).pipe(Fence.within([l.sandbox]))
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason]),
        [[l.pods.b, "MountBelow"]]
      )
      assert.deepStrictEqual(differences(before, yield* snapshot(l.sandbox)), [])
    })
  )

  it.effect("a mount the table shows at another path stops the walk by its device", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      // The table as a namespace that sees the root elsewhere would show it.
      const table = yield* fx.table
      const moved = table.map((e) =>
        Lexical.covers(l.root, Lexical.clean(e.mountPoint)) ? { ...e, mountPoint: `/elsewhere${e.mountPoint}` } : e
      )
      const fake = `${l.sandbox}/moved-mountinfo`
      yield* fs.writeFileString(fake, Layers.renderMountInfo(moved))
      const outer = `${l.pods.d}/volumes/v1`
      const mounted = yield* snapshot(outer)
      // The mount point itself as the path to remove: its device differs from its parent's.
      const direct = yield* SafeRemove.remove(["/var/lib/kubelet/pods/dddddddd-4444/volumes/v1"], {
        hostRoot: yield* rootAt(l.root),
        mountInfo: fake
      }).pipe(Fence.within([l.sandbox]))
      assert.deepStrictEqual(
        [direct.removed, direct.kept.map((k) => [k.path, k.reason])],
        [[], [[outer, "OtherFileSystem"]]]
      )
      // The pod: the walk stops at the mount and removes what is beside it.
      const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/dddddddd-4444"], {
        hostRoot: yield* rootAt(l.root),
        mountInfo: fake
      }).pipe(Fence.within([l.sandbox]))
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason]),
        [[outer, "OtherFileSystem"]]
      )
      assert.deepStrictEqual(report.removed, [`${l.pods.d}/beside`])
      assert.deepStrictEqual(yield* snapshot(outer), mounted)
      assert.strictEqual((yield* tableBelow(l.pods.d)).length, 2)
    })
  )

  it.effect("the table of another mount namespace maps through the host root's table root", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      const fs = yield* FileSystem.FileSystem
      const l = yield* buildKubeletLayout
      // The table of a namespace whose `/` is the host root: its paths lack the root's prefix.
      const table = yield* fx.table
      const own = table.filter((e) => Lexical.covers(l.root, Lexical.clean(e.mountPoint)))
      // Their `/` is the mount the root is on (the sandbox's), under the id it really has.
      const covering = table.filter((e) => Lexical.covers(Lexical.clean(e.mountPoint), l.root))
      const longest = Math.max(...covering.map((e) => e.mountPoint.length))
      const nearest = covering.filter((e) => e.mountPoint.length === longest)
      const rootMount = stackTop(nearest) as MountInfo.MountEntry
      const theirs = [
        { ...rootMount, parentId: 0, root: "/", mountPoint: "/" },
        ...own.map((e) => ({ ...e, mountPoint: e.mountPoint.slice(l.root.length) }))
      ]
      const path = `${l.sandbox}/their-mountinfo`
      yield* fs.writeFileString(path, Layers.renderMountInfo(theirs))
      const csiBefore = yield* snapshot(l.csiData)
      const report = yield* SafeRemove.remove(
        ["/var/lib/kubelet/pods/bbbbbbbb-2222", "/var/lib/kubelet/pods/cccccccc-3333"],
        { hostRoot: yield* HostPath.decodeRoot({ path: l.root, mountInfo: path, tableRoot: l.root }) }
      ).pipe(Fence.within([l.sandbox]))
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
        [[l.pods.b, "MountBelow", l.csiMount.slice(l.root.length)]]
      )
      assert.isFalse(yield* fs.exists(l.pods.c))
      assert.deepStrictEqual(yield* snapshot(l.csiMount), csiBefore)
    })
  )

  it.effect("a bind mount whose source lies in another pod keeps that pod too", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      const fs = yield* FileSystem.FileSystem
      const s = yield* makeSandbox
      const pods = `${s.root}/var/lib/kubelet/pods`
      const source = `${pods}/e/volumes/shared`
      const view = `${pods}/f/volumes/view`
      yield* plant(s.root, {
        "var/lib/kubelet/pods/e/volumes/shared/data": "reachable through f",
        "var/lib/kubelet/pods/e/etc-hosts": "hosts",
        "var/lib/kubelet/pods/f/volumes/view": { dir: true },
        "var/lib/kubelet/pods/g/etc-hosts": "hosts"
      })
      yield* fx.bind(source, view)
      const through = yield* snapshot(view)
      const report = yield* Repave.teardownKubeletDir({ hostRoot: yield* rootAt(s.root), mountInfo: s.mountInfo }).pipe(
        Effect.provide(FaultyMounter.layer((t) => t === view)),
        Fence.within([s.sandbox])
      )
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason, k.mountPoint]),
        [
          [`${pods}/f`, "UnmountFailed", view],
          [`${pods}/e`, "MountSourceBelow", view]
        ]
      )
      assert.deepStrictEqual(yield* snapshot(view), through)
      assert.strictEqual(yield* fs.readFileString(`${pods}/e/etc-hosts`), "hosts")
      assert.deepStrictEqual(yield* fs.readDirectory(pods).pipe(Effect.map((n) => [...n].sort())), ["e", "f"])
    })
  )

  it.effect("resetCniState fails, naming the mount, when a mount is inside net.d or /var/lib/cni", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      const fs = yield* FileSystem.FileSystem
      const s = yield* makeSandbox
      yield* plant(s.sandbox, cniTree)
      const inNetd = `${s.root}/etc/cni/net.d/mounted`
      const inCni = `${s.root}/var/lib/cni/networks/k8s-pod-network`
      yield* fs.makeDirectory(inNetd)
      yield* fx.tmpfs(inNetd)
      yield* fx.tmpfs(inCni)
      yield* plant(s.sandbox, {
        "root/etc/cni/net.d/mounted/00-a.conf": "in a mount",
        "root/var/lib/cni/networks/k8s-pod-network/10.244.0.9": "in a mount"
      })
      const before = yield* snapshot(s.sandbox)
      const error = yield* Effect.flip(
        Repave.resetCniState({ hostRoot: yield* rootAt(s.root), mountInfo: s.mountInfo }).pipe(
          Fence.within([s.sandbox])
        )
      )
      assert.strictEqual(error._tag, "ResetError")
      if (error._tag !== "ResetError") return
      assert.strictEqual(error.reason._tag, "MountBelow")
      assert.deepStrictEqual(
        error.kept.map((k) => [k.path, k.reason, k.mountPoint]),
        [
          [inNetd, "MountBelow", inNetd],
          [`${s.root}/var/lib/cni`, "MountBelow", inCni]
        ]
      )
      assert.include(error.message, inNetd)
      // What could go went; what is below the mounts is untouched.
      assert.deepStrictEqual(yield* fs.readDirectory(`${s.root}/etc/cni/net.d`), ["mounted"])
      const after = yield* snapshot(s.sandbox)
      const netd = "root/etc/cni/net.d"
      assert.deepStrictEqual(
        differences(before, after, (k) => isUnder(netd, k) && k !== netd && !isUnder(`${netd}/mounted`, k)),
        []
      )
      // A mount on net.d itself: nothing in it is removed.
      const s2 = yield* makeSandbox
      yield* plant(s2.sandbox, { "root/etc/cni/net.d": { dir: true } })
      yield* fx.tmpfs(`${s2.root}/etc/cni/net.d`)
      yield* plant(s2.sandbox, { "root/etc/cni/net.d/10-x.conf": "config on its own mount" })
      const e2 = yield* Effect.flip(
        Repave.resetCniState({ hostRoot: yield* rootAt(s2.root), mountInfo: s2.mountInfo }).pipe(
          Fence.within([s2.sandbox])
        )
      )
      assert.deepStrictEqual(
        e2._tag === "ResetError" ? e2.kept.map((k) => [k.path, k.reason, k.mountPoint]) : e2._tag,
        [[`${s2.root}/etc/cni/net.d`, "MountBelow", `${s2.root}/etc/cni/net.d`]]
      )
      assert.deepStrictEqual(yield* fs.readDirectory(`${s2.root}/etc/cni/net.d`), ["10-x.conf"])
    })
  )

  it.effect("teardownKubeletDir refuses the host root as a prefix before unmounting anything", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture
      const l = yield* buildKubeletLayout
      const ids = (t: ReadonlyArray<MountInfo.MountEntry>) => t.map((e) => e.id)
      const before = yield* fx.table
      for (const prefixes of [["/"], ["/var/lib/kubelet/pods/../../../.."]]) {
        const e = yield* Effect.flip(
          Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: l.mountInfo, prefixes }).pipe(
            Fence.within([l.sandbox])
          )
        )
        assert.strictEqual(e._tag, "HostPathError")
      }
      const bad = `${l.sandbox}/bad-mountinfo`
      yield* Effect.orDie(FileSystem.FileSystem.use((fs) => fs.writeFileString(bad, "garbage\n")))
      const e = yield* Effect.flip(
        Repave.teardownKubeletDir({ hostRoot: yield* rootAt(l.root), mountInfo: bad }).pipe(Fence.within([l.sandbox]))
      )
      assert.strictEqual(e._tag, "MountInfoError")
      assert.deepStrictEqual(ids(yield* fx.table), ids(before))
    })
  )

  it.effect("a pods directory that is a symlink is not followed", () =>
    Effect.gen(function* () {
      const s = yield* makeSandbox
      yield* plant(s.sandbox, {
        "outside/pods/x/data": "not ours",
        "root/var/lib/kubelet/pods": { link: `${s.outside}/pods` }
      })
      const before = yield* snapshot(s.sandbox)
      const report = yield* Repave.teardownKubeletDir({ hostRoot: yield* rootAt(s.root), mountInfo: s.mountInfo }).pipe(
        Fence.within([s.sandbox])
      )
      assert.deepStrictEqual(
        report.kept.map((k) => [k.path, k.reason]),
        [[`${s.root}/var/lib/kubelet/pods`, "NotADirectory"]]
      )
      assert.deepStrictEqual(differences(before, yield* snapshot(s.sandbox)), [])
    })
  )
}
