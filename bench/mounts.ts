/**
 * Mount benchmarks (issue: mounts). Must run as root inside a private mount
 * namespace; scripts/bench.mjs starts it under `unshare --mount`.
 *
 * - 1,000 sibling tmpfs mounts under a prefix: `unmountBelow` with the
 *   in-process mounter and with the command mounter, one `umount -l` process
 *   per mount (the k3s-killall way), and a bare FFI `umount2` loop (the floor).
 * - 10,000 stacked mounts on one path, cleared completely.
 * - `MountInfo.parse` on a 75,000-line table against splitting it into lines.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostCommand, MountInfo, Unmount } from "@hostnode/core"
import { NodeDirectory, NodeMounter } from "@hostnode/node"
import { Console, Effect, FileSystem } from "effect"
import koffi from "koffi"
import { median, type Row, table, time } from "./Bench.ts"

const libc = koffi.load("libc.so.6")
const mount2 = libc.func(
  "int mount(const char *src, const char *target, const char *fstype, unsigned long flags, const char *data)"
) as (s: string, t: string, f: string, fl: number, d: string) => number
const umount2 = libc.func("int umount2(const char *target, int flags)") as (t: string, f: number) => number
/** umount2's lazy-detach flag, as the library passes it. */
const MNT_DETACH = 2

