/**
 * Snapshot benchmark. Two trees in a temporary directory on the real disk
 * (the system temporary directory, or /var/tmp where that is a tmpfs): 500
 * files / 20 MB in 25 directories, and 5,000 files / 200 MB in 100
 * directories. For each, the rows take turns, and each restore-like row
 * runs on a disk in the same state: after the same take of the tree, every
 * file then changed and written back (`sync -f`), untimed:
 *
 * - the C restore protocol (bench/c/restore.c): what `restore` does to
 *   write a changed file and nothing else (a temporary file created
 *   exclusively beside it, written from the snapshot's data, its owner
 *   checked, mode and times set; one syncfs; every file renamed over its
 *   target; one syncfs): the baseline of a restore;
 * - `cp -a` of the original tree over the existing files, then `sync -f`;
 * - `Snapshot.restore` with every file changed (target: within 1.2x the C
 *   protocol, issue 26);
 * - `Snapshot.restore` with nothing changed (after a take, nothing written);
 * - `Snapshot.takeOf` (after the previous snapshot is discarded), against
 *   `cp -a` of the tree into a new directory, then `sync -f` (targets: take
 *   within 1.2x of it, a restore with nothing changed within 0.5x).
 *
 * Peak memory: of this process and its helper for our rows (reset before
 * each run), of the child for the others; and a fresh process
 * (`bench/snapshot-memory.ts`) takes and restores the large tree and reports
 * its peak resident set above its resident set before the first operation
 * (target: at most 64 MB).
 */
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Directory, HostCommand, HostPath, Snapshot, Systemd } from "@hostnode/core"
import { NodeDirectory, NodeHashing } from "@hostnode/node"
import { RefusingSystemd } from "@hostnode/test"
import { Console, Effect, FileSystem, Layer, References } from "effect"
import { cPrograms, cRun, inProcess, medianOf, processRun, realDisk, report, row, runsOf, turns } from "./Bench.ts"
import { layout, writeTree } from "./snapshotTree.ts"

// Below a temporary host root nothing reloads systemd; a reload here would be a bug.
const noSystemd = RefusingSystemd.make("below a temporary host root nothing reloads systemd")

const run = (cmd: string, args: ReadonlyArray<string>) =>
  HostCommand.run(cmd, args).pipe(
    Effect.flatMap((r) =>
      r.exitCode === 0
        ? Effect.void
        : Effect.die(new Error(`${cmd} ${args.join(" ")} exited ${r.exitCode}: ${r.stderr}`))
    ),
    Effect.orDie
  )

/** The list bench/c/restore.c takes, from the snapshot's manifest: each file's bytes in `data` and its target. */
const restoreList = (dir: string, root: string, file: string) => {
  const manifest = JSON.parse(readFileSync(`${dir}/manifest.json`, "utf8")) as {
    readonly entries: ReadonlyArray<{
      readonly type: string
      readonly path: string
      readonly offset?: number
      readonly size?: number
      readonly mode?: number
      readonly uid?: number
      readonly gid?: number
      readonly atimeNs?: string
      readonly mtimeNs?: string
    }>
  }
  const lines = manifest.entries
    .filter((e) => e.type === "File")
    .map(
      (e) =>
        `${e.offset} ${e.size} ${(e.mode ?? 0o644).toString(8)} ${e.uid} ${e.gid} ${e.atimeNs ?? e.mtimeNs ?? 0} ${e.mtimeNs ?? 0} ${root}${e.path}`
    )
  writeFileSync(file, `${lines.join("\n")}\n`)
  return file
}

