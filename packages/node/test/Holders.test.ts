/**
 * Kept mounts explain themselves, on real mounts: a pod volume (a tmpfs)
 * held by a process whose working directory is in it, and by another mount
 * namespace that holds a copy of it (`unshare --mount`, which `fuser -m` and
 * `lsof` cannot see). The removal that keeps the pod's directory names both;
 * a strict unmount refused `EBUSY` is explained by the `Mounter`'s `holders`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Directory, HostPath, Mounter, SafeRemove } from "@hostnode/core"
import { Gate, MountFixture } from "@hostnode/test"
import { Effect, FileSystem, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { realHost } from "./realHost.ts"

const gate = Gate.check("who holds a mount (real mounts)", [
  "root",
  "private-mount-namespace",
  { command: "mount" },
  { command: "unshare", args: ["--version"] }
])

/** Starts `command` (ended with the scope) and waits for its first line. */
const started = (command: string, args: ReadonlyArray<string>, cwd?: string) =>
  Effect.gen(function* () {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner
      .spawn(ChildProcess.make(command, args, cwd === undefined ? {} : { cwd }))
      .pipe(Effect.orDie)
    const lines: Array<string> = []
    yield* Stream.runForEach(handle.stdout.pipe(Stream.decodeText(), Stream.splitLines), (l) =>
      Effect.sync(() => lines.push(l))
    ).pipe(Effect.ignore, Effect.forkScoped)
    yield* Effect.sleep("10 millis").pipe(Effect.repeat({ until: () => lines.length > 0, times: 500 }))
    return Number(lines[0])
  })

describe.skipIf(gate.skip)("who holds a mount, on real mounts", () => {
  layer(realHost(), { excludeTestServices: true })((it) => {
    it.effect(
      "a process with its working directory in a pod volume and a mount namespace with a copy of it are both named",
      () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture.MountFixture
          const fs = yield* FileSystem.FileSystem
          const root = `${yield* fx.sandbox}/root`
          const volume = `${root}/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/data`
          yield* fs.makeDirectory(volume, { recursive: true }).pipe(Effect.orDie)
          yield* fx.tmpfs(volume)
          // A shell that prints its pid, then waits, with its working directory in the volume.
          const inside = yield* started("sh", ["-c", "echo $$; exec sleep 300"], volume)
          // Another mount namespace: it has its own copy of every mount, the volume's included.
          const elsewhere = yield* started("unshare", [
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            "echo $$; exec sleep 300"
          ])
          const report = yield* SafeRemove.remove(["/var/lib/kubelet/pods/p1"], {
            hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie)
          })
          assert.deepStrictEqual(
            report.kept.map((k) => [k.path, k.reason]),
            [[`${root}/var/lib/kubelet/pods/p1`, "MountBelow"]]
          )
          const holders = report.kept[0]?.holders ?? []
          assert.deepInclude(
            holders.map((h) => [h.pid, h.how]),
            [inside, "cwd"]
          )
          assert.deepInclude(
            holders.map((h) => [h.pid, h.how]),
            [elsewhere, "namespace"]
          )
          assert.include(report.kept[0]?.detail ?? "", `process ${inside} has its working directory`)
          assert.include(report.kept[0]?.detail ?? "", "holds a copy at")

          // The same mount, unmounted strictly: EBUSY, and the Mounter says who holds it.
          const mounter = yield* Mounter.Mounter
          const dirs = yield* Directory.Directories
          const entry = (yield* fx.table).find((e) => e.mountPoint === volume)
          assert.isDefined(entry)
          const e = entry as NonNullable<typeof entry>
          const rootHandle = yield* dirs.openRoot(root)
          const [r] = yield* mounter.unmount(rootHandle, [{ path: volume, mountId: e.id, tablePath: volume }], {
            lazy: false
          })
          assert.strictEqual(r?._tag === "Failed" ? r.failure.errno : r?._tag, "EBUSY")
          const why = (yield* mounter.holders?.([{ mountId: e.id, device: `${e.major}:${e.minor}`, root: e.root }]) ??
            Effect.succeed(new Map<number, ReadonlyArray<Mounter.Holder>>())).get(e.id)
          assert.deepInclude(
            (why ?? []).map((h) => [h.pid, h.how]),
            [inside, "cwd"]
          )
        }).pipe(Effect.scoped),
      60_000
    )
  })
})
