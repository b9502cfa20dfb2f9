/**
 * The conformance suite for `Mounter` implementations: what the real
 * in-process and command-based mounters do, and what the simulated host's
 * mounter must do the same way. A function taking a Layer, so each
 * implementation (and a user's own) runs the very same tests.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { Mounter, type MountInfo } from "@hostnode/core"
import { Effect, FileSystem, type Layer } from "effect"
import { MountFixture } from "./MountFixture.ts"

const countAt = (table: MountInfo.MountTable, path: string): number => table.filter((e) => e.mountPoint === path).length

/**
 * Registers the suite under `name`. `hostLayer` provides the `Mounter` under
 * test, a `MountFixture` that makes mounts in the same mount namespace, and the
 * `FileSystem` that sees them.
 */
export const suite = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem>
): void =>
  layer(hostLayer)(`Mounter conformance: ${name}`, (it) => {
    it.effect("unmounts a tmpfs and reports it", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const mounter = yield* Mounter.Mounter
        const box = yield* fx.sandbox
        yield* fs.makeDirectory(`${box}/m`)
        yield* fx.tmpfs(`${box}/m`)
        yield* fs.writeFileString(`${box}/m/file`, "on tmpfs")
        assert.strictEqual(countAt(yield* fx.table, `${box}/m`), 1)
        const r = yield* mounter.unmount([`${box}/m`], { lazy: true })
        assert.deepStrictEqual(r, [{ _tag: "Unmounted", target: `${box}/m` }])
        assert.strictEqual(countAt(yield* fx.table, `${box}/m`), 0)
        // the directory underneath is visible again, without the tmpfs's file
        assert.isFalse(yield* fs.exists(`${box}/m/file`))
      })
    )

    it.effect("a directory that is not a mount point fails with EINVAL, a missing path with ENOENT", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const mounter = yield* Mounter.Mounter
        const box = yield* fx.sandbox
        yield* fs.makeDirectory(`${box}/plain`)
        const r = yield* mounter.unmount([`${box}/plain`, `${box}/missing`], { lazy: true })
        assert.strictEqual(r.length, 2)
        const [plain, missing] = r
        assert.strictEqual(plain?._tag, "Failed")
        assert.strictEqual(missing?._tag, "Failed")
        if (plain?._tag === "Failed") assert.strictEqual(plain.failure.errno, "EINVAL")
        if (missing?._tag === "Failed") assert.strictEqual(missing.failure.errno, "ENOENT")
      })
    )

    it.effect("on stacked mounts each unmount removes the top one; the same target repeated removes them all", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const mounter = yield* Mounter.Mounter
        const box = yield* fx.sandbox
        const p = `${box}/stack`
        yield* fs.makeDirectory(p)
        for (let i = 0; i < 5; i++) {
          yield* fx.tmpfs(p)
          yield* fs.writeFileString(`${p}/layer`, String(i))
        }
        assert.strictEqual(countAt(yield* fx.table, p), 5)
        yield* mounter.unmount([p], { lazy: true })
        assert.strictEqual(countAt(yield* fx.table, p), 4)
        assert.strictEqual(yield* fs.readFileString(`${p}/layer`), "3")
        const r = yield* mounter.unmount([p, p, p, p], { lazy: true })
        assert.isTrue(r.every((x) => x._tag === "Unmounted"))
        assert.strictEqual(countAt(yield* fx.table, p), 0)
      })
    )

    it.effect("a busy mount fails with EBUSY unless lazy", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const mounter = yield* Mounter.Mounter
        const box = yield* fx.sandbox
        const p = `${box}/busy`
        yield* fs.makeDirectory(p)
        yield* fx.tmpfs(p)
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* fs.open(`${p}/held`, { flag: "w" })
            const strict = yield* mounter.unmount([p], { lazy: false })
            assert.strictEqual(strict[0]?._tag, "Failed")
            if (strict[0]?._tag === "Failed") assert.strictEqual(strict[0].failure.errno, "EBUSY")
            assert.strictEqual(countAt(yield* fx.table, p), 1)
            const lazy = yield* mounter.unmount([p], { lazy: true })
            assert.strictEqual(lazy[0]?._tag, "Unmounted")
            assert.strictEqual(countAt(yield* fx.table, p), 0)
          })
        )
      })
    )

    it.effect("a bind mount is unmounted without touching its source", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const mounter = yield* Mounter.Mounter
        const box = yield* fx.sandbox
        yield* fs.makeDirectory(`${box}/src`)
        yield* fs.makeDirectory(`${box}/dst`)
        yield* fs.writeFileString(`${box}/src/data`, "csi data")
        yield* fx.bind(`${box}/src`, `${box}/dst`)
        assert.strictEqual(yield* fs.readFileString(`${box}/dst/data`), "csi data")
        const r = yield* mounter.unmount([`${box}/dst`], { lazy: true })
        assert.strictEqual(r[0]?._tag, "Unmounted")
        assert.isFalse(yield* fs.exists(`${box}/dst/data`))
        assert.strictEqual(yield* fs.readFileString(`${box}/src/data`), "csi data")
      })
    )

    it.effect("a lazy unmount of a parent detaches its children too", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const mounter = yield* Mounter.Mounter
        const box = yield* fx.sandbox
        yield* fs.makeDirectory(`${box}/p`)
        yield* fx.tmpfs(`${box}/p`)
        yield* fs.makeDirectory(`${box}/p/c`)
        yield* fx.tmpfs(`${box}/p/c`)
        const r = yield* mounter.unmount([`${box}/p`], { lazy: true })
        assert.strictEqual(r[0]?._tag, "Unmounted")
        const t = yield* fx.table
        assert.strictEqual(countAt(t, `${box}/p`) + countAt(t, `${box}/p/c`), 0)
      })
    )
  })
