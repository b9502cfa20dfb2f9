/**
 * The dry-run file system is a stand-in for the real one: it passes the
 * shared FileSystem conformance suite, on a real temporary directory it never
 * changes, and every method (the derived ones too: `stream`, `sink`,
 * `exists`, `readFileString`) sees the overlay.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DryRun } from "@hostnode/sim"
import * as DryRunFiles from "@hostnode/sim/internal/dryrun/fileSystem"
import { FileSystemConformance } from "@hostnode/test/conformance"
import { Effect, FileSystem, Layer, Option, Stream } from "effect"

/** The dry-run file system over the real one, with a plan of its own. */
const dryRunLayer = DryRunFiles.layerFileSystem.pipe(
  Layer.provideMerge(Layer.merge(NodeFileSystem.layer, DryRun.DryRunPlan.layer))
)

/** Every file below `dir` on the real disk with its bytes, mode and owner: what a dry run must leave as it was. */
const snapshot = (dir: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const names = (yield* fs.readDirectory(dir, { recursive: true })).sort()
    return yield* Effect.forEach(names, (name) =>
      Effect.gen(function* () {
        const path = `${dir}/${name}`
        const info = yield* fs.lstat(path)
        const data = info.type === "File" ? Array.from(yield* fs.readFile(path)).join(",") : ""
        const link = info.type === "SymbolicLink" ? yield* fs.readLink(path) : ""
        return `${name} ${info.mode.toString(8)} ${Option.getOrElse(info.uid, () => -1)} ${data} ${link}`
      })
    )
  }).pipe(Effect.provide(NodeFileSystem.layer))

/** A real temporary directory, scoped, holding one file the dry runs may overwrite. */
const realTemp = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-dry-run-fs-" })
  yield* fs.writeFileString(`${dir}/on-disk`, "host")
  return dir
}).pipe(Effect.provide(NodeFileSystem.layer))

// The suite's roots are directories the dry run makes (in its overlay) inside
// one real temporary directory: everything the suite does happens there, and
// the disk must come out as it was.
let roots = 0
FileSystemConformance.suite("DryRun.layerFileSystem (over a real temporary directory)", dryRunLayer, {
  root: Effect.gen(function* () {
    const dir = yield* realTemp
    const fs = yield* FileSystem.FileSystem
    const n = yield* Effect.sync(() => ++roots)
    const root = `${dir}/root-${n}`
    yield* fs.makeDirectory(root)
    const before = yield* snapshot(dir)
    yield* Effect.addFinalizer(() =>
      Effect.orDie(Effect.map(snapshot(dir), (after) => assert.deepStrictEqual(after, before)))
    )
    return root
  })
})

describe("DryRun.layerFileSystem", () => {
  it.effect("a file written in a dry run reads back through every method, and the disk is unchanged", () =>
    Effect.gen(function* () {
      const dir = yield* realTemp
      const before = yield* snapshot(dir)
      const fs = yield* FileSystem.FileSystem
      const bytes = new TextEncoder().encode("written in a dry run")
      for (const name of ["new", "on-disk"]) {
        const path = `${dir}/${name}`
        yield* fs.writeFile(path, bytes)
        assert.isTrue(yield* fs.exists(path))
        assert.deepStrictEqual(yield* fs.readFile(path), bytes)
        assert.strictEqual(yield* fs.readFileString(path), "written in a dry run")
        const streamed = yield* Stream.runCollect(fs.stream(path, { chunkSize: 5 }))
        assert.strictEqual([...streamed].map((b) => new TextDecoder().decode(b)).join(""), "written in a dry run")
        const read = yield* Effect.scoped(
          Effect.gen(function* () {
            const file = yield* fs.open(path)
            const buffer = new Uint8Array(64)
            const n = yield* file.read(buffer)
            return buffer.subarray(0, Number(n))
          })
        )
        assert.deepStrictEqual(read, bytes)
      }
      yield* Stream.make(new TextEncoder().encode("sunk")).pipe(Stream.run(fs.sink(`${dir}/sunk`)))
      assert.strictEqual(yield* fs.readFileString(`${dir}/sunk`), "sunk")
      yield* fs.remove(`${dir}/on-disk`)
      assert.isFalse(yield* fs.exists(`${dir}/on-disk`))
      assert.deepStrictEqual(yield* snapshot(dir), before)
      const recorded = (yield* DryRun.steps).map(DryRun.renderStep)
      assert.includeMembers(recorded, [
        `FileSystem create and write ${dir}/new`,
        `FileSystem write ${dir}/on-disk`,
        `FileSystem remove ${dir}/on-disk`
      ])
    }).pipe(Effect.provide(dryRunLayer))
  )
})
