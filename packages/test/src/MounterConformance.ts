/**
 * The conformance suite for `Mounter` implementations: what the real
 * in-process and command-based mounters do, and what the simulated host's
 * mounter must do the same way. A function taking a Layer, so each
 * implementation (and a user's own) runs the very same tests. Every target is
 * given as the table lists it (path and mount id) below a root handle on the
 * sandbox, and a target whose path no longer leads to that mount must be
 * reported `Unverified` and left mounted.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { Directory, Mounter, type MountInfo } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { Effect, FileSystem, type Layer } from "effect"
import { omitting } from "./internal/omitting.ts"
import { MountFixture } from "./MountFixture.ts"

const countAt = (table: ReadonlyArray<MountInfo.MountEntry>, path: string): number =>
  table.filter((e) => e.mountPoint === path).length

/** The targets at `path` as the table lists them, top of a stack first. */
const targetsAt = (table: ReadonlyArray<MountInfo.MountEntry>, path: string): Array<Programs.Target> => {
  return Programs.stackTopFirst(table.filter((e) => e.mountPoint === path)).map((e) => ({
    path,
    mountId: e.id,
    tablePath: e.mountPoint
  }))
}

/** A sandbox and a root handle on it. */
const setup = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const dirs = yield* Directory.Directories
  const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  const root = yield* dirs.openRoot(box).pipe(Effect.orDie)
  return { fx, fs, box, root, mounter: yield* Mounter.Mounter }
})

/**
 * Options of {@link suite}.
 *
 * @category conformance
 * @since 0.3.0
 */
export interface Options {
  /**
   * Tests that cannot apply to the implementation (a dry run's mounter), by
   * title, each with the reason; they are not registered (not skipped). A
   * title the suite does not have, or an empty reason, fails the suite.
   */
  readonly omit?: Readonly<Record<string, string>> | undefined
}

/**
 * Registers the suite under `name`. `hostLayer` provides the `Mounter` under
 * test, a `MountFixture` that makes mounts in the same mount namespace, the
 * `FileSystem` that sees them and the `Directories` the root handle comes from.
 *
 * @category conformance
 * @since 0.1.0
 */
