/**
 * Snapshot benchmark (issue: snapshot). Two trees in a temporary directory on
 * the real disk (the system temporary directory is not a tmpfs here; the
 * benchmark says which file system it ran on): 500 files / 20 MB in 25
 * directories, and 10,000 files / 200 MB in 100 directories. For each, in
 * the same run, `cp -a` of the tree followed by `sync` (the baseline: a copy
 * made durable), `Snapshot.takeOf`, `restore` with every file changed since
 * the take, `restore` with nothing changed, and take + restore. A restore
 * consumes its snapshot, so each restore run takes a fresh one first
 * (untimed).
 *
 * Targets: take within 1.2x; restore with every file changed within 1.5x;
 * restore with nothing changed within 0.5x; take + restore within 2x.
 *
 * Peak memory: a fresh process (`bench/snapshot-memory.ts`) takes and
 * restores the 200 MB tree and reports its peak resident set above its
 * resident set before the first operation (target: at most 64 MB).
 */
import { fileURLToPath } from "node:url"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostCommand, Snapshot, Systemd } from "@hostnode/core"
import { NodeDirectory, NodeHashing } from "@hostnode/node"
import { RefusingSystemd } from "@hostnode/test"
import { Console, Effect, FileSystem, Layer } from "effect"
import { median, type Row, table } from "./Bench.ts"
import { layout, writeTree } from "./snapshotTree.ts"

// Below a temporary host root nothing reloads systemd; a reload here would be a bug.
const noSystemd = RefusingSystemd.make("below a temporary host root nothing reloads systemd")

const sync = HostCommand.run("sync", [])

const measureTree = (box: string, name: string, files: number, total: number, dirs: number, runs: number) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const root = `${box}/${name}/root`
    const tree = `${root}/etc/tree`
    const l = layout(files, total, dirs)
    yield* writeTree(tree, l, 0)
    yield* sync
    const dir = `${box}/${name}/snap`
    const paths = ["/etc/tree"]

    const cpSync = yield* median(
      runs,
      fs.remove(`${box}/${name}/copy`, { recursive: true, force: true }).pipe(Effect.andThen(sync)),
      () =>
        Effect.gen(function* () {
          const cp = yield* HostCommand.run("cp", ["-a", "--", tree, `${box}/${name}/copy`])
          if (cp.exitCode !== 0) return yield* Effect.die(new Error(`cp -a failed: ${cp.stderr}`))
          yield* sync
        })
    )
    yield* fs.remove(`${box}/${name}/copy`, { recursive: true, force: true })
    const discard = Snapshot.discard({ dir }).pipe(Effect.andThen(sync))
    const take = yield* median(runs, discard, () => Snapshot.takeOf({ dir, hostRoot: root, paths }))
    let round = 0
    const changedAll = Effect.gen(function* () {
      yield* discard
      const s = yield* Snapshot.takeOf({ dir, hostRoot: root, paths })
      round++
      yield* writeTree(tree, l, round)
      yield* sync
      return s
    })
    const restoreAll = yield* median(runs, changedAll, (s) => s.restore)
    const unchanged = Effect.gen(function* () {
      yield* discard
      const s = yield* Snapshot.takeOf({ dir, hostRoot: root, paths })
      yield* sync
      return s
    })
    const restoreNone = yield* median(runs, unchanged, (s) => s.restore)
    const fsType = (yield* HostCommand.run("stat", ["-f", "-c", "%T", box])).stdout.trim()
    const rows: Array<Row> = [
      { name: "cp -a + sync (baseline)", ms: cpSync },
      { name: "Snapshot.takeOf", ms: take, note: "target <= 1.2x" },
      { name: "restore, every file changed", ms: restoreAll, note: "target <= 1.5x" },
      { name: "restore, nothing changed", ms: restoreNone, note: "target <= 0.5x" },
      { name: "take + restore (every file changed)", ms: take + restoreAll, note: "target <= 2x" }
    ]
    yield* table(
      `${files} files, ${(total / 1024 / 1024).toFixed(0)} MB in ${dirs} directories on ${fsType} (${box}; median of ${runs})`,
      rows,
      "cp -a + sync (baseline)"
    )
  })

const memoryChild = fileURLToPath(new URL("./snapshot-memory.ts", import.meta.url))

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.realPath(yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bench-snapshot-" }))
  yield* measureTree(box, "small", 500, 20 * 1024 * 1024, 25, 7)
  yield* measureTree(box, "large", 10_000, 200 * 1024 * 1024, 100, 3)
  yield* Snapshot.discard({ dir: `${box}/large/snap` })
  // Each operation in a fresh process: its peak resident set above its own baseline.
  const child = (mode: string) =>
    Effect.gen(function* () {
      const out = yield* HostCommand.run(process.execPath, [
        "--expose-gc",
        "--conditions=@hostnode/source",
        memoryChild,
        mode,
        `${box}/large`
      ])
      if (out.exitCode !== 0) return yield* Effect.die(new Error(`the memory child failed: ${out.stderr}`))
      const line = out.stdout.trim().split("\n").pop() ?? "{}"
      const { before, peak } = JSON.parse(line) as { before: number; peak: number }
      return { before: before / 1024, above: Math.max(0, peak - before) / 1024 }
    })
  const take = yield* child("take")
  yield* writeTree(`${box}/large/root/etc/tree`, layout(10_000, 200 * 1024 * 1024, 100), 99)
  yield* sync
  const restore = yield* child("restore")
  const mb = (n: number) => `${n.toFixed(1)} MB`
  yield* Console.log(
    `\nPeak memory on the 200 MB tree, each in a fresh process, above its resident set before the operation: ` +
      `take ${mb(take.above)} (from ${mb(take.before)}), restore with every file changed ${mb(restore.above)} (from ${mb(restore.before)}); target <= 64 MB.`
  )
}).pipe(Effect.scoped)

Main.pipe(
  Effect.provideService(Systemd.Systemd, noSystemd),
  Effect.provide(Layer.mergeAll(NodeServices.layer, NodeDirectory.layer.pipe(Layer.orDie), NodeHashing.layer)),
  NodeRuntime.runMain
)
