/**
 * The dry-run layers as a library, below the CLI: what an operation
 * pretended to do is visible to what it reads next (a removed directory is
 * gone, an unmounted mount leaves the table the process reads), and the host
 * underneath is never changed. The CLI's `--dry-run` end to end (every
 * subcommand's plan against its real run) is `packages/cli/test/DryRun.test.ts`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Mounter, MountInfo } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { DryRun, MemoryNode } from "@hostnode/sim"
import * as DryRunFiles from "@hostnode/sim/internal/dryrun/fileSystem"
import { MountFixture } from "@hostnode/test"
import { Effect, FileSystem, Layer, Ref } from "effect"

/** The top mount at `path` as a `Mounter` target. */
const targetAt = (table: ReadonlyArray<MountInfo.MountEntry>, path: string): Programs.Target => {
  const top = table.filter((e) => e.mountPoint === path).sort((a, b) => b.id - a.id)[0]
  return { path, mountId: top?.id ?? -1, tablePath: path }
}

describe("the dry-run overlay", () => {
  it.effect("a removed directory is gone for the reads that follow, and the host keeps it", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const viewed = Effect.gen(function* () {
        const dry = yield* FileSystem.FileSystem
        yield* dry.remove("/a/b", { recursive: true })
        yield* dry.writeFileString("/a/c/new", "x")
        yield* dry.rename("/a/c", "/a/d")
        return {
          a: [...(yield* dry.readDirectory("/a"))].sort(),
          b: yield* dry.exists("/a/b/f"),
          moved: yield* dry.readFileString("/a/d/new"),
          kept: yield* dry.readFileString("/a/d/old")
        }
      }).pipe(Effect.provide(DryRunFiles.layerFileSystem))
      const seen = yield* viewed.pipe(Effect.provide(DryRun.DryRunPlan.layer))
      assert.deepStrictEqual(seen, { a: ["d"], b: false, moved: "x", kept: "o" })
      assert.deepStrictEqual([...(yield* fs.readDirectory("/a"))].sort(), ["b", "c"])
      assert.isFalse(yield* fs.exists("/a/c/new"))
    }).pipe(Effect.provide(MemoryNode.layer({ files: { "/a/b/f": "f", "/a/c/old": "o" } })))
  )

  it.effect("an unmount hides the mount and the mounts below it from the table, not from the host", () =>
    Effect.gen(function* () {
      const fx = yield* MountFixture.MountFixture
      yield* fx.tmpfs("/m")
      const fs = yield* FileSystem.FileSystem
      yield* fs.makeDirectory("/m/inner").pipe(Effect.orDie)
      yield* fx.tmpfs("/m/inner")
      const before = yield* fx.table
      const seen = Effect.gen(function* () {
        const mounter = yield* Mounter.Mounter
        const results = yield* mounter.unmount(
          Programs.handle({ path: "/" }),
          [targetAt(before, "/m"), { path: "/nothing", mountId: 0, tablePath: "/nothing" }],
          { lazy: true }
        )
        const table = yield* MountInfo.read()
        return {
          results: results.map((r) => (r._tag === "Unverified" ? `${r._tag}: ${r.reason}` : r._tag)),
          points: table.map((e) => e.mountPoint)
        }
      }).pipe(Effect.provide(DryRun.layer), Effect.provide(DryRun.DryRunPlan.layer))
      const { results, points } = yield* seen
      // A path that is not there is refused as the real mounters refuse it (nothing recorded).
      assert.deepStrictEqual(results, ["Unmounted", "Unverified: Gone"])
      assert.notInclude(points, "/m")
      assert.notInclude(points, "/m/inner")
      assert.includeMembers(
        (yield* fx.table).map((e) => e.mountPoint),
        ["/m", "/m/inner"]
      )
    }).pipe(
      Effect.provide(MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryNode.layer({ files: { "/m/.keep": "" } }))))
    )
  )

  it.effect(
    "a pass of many unmounts reads the mount table a fixed number of times, and detaches stacks and subtrees",
    () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture.MountFixture
        const targets = Array.from({ length: 40 }, (_, i) => `/p/m${i}`)
        for (const t of targets) yield* fx.tmpfs(t)
        yield* fx.tmpfs("/p/m0")
        const fs = yield* FileSystem.FileSystem
        const reads = yield* Ref.make(0)
        const counting = Layer.succeed(FileSystem.FileSystem, {
          ...fs,
          readFileString: (path, encoding) =>
            Ref.update(reads, (n) => (path.endsWith("/mountinfo") ? n + 1 : n)).pipe(
              Effect.andThen(fs.readFileString(path, encoding))
            )
        })
        const table = yield* fx.table
        const stack = table.filter((e) => e.mountPoint === "/p/m0").sort((a, b) => b.id - a.id)
        const results = yield* Effect.gen(function* () {
          const mounter = yield* Mounter.Mounter
          // The stacked /p/m0 twice: the second target finds the one underneath; a third names the mount below them.
          return yield* mounter.unmount(
            Programs.handle({ path: "/" }),
            [
              ...stack.map((e) => ({ path: "/p/m0", mountId: e.id, tablePath: "/p/m0" })),
              { path: "/p/m0", mountId: (stack[1]?.id ?? 0) - 1, tablePath: "/p/m0" },
              ...targets.slice(1).map((t) => targetAt(table, t))
            ],
            { lazy: true }
          )
        }).pipe(Effect.provide(DryRun.layer), Effect.provide(DryRun.DryRunPlan.layer), Effect.provide(counting))
        // Once by the mounter for the whole call, once by the dry run's directories (the stack's mount point
        // it uncovered needs a mount id), whatever the number of targets: none per target.
        assert.strictEqual(yield* Ref.get(reads), 2)
        assert.deepStrictEqual(
          results.map((r) => (r._tag === "Unverified" ? `${r._tag}: ${r.reason}` : r._tag)),
          // The third names the mount the path now leads to (the root's), where nothing is mounted at the path
          // itself: umount2's EINVAL, as for real.
          ["Unmounted", "Unmounted", "Failed", ...targets.slice(1).map(() => "Unmounted")]
        )
      }).pipe(
        Effect.provide(
          MountFixture.layerMemory.pipe(
            Layer.provideMerge(
              MemoryNode.layer({
                files: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`/p/m${i}/.keep`, ""]))
              })
            )
          )
        )
      )
  )
})