const measureTree = (box: string, fsType: string, name: string, files: number, total: number, dirs: number) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const c = yield* cPrograms
    const d = yield* Directory.Directories
    const root = `${box}/${name}/root`
    const tree = `${root}/etc/tree`
    const original = `${box}/${name}/original`
    const copy = `${box}/${name}/copy`
    const dir = `${box}/${name}/snap`
    const paths = ["/etc/tree"]
    const l = layout(files, total, dirs)
    yield* writeTree(tree, l, 0).pipe(Effect.orDie)
    yield* run("cp", ["-a", "--", tree, original])
    const sync = run("sync", ["-f", box])
    yield* sync
    const discard = Snapshot.discard({ dir }).pipe(Effect.orDie)
    const take = Snapshot.takeOf({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie), paths }).pipe(
      Effect.orDie
    )
    let round = 0
    // The state every restore-like row starts from: the tree as it was, taken; then every file changed, written back.
    const changed = Effect.gen(function* () {
      yield* discard
      yield* writeTree(tree, l, 0).pipe(Effect.orDie)
      const s = yield* take
      round++
      yield* writeTree(tree, l, round).pipe(Effect.orDie)
      yield* sync
      return s
    })
    const helper = () => [helperPid]
    let helperPid = (yield* d.credentials).pid
    /** `e`, then notes the helper process (a new one if the last was given up on). */
    const afterwards = <A, E, R>(e: Effect.Effect<A, E, R>) =>
      Effect.tap(e, () =>
        Effect.gen(function* () {
          helperPid = (yield* d.credentials).pid
        })
      )
    const restoreProgram = c("restore")
    const cBase = "C restore protocol (bench/c/restore.c)"
    const cpNew = "cp -a into a new directory + sync -f"
    const rows = yield* turns(runsOf(files > 1000 ? 3 : 7), [
      ...(typeof restoreProgram === "string"
        ? [
            row({
              name: cBase,
              setup: Effect.map(changed, () => restoreList(dir, root, `${box}/${name}/list`)),
              run: (list: string) => cRun("restore.c", [restoreProgram, `${dir}/data`, list])
            })
          ]
        : []),
      row({
        name: "cp -a of the original over the existing files + sync -f",
        setup: changed,
        run: () =>
          Effect.gen(function* () {
            const r = yield* processRun("cp", ["cp", "-a", "--", `${original}/.`, `${tree}/`])
            const [ms] = yield* Effect.map(inProcess(sync), (s) => [s.ms] as const)
            return { ...r, ms: r.ms + ms }
          })
      }),
      row({
        name: "Snapshot.restore, every file changed",
        setup: changed,
        run: (s: Snapshot.Snapshot) => afterwards(inProcess(s.restore.pipe(Effect.orDie), helper)),
        target: { ratio: 1.2, of: cBase }
      }),
      row({
        name: "Snapshot.restore, nothing changed",
        setup: Effect.gen(function* () {
          yield* discard
          yield* writeTree(tree, l, 0).pipe(Effect.orDie)
          const s = yield* take
          yield* sync
          return s
        }),
        run: (s: Snapshot.Snapshot) => afterwards(inProcess(s.restore.pipe(Effect.orDie), helper)),
        target: { ratio: 0.5, of: cpNew }
      }),
      row({
        name: cpNew,
        setup: Effect.andThen(fs.remove(copy, { recursive: true, force: true }).pipe(Effect.orDie), sync),
        run: () =>
          Effect.gen(function* () {
            const r = yield* processRun("cp", ["cp", "-a", "--", tree, copy])
            const [ms] = yield* Effect.map(inProcess(sync), (s) => [s.ms] as const)
            return { ...r, ms: r.ms + ms }
          })
      }),
      row({
        name: "Snapshot.takeOf",
        setup: Effect.andThen(discard, sync),
        run: () => afterwards(inProcess(take, helper)),
        target: { ratio: 1.2, of: cpNew }
      })
    ])
    yield* fs.remove(copy, { recursive: true, force: true }).pipe(Effect.orDie)
    yield* report(
      `${files.toLocaleString("en")} files, ${(total / 1024 / 1024).toFixed(0)} MB in ${dirs} directories on ${fsType} (${box})`,
      [...rows, ...(typeof restoreProgram === "string" ? [] : [{ name: cBase, skipped: restoreProgram.skipped }])],
      typeof restoreProgram === "string" ? cBase : cpNew
    )
    const med = (n: string) => medianOf(rows.find((r) => r.name === n)?.runs.map((x) => x.ms) ?? [])
    const both = med("Snapshot.takeOf") + med("Snapshot.restore, every file changed")
    yield* Console.log(
      `\nTake + restore (every file changed), medians added: ${(both / 1000).toFixed(2)} s, ${(both / med(cpNew)).toFixed(2)}x ${cpNew} (target <= 2x: ${both <= 2 * med(cpNew) ? "met" : "not met"}).`
    )
    yield* discard
  })

const memoryChild = fileURLToPath(new URL("./snapshot-memory.ts", import.meta.url))

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const disk = yield* realDisk
  const box = yield* fs.realPath(
    yield* fs.makeTempDirectoryScoped({ directory: disk.dir, prefix: "hostnode-bench-snapshot-" })
  )
  yield* measureTree(box, disk.fsType, "small", 500, 20 * 1024 * 1024, 25)
  const large = { files: 5000, total: 200 * 1024 * 1024, dirs: 100 }
  yield* measureTree(box, disk.fsType, "large", large.files, large.total, large.dirs)
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
    }).pipe(Effect.orDie)
  const take = yield* child("take")
  yield* writeTree(`${box}/large/root/etc/tree`, layout(large.files, large.total, large.dirs), 99).pipe(Effect.orDie)
  yield* run("sync", ["-f", box])
  const restore = yield* child("restore")
  const mb = (n: number) => `${n.toFixed(1)} MB`
  yield* Console.log(
    `\nPeak memory on the 200 MB tree, each in a fresh process, above its resident set before the operation: ` +
      `take ${mb(take.above)} (from ${mb(take.before)}), restore with every file changed ${mb(restore.above)} (from ${mb(restore.before)}); target <= 64 MB: ${take.above <= 64 && restore.above <= 64 ? "met" : "not met"}.`
  )
}).pipe(Effect.scoped)

Main.pipe(
  Effect.provideService(Systemd.Systemd, noSystemd),
  Effect.provideService(References.MinimumLogLevel, "Warn"),
  Effect.provide(Layer.mergeAll(NodeServices.layer, NodeDirectory.layer.pipe(Layer.orDie), NodeHashing.layer)),
  NodeRuntime.runMain
)
