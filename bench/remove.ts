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
 *
 * Then the trees a hostile pod can make, each against `rm -rf
 * --one-file-system` of the same tree, with peak memory (VmHWM, reset before
 * each row through `/proc/PID/clear_refs`; for `SafeRemove` the agent's and
 * its helper process's): a chain of directories 100,000 deep, and 1,000,000
 * files in one directory (built by `packages/node/test/fixtures/bigtree.c`,
 * compiled here with `cc`).
 */
import { readFileSync, writeFileSync } from "node:fs"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Directory, HostCommand, SafeRemove } from "@hostnode/core"
import { NodeDirectory } from "@hostnode/node"
import { Console, Effect, Fiber, FileSystem } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { median, type Row, table, time } from "./Bench.ts"

/** Peak resident memory of `pid` so far, in MiB (0 once it is gone). */
const peakMiB = (pid: number) =>
  Effect.try(() => {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"))
    return m === null ? 0 : Number(m[1]) / 1024
  }).pipe(Effect.orElseSucceed(() => 0))

/** Starts measuring `pid`'s peak from its current size. */
const resetPeak = (pid: number) => Effect.try(() => writeFileSync(`/proc/${pid}/clear_refs`, "5")).pipe(Effect.ignore)

/** `rm -rf --one-file-system` of `path`: its time and its peak memory (sampled every 5 ms). */
const rmMeasured = (path: string) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    return yield* time(
      Effect.scoped(
        Effect.gen(function* () {
          const h = yield* spawner.spawn(ChildProcess.make("rm", ["-rf", "--one-file-system", "--", path]))
          let peak = 0
          const sampler = yield* Effect.forkScoped(
            Effect.forever(
              Effect.flatMap(peakMiB(Number(h.pid)), (m) =>
                Effect.sync(() => {
                  peak = Math.max(peak, m)
                })
              ).pipe(Effect.andThen(Effect.sleep("5 millis")))
            )
          )
          yield* h.exitCode
          yield* Fiber.interrupt(sampler)
          return peak
        })
      )
    )
  })

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
          removed = r.removedCount
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

  // Trees a hostile pod can make.
  const source = new URL("../packages/node/test/fixtures/bigtree.c", import.meta.url).pathname
  const tool = `${box}/bigtree`
  const cc = yield* HostCommand.run("cc", ["-O2", "-o", tool, source])
  if (cc.exitCode !== 0) return yield* Effect.die(new Error(`cc: ${cc.stderr}`))
  const dirs = yield* Directory.Directories
  const helper = (yield* dirs.credentials).pid
  const big = [
    { name: "a chain of directories 100,000 deep", kind: "chain", n: 100_000 },
    { name: "1,000,000 files in one directory", kind: "files", n: 1_000_000 }
  ] as const
  for (const b of big) {
    const dir = `${box}/var/lib/kubelet/pods/p2`
    const make = Effect.gen(function* () {
      yield* fs.makeDirectory(dir, { recursive: true })
      const r = yield* HostCommand.run(tool, [b.kind, dir, String(b.n)])
      if (r.exitCode !== 0) return yield* Effect.die(new Error(`bigtree: ${r.stderr}`))
    }).pipe(Effect.orDie)
    yield* make
    const [rmMs, rmPeak] = yield* rmMeasured(dir)
    yield* make
    yield* resetPeak(process.pid)
    yield* resetPeak(helper)
    const before = { agent: yield* peakMiB(process.pid), helper: yield* peakMiB(helper) }
    const [safeMs, report] = yield* time(SafeRemove.remove(["/var/lib/kubelet/pods/p2"], { hostRoot: box }))
    const after = { agent: yield* peakMiB(process.pid), helper: yield* peakMiB(helper) }
    if (report.kept.length > 0 || (yield* fs.exists(dir))) return yield* Effect.die(new Error("not removed"))
    const rowsBig: Array<Row> = [
      { name: "rm -rf --one-file-system (a process)", ms: rmMs, note: `peak ${rmPeak.toFixed(0)} MiB` },
      {
        name: "SafeRemove.remove, NodeDirectory (the walk in its helper process)",
        ms: safeMs,
        note: `peak +${(after.agent - before.agent).toFixed(0)} MiB in the agent (${after.agent.toFixed(0)} MiB), +${(after.helper - before.helper).toFixed(0)} MiB in its helper (${after.helper.toFixed(0)} MiB); report ${JSON.stringify(report).length} bytes`
      }
    ]
    yield* table(`${b.name} on the real disk, one run`, rowsBig, rowsBig[0]!.name)
  }
}).pipe(Effect.scoped)

Main.pipe(Effect.provide(NodeDirectory.layer), Effect.provide(NodeServices.layer), NodeRuntime.runMain)
