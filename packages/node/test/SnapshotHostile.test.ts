/**
 * Hostile and damaged snapshot files on the real disk, the ones only a real
 * file system can make: `manifest.json` or `data` a FIFO (an open that
 * blocked would hang the agent forever), and a file entry of 2^40 bytes over
 * a sparse `data` of that size (read and hashed, it would take hours, and a
 * buffer of that size is a crash). Each must be a typed error within
 * seconds, with nothing written below the host root, from the library and
 * from the `hostnode` executable (whose `--json` prints one document).
 */
import { fileURLToPath } from "node:url"
import { assert, describe, layer } from "@effect/vitest"
import { HostCommand, HostPath, Snapshot, Systemd } from "@hostnode/core"
import { Gate, RefusingSystemd } from "@hostnode/test"
import * as SnapshotTrees from "@hostnode/test/internal/snapshot/trees"
import { Effect, FileSystem } from "effect"
import { realHost } from "./realHost.ts"
import { DataName, ManifestName } from "./snapshotChild.ts"

const gate = Gate.check("hostile snapshot files on the real disk", ["root", { command: "mkfifo", args: ["--version"] }])

const bin = fileURLToPath(new URL("../../cli/src/bin.ts", import.meta.url))

const noSystemd = RefusingSystemd.make("below a temporary host root nothing reloads systemd")

/** A host root with a small recorded tree, its snapshot taken, and the tree changed since. */
const taken = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const box = yield* fs.realPath(yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-hostile-" }))
  const root = `${box}/root`
  const dir = `${box}/snaps/s`
  yield* fs.makeDirectory(`${root}/etc/kubernetes`, { recursive: true })
  yield* fs.makeDirectory(`${box}/snaps`)
  yield* fs.writeFileString(`${root}/etc/kubernetes/kubelet.conf`, "apiVersion: v1\n")
  yield* fs.writeFileString(`${root}/etc/kubernetes/admin.conf`, "admin\n")
  yield* Snapshot.takeOf({
    dir,
    hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
    paths: ["/etc/kubernetes"]
  })
  yield* fs.writeFileString(`${root}/etc/kubernetes/kubelet.conf`, "apiVersion: v2\n")
  const before = yield* SnapshotTrees.treeOf(root, "/")
  return { box, root, dir, before }
})

/** Replaces the snapshot file `name` by a FIFO. */
const fifo = (dir: string, name: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.remove(`${dir}/${name}`)
    const made = yield* HostCommand.run("mkfifo", ["-m", "600", `${dir}/${name}`])
    assert.strictEqual(made.exitCode, 0, made.stderr)
  })

/** A file entry of 2^40 bytes over a `data` truncated (sparse) to that size. */
const sparse = (dir: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const manifest = JSON.parse(yield* fs.readFileString(`${dir}/${ManifestName}`)) as {
      dataSize: number
      entries: Array<{ type: string; size?: number; offset?: number }>
    }
    const huge = 2 ** 40
    const file = manifest.entries.find((e) => e.type === "File")
    if (file === undefined) return yield* Effect.die(new Error("no file entry"))
    file.offset = 0
    file.size = huge
    manifest.dataSize = huge
    yield* fs.writeFileString(`${dir}/${ManifestName}`, JSON.stringify(manifest))
    yield* fs.truncate(`${dir}/${DataName}`, huge)
  })

const cases = [
  { name: "manifest.json a FIFO", reason: "Unsafe", tamper: (dir: string) => fifo(dir, ManifestName) },
  { name: "data a FIFO", reason: "Unsafe", tamper: (dir: string) => fifo(dir, DataName) },
  { name: "a 2^40-byte file over a sparse data file", reason: "Corrupt", tamper: sparse }
] as const

describe.skipIf(gate.skip)("hostile snapshot files on the real disk", () => {
  layer(realHost(), { excludeTestServices: true })("real disk", (it) => {
    for (const c of cases) {
      it.effect(
        `${c.name}: ${c.reason} within seconds, nothing written, from the library and from hostnode --json`,
        () =>
          Effect.gen(function* () {
            const t = yield* taken
            yield* c.tamper(t.dir)
            for (const attempt of [
              Snapshot.recover({ dir: t.dir, hostRoot: yield* HostPath.decodeRoot(t.root).pipe(Effect.orDie) }),
              Effect.flatMap(
                Snapshot.open({ dir: t.dir, hostRoot: yield* HostPath.decodeRoot(t.root).pipe(Effect.orDie) }),
                (s) => s.restore
              )
            ]) {
              const e = yield* Effect.flip(attempt.pipe(Effect.provideService(Systemd.Systemd, noSystemd)))
              assert.strictEqual(e._tag === "SnapshotError" ? e.reason._tag : e._tag, c.reason, e.message)
              assert.deepStrictEqual(yield* SnapshotTrees.treeOf(t.root, "/"), t.before)
            }
            const cli = yield* HostCommand.run(process.execPath, [
              "--conditions=@hostnode/source",
              bin,
              "--json",
              "--host-root",
              t.root,
              "snapshot",
              "recover",
              "--dir",
              t.dir
            ])
            assert.strictEqual(cli.exitCode, 1, cli.stderr)
            const lines = cli.stdout.trim().split("\n")
            assert.strictEqual(lines.length, 1, cli.stdout)
            const doc = JSON.parse(lines[0] ?? "") as { ok: boolean; error: { reason: { _tag: string } } }
            assert.isFalse(doc.ok)
            assert.strictEqual(doc.error.reason._tag, c.reason)
            assert.deepStrictEqual(yield* SnapshotTrees.treeOf(t.root, "/"), t.before)
          }).pipe(Effect.scoped),
        // A bound on a hang, not a speed measurement: each case used to hang or crash.
        { timeout: 30_000 }
      )
    }
  })
})
