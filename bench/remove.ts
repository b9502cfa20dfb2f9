/**
 * Removal benchmark. A tree of 10,000 files in 1,000 directories (10 files
 * each, 100 directories of 10) on the real disk (the system temporary
 * directory, or /var/tmp where that is a tmpfs): `SafeRemove.remove` (the
 * walk in its helper process) against `rm -rf --one-file-system` of the same
 * tree (timed as the whole process, as an operator runs it), and the floor
 * of a walk over descriptors in C (`openat`, `getdents64`, `unlinkat`,
 * bench/c/removetree.c), the rows taking turns, each on a freshly written
 * copy (the writing is not timed, and written back before the run; the page
 * cache is warm for all).
 *
 * Target (issue 26): SafeRemove within 1.2x of `rm -rf --one-file-system`.
 *
 * Then the trees a hostile pod can make, against `rm` of the same tree: a
 * chain of directories 100,000 deep, and 1,000,000 files in one directory
 * (built by `packages/node/test/fixtures/bigtree.c`, compiled here with
 * `cc`), with peak memory and the size of the report.
 */
import { existsSync } from "node:fs"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Directory, HostCommand, HostPath, SafeRemove } from "@hostnode/core"
import { NodeDirectory } from "@hostnode/node"
import { Effect, FileSystem, References } from "effect"
import { cPrograms, cRun, inProcess, processRun, realDisk, report, row, runsOf, turns } from "./Bench.ts"

const Top = 100
const PerTop = 10
const FilesPerDir = 10

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dirs = yield* Directory.Directories
  const c = yield* cPrograms
  const disk = yield* realDisk
  const box = yield* fs.realPath(
    yield* fs.makeTempDirectoryScoped({ directory: disk.dir, prefix: "hostnode-bench-remove-" })
  )
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
    // Written back before the run: the run's unlinks do not wait behind the build's writes.
    yield* HostCommand.run("sync", ["-f", box])
  }).pipe(Effect.orDie)
  // The helper process started before anything is timed.
  yield* build
  yield* SafeRemove.remove(["/var/lib/kubelet/pods/p1"], {
    hostRoot: yield* HostPath.decodeRoot(box).pipe(Effect.orDie)
  }).pipe(Effect.orDie)
  const helper = () => [helperPid]
  let helperPid = (yield* dirs.credentials).pid
  const walk = c("removetree")
  const rm = "rm -rf --one-file-system (a process)"
  const measured = yield* turns(runsOf(7), [
    row({ name: rm, setup: build, run: () => processRun("rm", ["rm", "-rf", "--one-file-system", "--", tree]) }),
    ...(typeof walk === "string"
      ? [
          row({
            name: "C: openat, getdents64, unlinkat walk (bench/c/removetree.c)",
            setup: build,
            run: () => cRun("walk", [walk, tree])
          })
        ]
      : []),
    row({
      name: "SafeRemove.remove, NodeDirectory (the walk in its helper process)",
      setup: build,
      run: () =>
        inProcess(
          Effect.flatMap(HostPath.decodeRoot(box), (hostRoot) =>
            SafeRemove.remove(["/var/lib/kubelet/pods/p1"], { hostRoot })
          ).pipe(Effect.orDie),
          helper
        ).pipe(
          Effect.flatMap((r) =>
            r.value.kept.length > 0 || r.value.removedCount === 0
              ? Effect.die(new Error(`removed ${r.value.removedCount}, kept ${r.value.kept.length}`))
              : Effect.succeed({ ...r, note: `${r.value.removedCount} removed` })
          ),
          Effect.tap(() =>
            Effect.gen(function* () {
              helperPid = (yield* dirs.credentials).pid
            })
          )
        ),
      target: { ratio: 1.2, of: rm }
    })
  ])
  if (yield* fs.exists(tree)) return yield* Effect.die(new Error("the tree is still there"))
  yield* report(
    `${Top * PerTop * FilesPerDir} files in ${Top * PerTop} directories (+${Top} above them) on ${disk.fsType} (${disk.dir})`,
    [
      ...measured,
      ...(typeof walk === "string" ? [] : [{ name: "C walk (bench/c/removetree.c)", skipped: walk.skipped }])
    ],
    rm
  )

  // Trees a hostile pod can make.
  const source = new URL("../packages/node/test/fixtures/bigtree.c", import.meta.url).pathname
  const tool = `${box}/bigtree`
  const cc = yield* HostCommand.run("cc", ["-O2", "-o", tool, source]).pipe(Effect.orDie)
  if (cc.exitCode !== 0 || !existsSync(tool)) return yield* Effect.die(new Error(`cc: ${cc.stderr}`))
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
      yield* HostCommand.run("sync", ["-f", box])
    }).pipe(Effect.orDie)
    const rmBig = "rm -rf --one-file-system (a process)"
    const rows = yield* turns(runsOf(3), [
      row({ name: rmBig, setup: make, run: () => processRun("rm", ["rm", "-rf", "--one-file-system", "--", dir]) }),
      row({
        name: "SafeRemove.remove, NodeDirectory (the walk in its helper process)",
        setup: make,
        run: () =>
          inProcess(
            Effect.flatMap(HostPath.decodeRoot(box), (hostRoot) =>
              SafeRemove.remove(["/var/lib/kubelet/pods/p2"], { hostRoot })
            ).pipe(Effect.orDie),
            helper
          ).pipe(
            Effect.flatMap((r) =>
              Effect.gen(function* () {
                if (r.value.kept.length > 0 || (yield* Effect.orDie(fs.exists(dir))))
                  return yield* Effect.die(new Error("not removed"))
                helperPid = (yield* dirs.credentials).pid
                return { ...r, note: `report ${JSON.stringify(r.value).length} bytes` }
              })
            )
          )
      })
    ])
    yield* report(`${b.name} on ${disk.fsType}`, rows, rmBig)
  }
}).pipe(Effect.scoped)

Main.pipe(
  Effect.provideService(References.MinimumLogLevel, "Warn"),
  Effect.provide(NodeDirectory.layer),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
