/**
 * Mount benchmarks. Must run as root inside a private mount namespace;
 * scripts/bench.mjs starts it under `unshare --mount`.
 *
 * - 1,000 sibling tmpfs mounts under a prefix: `unmountBelow` with the
 *   helper process's verified unmounts (`NodeMounter.layer`) and with the
 *   command mounter, one `umount -l` process per mount (the k3s-killall
 *   way), against the floor: a bare `umount2` loop by path through koffi in
 *   this process. Beside them, the same loops elsewhere, to see where
 *   `umount2`'s time goes: the bare loop in a C child and in a fresh node
 *   child (koffi), and the C floor of what the helper does per mount
 *   (`openat2` + `statx` + `umount2` through the descriptor + `close`,
 *   bench/c/unmount.c).
 * - 10,000 stacked mounts on one path, cleared completely: the same floor,
 *   the C verified loop and `unmountBelow`; then one read of the table with
 *   the stack on, through /proc/self/mountinfo and through listmount and
 *   statmount (bench/c/listmount.c).
 * - In both, the floor between two reads of the table: what a pass that
 *   reads the table before and after pays at least.
 *
 * Every row takes turns with the others, each run on freshly made mounts
 * (made through koffi, untimed: 1,000 `mount` processes would take seconds);
 * median and range of the runs, peak memory (this process and the helper,
 * reset before each run; a child's own), and the targets of issue 26:
 * `unmountBelow` within 1.3x the floor in both cases.
 */
import { writeFileSync } from "node:fs"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Directory, HostCommand, MountInfo, Unmount } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { NodeDirectory, NodeMounter } from "@hostnode/node"
import { Console, Effect, FileSystem, References } from "effect"
import koffi from "koffi"
import { cPrograms, cRun, inProcess, report, row, runsOf, turns } from "./Bench.ts"

const libc = koffi.load("libc.so.6")
const mount2 = libc.func(
  "int mount(const char *src, const char *target, const char *fstype, unsigned long flags, const char *data)"
) as (s: string, t: string, f: string, fl: number, d: string) => number
const umount2 = libc.func("int umount2(const char *target, int flags)") as (t: string, f: number) => number
/** umount2's lazy-detach flag, as the library passes it. */
const MNT_DETACH = 2

const mountTmpfs = (target: string, size = "64k") =>
  Effect.sync(() => {
    if (mount2("tmpfs", target, "tmpfs", 0, `size=${size}`) !== 0)
      throw new Error(`mount ${target}: errno ${koffi.errno()}`)
  })

/**
 * The bare loop in a fresh node process (koffi, as here): prints its time and
 * peak like the C programs. Its argument is a JSON array of paths.
 */
