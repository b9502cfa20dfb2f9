/**
 * Dead storage, for real: the dead-volume conformance suite with a FUSE
 * daemon that never answers (what a dead NFS server or a crashed CSI driver
 * looks like to the kernel; built at test time from `fixtures/deadfs.c`),
 * then with one that answers after 5 s per call; and the CLI, which exits by
 * its `--timeout` while the volume is still dead.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { Gate, MountFixture } from "@hostnode/test"
import { DeadVolumeConformance } from "@hostnode/test/conformance"
import { Clock, Effect, FileSystem } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as DeadFs from "./deadFs.ts"
import { realHost } from "./realHost.ts"

const gate = Gate.check("dead storage (a real FUSE daemon that never answers)", [
  "root",
  "private-mount-namespace",
  { command: "mount" },
  { command: "cc", args: ["--version"] },
  { command: "fusermount3", args: ["-V"] }
])

/** A FUSE daemon on `mountPoint`, built once per test, stalling as `mode` says. */
const fuse =
  (
    mode: "dead" | number
  ): DeadVolumeConformance.Options<FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner>["deadVolume"] =>
  (mountPoint) =>
    Effect.flatMap(DeadFs.build, (binary) => DeadFs.mount(binary, mountPoint, mode))

describe.skipIf(gate.skip)("dead storage on real mounts", () => {
  type R = FileSystem.FileSystem | ChildProcessSpawner.ChildProcessSpawner
  DeadVolumeConformance.suite<R, never>("a FUSE daemon that never answers", realHost(), { deadVolume: fuse("dead") })
  DeadVolumeConformance.suite<R, never>("a FUSE daemon that answers after 5 s per call", realHost(), {
    deadVolume: fuse(5),
    late: true
  })

  layer(realHost(), { excludeTestServices: true })("hostnode on a dead volume", (it) => {
    it.effect(
      "the CLI exits by its --timeout, the volume still dead, with the call that hung in its report",
      () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture.MountFixture
          const fs = yield* FileSystem.FileSystem
          const root = `${yield* fx.sandbox}/root`
          yield* fs.makeDirectory(`${root}/etc/kubernetes`, { recursive: true }).pipe(Effect.orDie)
          const dead = yield* DeadFs.mount(yield* DeadFs.build, `${root}/etc/kubernetes`, "dead")
          yield* dead.stall
          const bin = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))
          const start = yield* Clock.currentTimeMillis
          const out = yield* Effect.callback<{ readonly code: number | null; readonly stdout: string }>((resume) => {
            const child = spawn(
              process.execPath,
              [
                "--conditions=@hostnode/source",
                bin,
                "--host-root",
                root,
                "--timeout",
                "3",
                "--json",
                "snapshot",
                "take",
                "--dir",
                `${root}/snapshots/s`,
                "--path",
                "/etc/kubernetes/sub/kubelet.conf"
              ],
              { stdio: ["ignore", "pipe", "ignore"] }
            )
            let stdout = ""
            child.stdout.on("data", (b: Buffer) => {
              stdout += b.toString()
            })
            child.on("exit", (code) => resume(Effect.succeed({ code, stdout })))
          })
          const seconds = ((yield* Clock.currentTimeMillis) - start) / 1000
          assert.isBelow(seconds, 15)
          assert.strictEqual(out.code, 1)
          const doc = JSON.parse(out.stdout) as { readonly ok: boolean; readonly error: { readonly message: string } }
          assert.isFalse(doc.ok)
          assert.match(doc.error.message, /did not return within/)
        }).pipe(Effect.scoped),
      60_000
    )
  })
})
