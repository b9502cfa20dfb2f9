/**
 * Removal benchmark (issue: directory handles). A tree of 10,000 files in
 * 1,000 directories (10 files each, 100 directories of 10) in a temporary
 * directory on the real disk: `SafeRemove.remove` through the real directory
 * handles against `rm -rf --one-file-system` of the same tree, in the same
 * run, each on a freshly written copy (the writing is not timed; the page
 * cache is warm for both). `rm` is timed as the whole process, as an
 * operator runs it.
 *
 * Target: SafeRemove within 1.5x of `rm -rf --one-file-system`.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostCommand, SafeRemove } from "@hostnode/core"
import { NodeDirectory } from "@hostnode/node"
import { Console, Effect, FileSystem } from "effect"
import { median, type Row, table } from "./Bench.ts"

const Top = 100
const PerTop = 10
const FilesPerDir = 10

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.realPath(yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bench-remove-" }))
  const tree = `${box}/var/lib/kubelet/pods/p1`
  const build = Effect.gen(function* () {
    for (let t = 0; t < Top; t++) {
      for (let d = 0; d < PerTop; d++) {
        const dir = `${tree}/t${t}/d${d}`
        yield* fs.makeDirectory(dir, { recursive: true })
        yield* Effect.forEach(
          Array.from({ length: FilesPerDir }, (_, f) => `${dir}/f${f}`),
          (p) => fs.writeFileString(p, "x"),
          { concurrency: 8, discard: true }
        )
      }
    }
  }).pipe(Effect.orDie)
  const runs = 5
  let removed = 0
  const safe = yield* median(runs, build, () =>
    SafeRemove.remove(["/var/lib/kubelet/pods/p1"], { hostRoot: box }).pipe(
      Effect.tap((r) =>
        Effect.sync(() => {
          removed = r.removed.length
          if (r.kept.length > 0) throw new Error(`kept ${r.kept.length}`)
        })
      )
    )
  )
  const rm = yield* median(runs, build, () => HostCommand.run("rm", ["-rf", "--one-file-system", "--", tree]))
  const left = yield* fs.exists(tree)
  if (left) return yield* Effect.die(new Error("the tree is still there"))
  const rows: Array<Row> = [
    { name: "rm -rf --one-file-system (a process)", ms: rm },
    { name: "SafeRemove.remove, NodeDirectory (handles: openat, getdents64, unlinkat)", ms: safe }
  ]
  yield* table(
    `${Top * PerTop * FilesPerDir} files in ${Top * PerTop} directories (+${Top} above them) on the real disk, median of ${runs}`,
    rows,
    rows[0]!.name
  )
  yield* Console.log(
    `\nSafeRemove removed ${removed} paths: ${(safe / rm).toFixed(2)}x rm -rf --one-file-system (target <= 1.5x).`
  )
}).pipe(Effect.scoped)

Main.pipe(Effect.provide(NodeDirectory.layer), Effect.provide(NodeServices.layer), NodeRuntime.runMain)