const nodeChild = `
import koffi from "koffi"
import { readFileSync } from "node:fs"
const umount2 = koffi.load("libc.so.6").func("int umount2(const char *target, int flags)")
const paths = JSON.parse(readFileSync(process.argv[1], "utf8"))
const start = performance.now()
let n = 0
for (const p of paths) if (umount2(p, 2) === 0) n++
const ms = performance.now() - start
const peakKiB = Number(/^VmHWM:\\s+(\\d+)/m.exec(readFileSync("/proc/self/status", "latin1"))[1])
console.log(JSON.stringify({ ms, peakKiB, note: n + " unmounted" }))
`

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const dirs = yield* Directory.Directories
  const c = yield* cPrograms
  const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bench-" })
  yield* Effect.acquireRelease(mountTmpfs(box, "16m"), () =>
    HostCommand.run("umount", ["-R", "-l", "--", box]).pipe(Effect.ignore)
  )
  const prefix = `${box}/kubelet`
  yield* fs.makeDirectory(prefix)
  // The helper process started, and everything loaded, before anything is timed.
  yield* fs.makeDirectory(`${prefix}/warm`)
  yield* mountTmpfs(`${prefix}/warm`)
  yield* Unmount.unmountBelow([prefix]).pipe(Effect.provide(NodeMounter.layer))
  const helper = () => [helperPid]
  let helperPid = (yield* dirs.credentials).pid

  /** The list bench/c/unmount.c takes: each target's mount id and path below `root`, in the operations' order. */
  const listOf = (root: string, under: string) =>
    Effect.gen(function* () {
      const table = yield* MountInfo.read().pipe(Effect.orDie)
      // Deepest first, a stack top down (later in the table is higher), as the operations' plan orders them.
      const depth = (p: string) => p.split("/").length
      const planned = table
        .map((e, i) => ({ e, i }))
        .filter(({ e }) => Lexical.covers(under, Lexical.clean(e.mountPoint)))
        .sort((a, b) => depth(b.e.mountPoint) - depth(a.e.mountPoint) || b.i - a.i)
        .map(({ e }) => e)
      const file = `${box}/targets`
      writeFileSync(file, planned.map((e) => `${e.id} ${Lexical.relative(root, e.mountPoint)?.slice(1)}\n`).join(""))
      return file
    })
  const unmountBelow = () =>
    inProcess(Unmount.unmountBelow([prefix]).pipe(Effect.provide(NodeMounter.layer), Effect.orDie), helper).pipe(
      Effect.tap(() =>
        Effect.gen(function* () {
          helperPid = (yield* dirs.credentials).pid
        })
      )
    )
  const leftBelow = (path: string) =>
    Effect.map(
      MountInfo.read().pipe(Effect.orDie),
      (t) => t.filter((e) => Lexical.covers(path, Lexical.clean(e.mountPoint))).length
    )

  // 1,000 siblings.
  const n = 1000
  const rel = Array.from({ length: n }, (_, i) => `pods/p${i}/volumes/secret`)
  const names = rel.map((r) => `${prefix}/${r}`)
  for (const p of names) yield* fs.makeDirectory(p, { recursive: true })
  const siblings = Effect.forEach(names, (p) => mountTmpfs(p), { discard: true })
  const withList = Effect.andThen(siblings, listOf(prefix, prefix))
  const pathsFile = `${box}/paths.json`
  writeFileSync(pathsFile, JSON.stringify(names))
  const unmountProgram = c("unmount")
  const floor = "bare umount2 loop by path through koffi, in this process (floor)"
  // What an unmount pass that reads the table before and after (to know what is mounted, and what left) pays at least.
  const tableBound = "the same bare loop between two reads of the table (MountInfo.read before and after)"
  const runs = runsOf(5)
  const cases = [
    row({
      name: floor,
      setup: siblings,
      run: () =>
        inProcess(
          Effect.sync(() => {
            for (const p of names) umount2(p, MNT_DETACH)
          })
        )
    }),
    row({
      name: tableBound,
      setup: siblings,
      run: () =>
        inProcess(
          Effect.gen(function* () {
            yield* MountInfo.read().pipe(Effect.orDie)
            for (const p of names) umount2(p, MNT_DETACH)
            yield* MountInfo.read().pipe(Effect.orDie)
          })
        )
    }),
    ...(typeof unmountProgram === "string"
      ? [
          row({
            name: "the same bare loop in a C child (bench/c/unmount.c --bare)",
            setup: withList,
            run: (list: string) => cRun("child", [unmountProgram, "--bare", prefix, list])
          }),
          row({
            name: "C child: openat2 + statx + umount2 through the descriptor + close (what the helper does)",
            setup: withList,
            run: (list: string) => cRun("child", [unmountProgram, prefix, list])
          })
        ]
      : []),
    row({
      name: "the same bare loop in a fresh node child (koffi)",
      setup: siblings,
      run: () =>
        cRun("child", [process.execPath, "--input-type=module", "-e", nodeChild, pathsFile]).pipe(
          Effect.map((r) => ({ ...r, note: undefined }))
        )
    }),
    row({
      name: "unmountBelow, NodeMounter.layer (each verified and detached in the helper process)",
      setup: siblings,
      run: unmountBelow,
      target: { ratio: 1.3, of: floor }
    }),
    row({
      name: "unmountBelow, NodeMounter.layerCommand (umount -l, batched)",
      setup: siblings,
      run: () =>
        inProcess(Unmount.unmountBelow([prefix]).pipe(Effect.provide(NodeMounter.layerCommand()), Effect.orDie)),
      runs: 3
    }),
    row({
      name: "one umount -l process per mount (k3s killall)",
      setup: siblings,
      run: () =>
        inProcess(
          Effect.forEach(names, (p) => HostCommand.run("umount", ["-l", "--", p]), { discard: true }).pipe(Effect.orDie)
        ),
      runs: 3
    })
  ]
  const measured = yield* turns(runs, cases)
  const left = yield* leftBelow(prefix)
  if (left !== 0) return yield* Effect.die(new Error(`${left} mounts left under ${prefix}`))
  yield* report(
    `${n} sibling tmpfs mounts under one prefix`,
    [
      ...measured,
      ...(typeof unmountProgram === "string"
        ? []
        : [{ name: "C children (bench/c/unmount.c)", skipped: unmountProgram.skipped }])
    ],
    floor
  )

  // 10,000 stacked mounts on one path.
  const stackPath = `${prefix}/pods/stacked/volumes/v`
  yield* fs.makeDirectory(stackPath, { recursive: true })
  const stackN = Number(process.env.HOSTNODE_BENCH_STACK ?? 10_000)
  const stack = Effect.sync(() => {
    for (let i = 0; i < stackN; i++)
      if (mount2("tmpfs", stackPath, "tmpfs", 0, "size=4k") !== 0) throw new Error(`mount: errno ${koffi.errno()}`)
  })
  const stackFloor = "bare umount2 loop by path through koffi, in this process (floor)"
  const stacked = yield* turns(runsOf(3), [
    row({
      name: stackFloor,
      setup: stack,
      run: () =>
        inProcess(
          Effect.sync(() => {
            for (let i = 0; i < stackN; i++) umount2(stackPath, MNT_DETACH)
          })
        )
    }),
    row({
      name: tableBound,
      setup: stack,
      run: () =>
        inProcess(
          Effect.gen(function* () {
            yield* MountInfo.read().pipe(Effect.orDie)
            for (let i = 0; i < stackN; i++) umount2(stackPath, MNT_DETACH)
            yield* MountInfo.read().pipe(Effect.orDie)
          })
        )
    }),
    ...(typeof unmountProgram === "string"
      ? [
          row({
            name: "C child: openat2 + statx + umount2 through the descriptor + close",
            setup: Effect.andThen(stack, listOf(prefix, stackPath)),
            run: (list: string) => cRun("child", [unmountProgram, prefix, list])
          })
        ]
      : []),
    row({
      name: "unmountBelow, NodeMounter.layer (each verified, detached through its descriptor)",
      setup: stack,
      run: unmountBelow,
      target: { ratio: 1.3, of: stackFloor }
    })
  ])
  const stackLeft = yield* leftBelow(stackPath)
  if (stackLeft !== 0) return yield* Effect.die(new Error(`${stackLeft} stacked mounts left`))
  // One read of the table with the stack on it, for scale: the kernel writes each stacked mount point by walking
  // down the stack, so a read grows with the square of its height.
  yield* stack
  const [readMs] = yield* Effect.map(
    inProcess(MountInfo.read().pipe(Effect.orDie)),
    (r) => [r.ms, r.value.length] as const
  )
  // The kernel's other way to read the table, listmount and statmount (bench/c/listmount.c), with the same stack on.
  const listProgram = c("listmount")
  const listed = typeof listProgram === "string" ? yield* cRun("child", [listProgram]) : undefined
  yield* Effect.sync(() => {
    for (let i = 0; i < stackN; i++) umount2(stackPath, MNT_DETACH)
  })
  yield* report(`${stackN.toLocaleString("en")} stacked tmpfs mounts on one path`, stacked, stackFloor)
  yield* Console.log(
    `\nOne MountInfo.read of the table with the stack on it took ${readMs.toFixed(0)} ms (part of every unmountBelow run).`
  )
  yield* Console.log(
    listed === undefined
      ? `listmount/statmount: not measured (${(listProgram as { readonly skipped: string }).skipped}).`
      : `The same table through listmount + statmount (bench/c/listmount.c): ${listed.ms.toFixed(0)} ms (${listed.note}).`
  )
}).pipe(Effect.scoped)

Main.pipe(
  // The operations' summary lines (one per run) would bury the tables.
  Effect.provideService(References.MinimumLogLevel, "Warn"),
  Effect.provide(NodeDirectory.layer),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