export const suite = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>,
  options?: Options
): void =>
  layer(hostLayer)(`Mounter conformance: ${name}`, (all) => {
    const it = omitting(all, options?.omit)
    it.effect("unmounts a tmpfs and reports it", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        yield* fs.makeDirectory(`${box}/m`)
        yield* fx.tmpfs(`${box}/m`)
        yield* fs.writeFileString(`${box}/m/file`, "on tmpfs")
        const targets = targetsAt(yield* fx.table, `${box}/m`)
        assert.strictEqual(targets.length, 1)
        const r = yield* mounter.unmount(root, targets, { lazy: true })
        assert.deepStrictEqual(r, [{ _tag: "Unmounted", target: `${box}/m` }])
        assert.strictEqual(countAt(yield* fx.table, `${box}/m`), 0)
        // the directory underneath is visible again, without the tmpfs's file
        assert.isFalse(yield* fs.exists(`${box}/m/file`))
      })
    )

    it.effect("a path that leads to another mount, or to none, is not unmounted: Moved or Gone", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        yield* fs.makeDirectory(`${box}/plain`)
        yield* fs.makeDirectory(`${box}/m`)
        yield* fx.tmpfs(`${box}/m`)
        const [under] = targetsAt(yield* fx.table, `${box}/m`)
        // Something mounted over it since the table was read: the path leads to the new mount.
        yield* fx.tmpfs(`${box}/m`)
        const before = yield* fx.table
        const r = yield* mounter.unmount(
          root,
          [
            ...(under === undefined ? [] : [under]),
            { path: `${box}/plain`, mountId: under?.mountId ?? 0, tablePath: `${box}/plain` },
            { path: `${box}/missing`, mountId: under?.mountId ?? 0, tablePath: `${box}/missing` }
          ],
          { lazy: true }
        )
        assert.deepStrictEqual(
          r.map((x) => (x._tag === "Unverified" ? x.reason : x._tag)),
          ["Moved", "Moved", "Gone"]
        )
        assert.deepStrictEqual(
          (yield* fx.table).map((e) => e.id),
          before.map((e) => e.id)
        )
      })
    )

    it.effect("a link in the path is never followed: LinkInPath, and the mount it leads to stays", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        yield* fs.makeDirectory(`${box}/real/m`, { recursive: true })
        yield* fx.tmpfs(`${box}/real/m`)
        const [t] = targetsAt(yield* fx.table, `${box}/real/m`)
        if (t === undefined) return assert.fail("no mount")
        // The table's path now has a link where a directory was (a swap after the table was read).
        yield* fs.rename(`${box}/real`, `${box}/elsewhere`)
        yield* fs.symlink(`${box}/elsewhere`, `${box}/real`)
        const r = yield* mounter.unmount(root, [t], { lazy: true })
        assert.strictEqual(r[0]?._tag === "Unverified" && r[0].reason, "LinkInPath")
        assert.strictEqual(countAt(yield* fx.table, `${box}/elsewhere/m`), 1)
        // And a target outside the root handle is refused as such.
        const outside = yield* mounter.unmount(root, [{ ...t, path: "/outside-of-it" }], { lazy: true })
        assert.strictEqual(outside[0]?._tag === "Unverified" && outside[0].reason, "OutsideRoot")
      })
    )

    it.effect("on stacked mounts each target removes the top one, listed top first", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        const p = `${box}/stack`
        yield* fs.makeDirectory(p)
        for (let i = 0; i < 5; i++) {
          yield* fx.tmpfs(p)
          yield* fs.writeFileString(`${p}/layer`, String(i))
        }
        const all = targetsAt(yield* fx.table, p)
        assert.strictEqual(all.length, 5)
        yield* mounter.unmount(root, all.slice(0, 1), { lazy: true })
        assert.strictEqual(countAt(yield* fx.table, p), 4)
        assert.strictEqual(yield* fs.readFileString(`${p}/layer`), "3")
        const r = yield* mounter.unmount(root, all.slice(1), { lazy: true })
        assert.isTrue(
          r.every((x) => x._tag === "Unmounted"),
          JSON.stringify(r)
        )
        assert.strictEqual(countAt(yield* fx.table, p), 0)
      })
    )

    it.effect("a busy mount fails with EBUSY unless lazy", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        const p = `${box}/busy`
        yield* fs.makeDirectory(p)
        yield* fx.tmpfs(p)
        const targets = targetsAt(yield* fx.table, p)
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* fs.open(`${p}/held`, { flag: "w" })
            const strict = yield* mounter.unmount(root, targets, { lazy: false })
            assert.strictEqual(strict[0]?._tag, "Failed")
            if (strict[0]?._tag === "Failed") assert.strictEqual(strict[0].failure.errno, "EBUSY")
            assert.strictEqual(countAt(yield* fx.table, p), 1)
            const lazy = yield* mounter.unmount(root, targets, { lazy: true })
            assert.strictEqual(lazy[0]?._tag, "Unmounted")
            assert.strictEqual(countAt(yield* fx.table, p), 0)
          })
        )
      })
    )

    it.effect("a bind mount is unmounted without touching its source", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        yield* fs.makeDirectory(`${box}/src`)
        yield* fs.makeDirectory(`${box}/dst`)
        yield* fs.writeFileString(`${box}/src/data`, "csi data")
        yield* fx.bind(`${box}/src`, `${box}/dst`)
        assert.strictEqual(yield* fs.readFileString(`${box}/dst/data`), "csi data")
        const r = yield* mounter.unmount(root, targetsAt(yield* fx.table, `${box}/dst`), { lazy: true })
        assert.strictEqual(r[0]?._tag, "Unmounted")
        assert.isFalse(yield* fs.exists(`${box}/dst/data`))
        assert.strictEqual(yield* fs.readFileString(`${box}/src/data`), "csi data")
      })
    )

    it.effect("a bind of a file on a file is verified and unmounted; the file beneath shows again", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        yield* fs.makeDirectory(`${box}/cm`)
        yield* fs.writeFileString(`${box}/cm/app.conf`, "from the configmap")
        yield* fs.makeDirectory(`${box}/subpath`)
        yield* fs.writeFileString(`${box}/subpath/0`, "")
        yield* fx.bind(`${box}/cm/app.conf`, `${box}/subpath/0`)
        assert.strictEqual(yield* fs.readFileString(`${box}/subpath/0`), "from the configmap")
        const targets = targetsAt(yield* fx.table, `${box}/subpath/0`)
        assert.strictEqual(targets.length, 1)
        const r = yield* mounter.unmount(root, targets, { lazy: true })
        assert.deepStrictEqual(r, [{ _tag: "Unmounted", target: `${box}/subpath/0` }])
        assert.strictEqual(countAt(yield* fx.table, `${box}/subpath/0`), 0)
        assert.strictEqual(yield* fs.readFileString(`${box}/subpath/0`), "")
        assert.strictEqual(yield* fs.readFileString(`${box}/cm/app.conf`), "from the configmap")
      })
    )

    it.effect(
      "propagation: a detach takes the copies on peers and slaves; a copy holding a mount of its own stays",
      () =>
        Effect.gen(function* () {
          const { fx, fs, box, root, mounter } = yield* setup
          // A data disk, shared; the kubelet directory a bind of it (a peer); a slave of it elsewhere.
          yield* fs.makeDirectory(`${box}/disk`)
          yield* fx.tmpfs(`${box}/disk`)
          yield* fx.propagation(`${box}/disk`, "shared")
          for (const v of ["v1", "v2", "v3"]) yield* fs.makeDirectory(`${box}/disk/kubelet/p/${v}`, { recursive: true })
          yield* fs.writeFileString(`${box}/disk/kubelet/p/cfg`, "config")
          yield* fs.writeFileString(`${box}/disk/kubelet/p/sub`, "")
          yield* fs.makeDirectory(`${box}/kubelet`)
          yield* fx.bind(`${box}/disk/kubelet`, `${box}/kubelet`)
          yield* fs.makeDirectory(`${box}/slave`)
          yield* fx.bind(`${box}/disk`, `${box}/slave`)
          yield* fx.propagation(`${box}/slave`, "slave")
          // Pod volumes below the kubelet directory: a tmpfs with one inside, a bind of a file, and one whose
          // copy on the disk gets a mount of its own inside it.
          yield* fx.tmpfs(`${box}/kubelet/p/v1`)
          yield* fs.makeDirectory(`${box}/kubelet/p/v1/inner`)
          yield* fx.tmpfs(`${box}/kubelet/p/v1/inner`)
          yield* fx.bind(`${box}/kubelet/p/cfg`, `${box}/kubelet/p/sub`)
          yield* fx.tmpfs(`${box}/kubelet/p/v2`)
          yield* fx.propagation(`${box}/disk/kubelet/p/v2`, "private")
          yield* fs.makeDirectory(`${box}/disk/kubelet/p/v2/own`)
          yield* fx.tmpfs(`${box}/disk/kubelet/p/v2/own`)
          const shape = (table: ReadonlyArray<MountInfo.MountEntry>) =>
            table
              .filter((e) => e.mountPoint.startsWith(`${box}/`))
              .map((e) => e.mountPoint.slice(box.length))
              .sort()
          const before = yield* fx.table
          assert.deepStrictEqual(shape(before), [
            "/disk",
            "/disk/kubelet/p/sub",
            "/disk/kubelet/p/v1",
            "/disk/kubelet/p/v1/inner",
            "/disk/kubelet/p/v2",
            "/disk/kubelet/p/v2/own",
            "/kubelet",
            "/kubelet/p/sub",
            "/kubelet/p/v1",
            "/kubelet/p/v1/inner",
            "/kubelet/p/v2",
            "/slave",
            "/slave/kubelet/p/sub",
            "/slave/kubelet/p/v1",
            "/slave/kubelet/p/v1/inner",
            "/slave/kubelet/p/v2"
          ])
          const r = yield* mounter.unmount(
            root,
            [
              ...targetsAt(before, `${box}/kubelet/p/v1`),
              ...targetsAt(before, `${box}/kubelet/p/sub`),
              ...targetsAt(before, `${box}/kubelet/p/v2`)
            ],
            { lazy: true }
          )
          assert.deepStrictEqual(
            r.map((x) => x._tag),
            ["Unmounted", "Unmounted", "Unmounted"]
          )
          // Every copy went, but the disk's copy of v2, which holds a mount of its own.
          assert.deepStrictEqual(shape(yield* fx.table), [
            "/disk",
            "/disk/kubelet/p/v2",
            "/disk/kubelet/p/v2/own",
            "/kubelet",
            "/slave"
          ])
          // The table says so too: the copies were peers (shared:N) and slaves (master:N) of the detached mounts.
          const v1 = before.find((e) => e.mountPoint === `${box}/kubelet/p/v1`)
          const copies = Programs.propagatedUnmounts(before, v1 === undefined ? [] : [v1.id])
          assert.deepStrictEqual(copies.map((c) => c.entry.mountPoint.slice(box.length)).sort(), [
            "/disk/kubelet/p/v1",
            "/disk/kubelet/p/v1/inner",
            "/slave/kubelet/p/v1",
            "/slave/kubelet/p/v1/inner"
          ])
        })
    )

    it.effect("a lazy unmount of a parent detaches its children too", () =>
      Effect.gen(function* () {
        const { fx, fs, box, root, mounter } = yield* setup
        yield* fs.makeDirectory(`${box}/p`)
        yield* fx.tmpfs(`${box}/p`)
        yield* fs.makeDirectory(`${box}/p/c`)
        yield* fx.tmpfs(`${box}/p/c`)
        const r = yield* mounter.unmount(root, targetsAt(yield* fx.table, `${box}/p`), { lazy: true })
        assert.strictEqual(r[0]?._tag, "Unmounted")
        const t = yield* fx.table
        assert.strictEqual(countAt(t, `${box}/p`) + countAt(t, `${box}/p/c`), 0)
      })
    )
  })