// Mounts are made through the FFI too: 1,000 `mount` processes would take
// seconds per run and swamp what is being measured.
const mountTmpfs = (target: string) =>
  Effect.sync(() => {
    if (mount2("tmpfs", target, "tmpfs", 0, "size=64k") !== 0)
      throw new Error(`mount ${target}: errno ${koffi.errno()}`)
  })

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-bench-" })
  yield* Effect.acquireRelease(mountTmpfs(box), () =>
    HostCommand.run("umount", ["-R", "-l", "--", box]).pipe(Effect.ignore)
  )
  const prefix = `${box}/kubelet`
  yield* fs.makeDirectory(prefix)
  const n = 1000
  const names = Array.from({ length: n }, (_, i) => `${prefix}/pods/p${i}/volumes/secret`)
  for (const p of names) yield* fs.makeDirectory(p, { recursive: true })
  const siblings = Effect.forEach(names, mountTmpfs, { discard: true })
  const runs = 5

  const ffi = yield* median(runs, siblings, () =>
    Unmount.unmountBelow([prefix]).pipe(Effect.provide(NodeMounter.layer))
  )
  const cmdRuns = 3
  const cmd = yield* median(cmdRuns, siblings, () =>
    Unmount.unmountBelow([prefix]).pipe(Effect.provide(NodeMounter.layerCommand()))
  )
  const perProcess = yield* median(1, siblings, () =>
    Effect.forEach(names, (p) => HostCommand.run("umount", ["-l", "--", p]), { discard: true })
  )
  const floor = yield* median(runs, siblings, () =>
    Effect.sync(() => {
      for (const p of names) umount2(p, MNT_DETACH)
    })
  )
  const remaining = (yield* MountInfo.read()).filter((e) => e.mountPoint.startsWith(prefix)).length
  if (remaining !== 0) return yield* Effect.die(new Error(`${remaining} mounts left under ${prefix}`))
  const rows: Array<Row> = [
    { name: "bare umount2 loop through koffi (floor)", ms: floor },
    { name: "unmountBelow, NodeMounter.layer (koffi umount2)", ms: ffi },
    { name: "unmountBelow, NodeMounter.layerCommand (umount -l, batched)", ms: cmd },
    { name: "one umount -l process per mount (k3s killall)", ms: perProcess }
  ]
  yield* table(
    `${n} sibling tmpfs mounts under one prefix (median of ${runs}; command ${cmdRuns}, per-process 1)`,
    rows,
    rows[0]!.name
  )
  yield* Console.log(
    `\nunmountBelow (koffi) is ${(ffi / floor).toFixed(2)}x the floor (target <= 2x) and ${(perProcess / ffi).toFixed(0)}x faster than a process per mount (target >= 100x).`
  )

  // 10,000 stacked mounts on one path: the bare loop (the floor) and unmountBelow, each on a fresh stack.
  const stackPath = `${prefix}/pods/stacked/volumes/v`
  yield* fs.makeDirectory(stackPath, { recursive: true })
  const stackN = 10_000
  const stack = Effect.sync(() => {
    for (let i = 0; i < stackN; i++)
      if (mount2("tmpfs", stackPath, "tmpfs", 0, "size=4k") !== 0) throw new Error("mount")
  })
  const [mountMs] = yield* time(stack)
  const [stackFloorMs] = yield* time(
    Effect.sync(() => {
      for (let i = 0; i < stackN; i++) umount2(stackPath, MNT_DETACH)
    })
  )
  const floorLeft = (yield* MountInfo.read()).filter((e) => e.mountPoint === stackPath).length
  if (floorLeft !== 0) return yield* Effect.die(new Error(`${floorLeft} stacked mounts left by the bare loop`))
  yield* stack
  const [stackMs] = yield* time(Unmount.unmountBelow([prefix]).pipe(Effect.provide(NodeMounter.layer)))
  const left = (yield* MountInfo.read()).filter((e) => e.mountPoint === stackPath).length
  yield* table(
    `${stackN} stacked tmpfs mounts on one path`,
    [
      { name: "bare umount2 loop by path through koffi (floor)", ms: stackFloorMs },
      { name: "mounting them (koffi mount loop, for scale)", ms: mountMs },
      {
        name: "unmountBelow, NodeMounter.layer (each verified, detached through its descriptor)",
        ms: stackMs,
        note: `${left} left`
      }
    ],
    "bare umount2 loop by path through koffi (floor)"
  )
  yield* Console.log(
    `\nunmountBelow on the stack is ${(stackMs / stackFloorMs).toFixed(2)}x the bare loop (target <= 1.5x).`
  )
  if (left !== 0) return yield* Effect.die(new Error(`${left} stacked mounts left`))

  // MountInfo.parse on a 75,000-line table.
  const lines = 75_000
  const entries: Array<MountInfo.MountEntry> = Array.from({ length: lines }, (_, i) => ({
    id: 100 + i,
    parentId: 99 + i,
    major: 0,
    minor: 50 + (i % 1000),
    root: "/",
    mountPoint: `/var/lib/kubelet/pods/${i.toString(16).padStart(8, "0")}-4a1b-9c2d/volumes/kubernetes.io~projected/kube-api-access-${i % 97}`,
    mountOptions: "rw,relatime",
    optionalFields: i % 3 === 0 ? ["shared:5"] : i % 3 === 1 ? ["master:1"] : [],
    fsType: "tmpfs",
    source: "tmpfs",
    superOptions: "rw,size=3932160k,inode64"
  }))
  const text = MountInfo.render(entries)
  const parseMs = yield* median(9, Effect.void, () => MountInfo.parse(text))
  const splitMs = yield* median(9, Effect.void, () => Effect.sync(() => text.split("\n").length))
  // What any parser that returns one object per line pays at least: the split
  // plus one object holding five sliced fields, with no validation at all.
  const floorMs = yield* median(9, Effect.void, () =>
    Effect.sync(
      () =>
        text
          .split("\n")
          .map((l) => ({ a: l.slice(0, 4), b: l.slice(4, 12), c: l.slice(12, 60), d: l.slice(60, 80), e: l.slice(80) }))
          .length
    )
  )
  yield* table(
    `MountInfo.parse, ${lines} lines (${(text.length / 1e6).toFixed(1)} MB), median of 9`,
    [
      { name: "split into lines only", ms: splitMs },
      { name: "split + one object of 5 sliced fields per line (no parsing)", ms: floorMs },
      {
        name: "MountInfo.parse",
        ms: parseMs,
        note: `${Math.round(lines / (parseMs / 1000)).toLocaleString("en")} lines/s`
      }
    ],
    "split into lines only"
  )
}).pipe(Effect.scoped)

Main.pipe(Effect.provide(NodeDirectory.layer), Effect.provide(NodeServices.layer), NodeRuntime.runMain)
