/**
 * Snapshot benchmark (issue: snapshot). A tree of 500 files, 20 MB in all, in
 * 25 directories of a temporary directory on the real disk: `Snapshot.takeOf`
 * and `snapshot.restore` (with every file changed since the take, the worst
 * case, and with nothing changed) against `cp -a` of the same tree followed
 * by `sync`, measured in the same run. Both sides make the copy durable: the
 * snapshot with its fsyncs (the data file, the manifest, each restored file
 * and each directory), the baseline with `sync`.
 *
 * Target: take + restore within 2x of `cp -a` + `sync`.
 *
 * For scale, a floor: the restore's write protocol alone (for each file:
 * create a temporary file, write, fsync, close, rename; then fsync each
 * directory), 16 at a time, straight on `node:fs/promises` with no checks, no
 * comparison and no Effect. It shows what one fsync per file costs on this
 * disk, whatever the code around it.
 */
import * as fsp from "node:fs/promises"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostCommand, Snapshot, Systemd } from "@hostnode/core"
import { RefusingSystemd } from "@hostnode/test"
import { Console, Effect, FileSystem } from "effect"
import { median, type Row, table } from "./Bench.ts"

const Files = 500
const TotalBytes = 20 * 1024 * 1024
const Dirs = 25

const contents = (i: number, round: number, size: number) => {
  const out = new Uint8Array(size)
  for (let k = 0; k < size; k += 97) out[k] = (i + round + k) & 0xff
  return out
}

/** Sizes from 4 KB to about 76 KB, 20 MB in all. */
const sizes = Array.from({ length: Files }, (_, i) => 4096 + ((i * 7919) % 73_728))
const scale = TotalBytes / sizes.reduce((a, b) => a + b, 0)
const scaled = sizes.map((s) => Math.floor(s * scale))

// Below a temporary host root nothing reloads systemd; a reload here would be a bug.
const noSystemd = RefusingSystemd.make("below a temporary host root nothing reloads systemd")

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bench-snapshot-" })
  const root = `${box}/root`
  const tree = `${root}/etc/tree`
  const paths = scaled.map((_, i) => `${tree}/d${i % Dirs}/f${i}.conf`)
  for (let d = 0; d < Dirs; d++) yield* fs.makeDirectory(`${tree}/d${d}`, { recursive: true })
  const write = (round: number) =>
    Effect.forEach(paths, (p, i) => fs.writeFile(p, contents(i, round, scaled[i] ?? 0)), {
      concurrency: 8,
      discard: true
    })
  yield* write(0)
  const total = scaled.reduce((a, b) => a + b, 0)
  yield* HostCommand.run("sync", [])
  const dir = `${box}/snap`
  const runs = 5

  const cpSync = yield* median(
    runs,
    fs.remove(`${box}/copy`, { recursive: true, force: true }).pipe(Effect.andThen(HostCommand.run("sync", []))),
    () =>
      Effect.gen(function* () {
        const cp = yield* HostCommand.run("cp", ["-a", "--", tree, `${box}/copy`])
        if (cp.exitCode !== 0) return yield* Effect.die(new Error(`cp -a failed: ${cp.stderr}`))
        yield* HostCommand.run("sync", [])
      })
  )
  const discardAll = fs
    .remove(dir, { recursive: true, force: true })
    .pipe(Effect.andThen(HostCommand.run("sync", [])), Effect.asVoid)
  const take = yield* median(runs, discardAll, () => Snapshot.takeOf({ dir, hostRoot: root, paths: ["/etc/tree"] }))
  let round = 0
  const changedAll = Effect.gen(function* () {
    round++
    yield* write(round)
    yield* HostCommand.run("sync", [])
    return yield* Snapshot.open({ dir, hostRoot: root })
  })
  const restoreAll = yield* median(runs, changedAll, (s) => s.restore)
  const restoreNone = yield* median(
    runs,
    HostCommand.run("sync", []).pipe(Effect.andThen(Snapshot.open({ dir, hostRoot: root }))),
    (s) => s.restore
  )
  const floorRestore = yield* median(runs, HostCommand.run("sync", []), () =>
    Effect.forEach(
      paths,
      (p, i) =>
        Effect.gen(function* () {
          const tmp = `${p}.floor`
          const h = yield* Effect.promise(() => fsp.open(tmp, "wx", 0o644))
          yield* Effect.promise(() => h.writeFile(contents(i, 0, scaled[i] ?? 0)))
          yield* Effect.promise(() => h.sync())
          yield* Effect.promise(() => h.close())
          yield* Effect.promise(() => fsp.rename(tmp, p))
        }),
      { concurrency: 16, discard: true }
    ).pipe(
      Effect.andThen(
        Effect.forEach(
          Array.from({ length: Dirs }, (_, d) => `${tree}/d${d}`),
          (d) =>
            Effect.promise(() => fsp.open(d, "r")).pipe(
              Effect.flatMap((h) => Effect.promise(() => h.sync().then(() => h.close())))
            ),
          { concurrency: 16, discard: true }
        )
      )
    )
  )
  const rows: Array<Row> = [
    { name: "cp -a + sync (baseline)", ms: cpSync },
    { name: "Snapshot.takeOf", ms: take },
    { name: "restore, every file changed", ms: restoreAll },
    { name: "restore, nothing changed", ms: restoreNone },
    { name: "take + restore (every file changed)", ms: take + restoreAll, note: "target <= 2x" },
    { name: "take + restore (nothing changed)", ms: take + restoreNone },
    { name: "floor: write protocol alone on raw node:fs, every file", ms: floorRestore, note: "for scale" }
  ]
  yield* table(
    `${Files} files, ${(total / 1024 / 1024).toFixed(1)} MB in ${Dirs} directories on ${box} (median of ${runs})`,
    rows,
    rows[0]!.name
  )
  yield* Console.log(
    `\ntake + restore of every file is ${((take + restoreAll) / cpSync).toFixed(2)}x cp -a + sync (target <= 2x).`
  )
}).pipe(Effect.scoped)

Main.pipe(Effect.provideService(Systemd.Systemd, noSystemd), Effect.provide(NodeServices.layer), NodeRuntime.runMain)
