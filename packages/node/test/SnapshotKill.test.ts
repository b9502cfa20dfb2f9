/**
 * The real crash test of `Snapshot`: on a temporary host root on the real
 * disk, a child process restores a snapshot of a tree of a few hundred paths
 * (200 files, 20 links, directories nested four deep) and is killed with
 * SIGKILL at a random moment of its restore; a fresh process then runs
 * `Snapshot.recover`, and every file's bytes, mode and owner, every directory
 * and every symlink target must equal the original.
 * This repeats until at least 50 children were killed in the middle of their
 * restore.
 *
 * Children are started ahead of time (a Node process takes a second or two to
 * load), each waiting for commands on stdin (see fixtures/snapshot-child.ts);
 * the child that runs `recover` after a kill is always a different process
 * from the one killed.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { HostPath, Snapshot } from "@hostnode/core"
import { NodeDirectory, NodeHashing } from "@hostnode/node"
import { Gate } from "@hostnode/test"
import * as SnapshotTrees from "@hostnode/test/internal/snapshot/trees"
import { Clock, Effect, Fiber, FileSystem, Layer, Random } from "effect"
import { type Child, cmd, DataName, ManifestName, spawnChild } from "./snapshotChild.ts"

const gate = Gate.check("Snapshot killed mid-restore on the real disk", ["root"])

/** Children killed in the middle of a restore that the test waits for. */
const KillsWanted = 50
/** Children started ahead of the one in use. */
const Ahead = 2

const Paths = [
  "/etc/kubernetes",
  "/etc/containerd",
  "/etc/systemd/system/kubelet.service.d",
  "/etc/systemd/network",
  "/etc/default/kubelet"
]
const Dirs = [
  "/etc/kubernetes",
  "/etc/kubernetes/manifests",
  "/etc/kubernetes/conf.d",
  "/etc/containerd",
  "/etc/containerd/certs.d/r0",
  "/etc/containerd/certs.d/r1",
  "/etc/containerd/certs.d/r2",
  "/etc/systemd/system/kubelet.service.d",
  "/etc/systemd/network",
  "/etc/systemd/network/deep/er/still"
]
const Files = 200
const Modes = [0o644, 0o600, 0o640, 0o755, 0o4755, 0o444]

const bytes = (seed: number, size: number) => {
  const out = new Uint8Array(size)
  for (let k = 0; k < size; k++) out[k] = (seed * 31 + k * 7 + (k >> 8)) & 0xff
  return out
}

/** A few hundred files of 0.5 to 12 KB, odd modes, other owners, links, empty directories. */
const buildTree = (root: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (const d of Dirs) yield* fs.makeDirectory(`${root}${d}`, { recursive: true })
    yield* fs.makeDirectory(`${root}/etc/default`, { recursive: true })
    yield* fs.writeFileString(`${root}/etc/default/kubelet`, "KUBELET_EXTRA_ARGS=--v=2\n")
    yield* fs.writeFileString(`${root}/etc/default/unrelated`, "not recorded\n")
    for (let i = 0; i < Files; i++) {
      const path = `${root}${Dirs[i % Dirs.length]}/f${i}.conf`
      yield* fs.writeFile(path, bytes(i, 512 + ((i * 997) % 11_776)))
      if (i % 7 === 0) yield* fs.chown(path, 1000, 1000 + (i % 3))
      yield* fs.chmod(path, Modes[i % Modes.length] ?? 0o644)
    }
    for (let j = 0; j < 20; j++) {
      yield* fs.symlink(j % 2 === 0 ? `f${j}.conf` : `../missing/${j}`, `${root}${Dirs[j % Dirs.length]}/l${j}`)
    }
    yield* fs.makeDirectory(`${root}/etc/kubernetes/empty`)
    yield* fs.makeDirectory(`${root}/etc/containerd/certs.d/r0/empty`, { mode: 0o700 })
    yield* fs.chmod(`${root}/etc/containerd/certs.d`, 0o750)
  })

/** An upgrade gone wrong: most files rewritten, some deleted, moved aside, replaced, re-owned; new files. */
const mutateTree = (root: string, files: ReadonlyArray<string>, links: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    yield* fs.writeFileString(`${root}/etc/default/kubelet`, "KUBELET_EXTRA_ARGS=--new-flag\n")
    for (const f of files) {
      const full = `${root}${f}`
      const r = yield* Random.next
      if (r < 0.2) yield* fs.writeFile(full, bytes(Math.floor(r * 1e6), 100 + Math.floor(r * 20_000)))
      else if (r < 0.26) yield* fs.remove(full)
      else if (r < 0.29) yield* fs.chmod(full, 0o666)
      else if (r < 0.32) yield* fs.chown(full, 4242, 4242)
      else if (r < 0.34) {
        yield* fs.remove(full)
        yield* fs.makeDirectory(full)
        yield* fs.writeFileString(`${full}/inside`, "a directory where a file was")
      } else if (r < 0.36) {
        yield* fs.remove(full)
        yield* fs.symlink("/etc/shadow", full)
      }
    }
    for (const l of links) {
      if ((yield* Random.next) < 0.5) {
        yield* fs.remove(`${root}${l}`)
        yield* fs.symlink("elsewhere", `${root}${l}`)
      }
    }
    for (let k = 0; k < 20; k++) {
      const d = Dirs[yield* Random.nextIntBetween(0, Dirs.length - 1)]
      yield* fs.writeFileString(`${root}${d}/new-${k}.conf`, "created by the upgrade").pipe(Effect.ignore)
    }
    yield* fs.chmod(`${root}/etc/kubernetes`, 0o700)
  })

describe.skipIf(gate.skip)("Snapshot killed mid-restore on the real disk", () => {
  layer(Layer.mergeAll(NodeServices.layer, NodeDirectory.layer.pipe(Layer.orDie), NodeHashing.layer), {
    excludeTestServices: true,
    timeout: "60 seconds"
  })((it) => {
    it.effect(
      `recover after SIGKILL at random moments of a restore gives the original tree (${KillsWanted} kills)`,
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const box = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-snapshot-kill-" })
          const root = `${box}/root`
          const dir = `${box}/snaps/s`
          yield* fs.makeDirectory(`${box}/snaps`)
          yield* buildTree(root)
          const original = yield* SnapshotTrees.treeOf(root, "/etc")
          const files = Object.entries(original)
            .filter(([k, v]) => v.type === "File" && Paths.some((p) => SnapshotTrees.atOrBelow(p, k)))
            .map(([k]) => k)
          const links = Object.entries(original)
            .filter(([, v]) => v.type === "SymbolicLink")
            .map(([k]) => k)
          assert.isAbove(files.length, 150)

          // Children start loading ahead of their turn.
          const pool: Array<Fiber.Fiber<Child>> = []
          const startOne = Effect.flatMap(Effect.forkScoped(spawnChild(`${box}/compile-cache`)), (f) =>
            Effect.sync(() => pool.push(f))
          )
          for (let k = 0; k < Ahead; k++) yield* startOne
          const nextChild = Effect.gen(function* () {
            const taken = pool.shift()
            yield* startOne
            if (taken === undefined) return yield* Effect.die(new Error("empty pool"))
            return yield* Fiber.join(taken)
          })

          // Trees compared as canonical JSON (key order fixed), which is much
          // cheaper than a deep comparison; a mismatch shows the full diff.
          const canonical = (t: Record<string, SnapshotTrees.Node>) =>
            JSON.stringify(
              Object.keys(t)
                .sort()
                .map((k) => [k, t[k]])
            )
          const expected = canonical(original)
          const assertOriginal = Effect.gen(function* () {
            const now = yield* SnapshotTrees.treeOf(root, "/etc")
            if (canonical(now) !== expected) assert.deepStrictEqual(now, original)
            // Nothing at all beside it: no snapshot, staging or half-discarded copy, and no lock file.
            assert.deepStrictEqual(yield* fs.readDirectory(`${box}/snaps`), [])
          })

          // Taken once; each trial restores a fresh copy of it (recover removes it).
          const pristine = `${box}/pristine`
          yield* Snapshot.takeOf({
            dir: pristine,
            hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
            paths: Paths
          })
          const placeSnapshot = Effect.gen(function* () {
            yield* fs.makeDirectory(dir, { mode: 0o700 })
            for (const name of [ManifestName, DataName]) {
              yield* fs.copyFile(`${pristine}/${name}`, `${dir}/${name}`)
            }
          })

          // Calibration: how long a child's restore of this mutation takes from "ready".
          let child = yield* nextChild
          yield* placeSnapshot
          yield* mutateTree(root, files, links)
          yield* child.send(cmd("restore", dir, root))
          yield* child.expect("ready")
          const full = Number((yield* child.expect("restored ")).slice("restored ".length))
          // A restore that finished consumed its snapshot: there is nothing left to recover.
          yield* child.send(cmd("recover", dir, root))
          assert.strictEqual(yield* child.expect("recovered "), "recovered false")
          yield* assertOriginal
          yield* child.kill

          let kills = 0
          let completed = 0
          // How long a restore takes from "ready": calibrated, then tracked, so kills keep landing inside it.
          let window = full
          const delays: Array<number> = []
          child = yield* nextChild
          const started = yield* Clock.currentTimeMillis
          while (kills < KillsWanted) {
            assert.isBelow(completed, KillsWanted * 2, "kills must land during the restore")
            yield* placeSnapshot
            yield* mutateTree(root, files, links)
            yield* child.send(cmd("restore", dir, root))
            yield* child.expect("ready")
            const delay = yield* Random.nextIntBetween(0, Math.max(1, Math.ceil(window)))
            delays.push(delay)
            const early = yield* child.poll(delay)
            yield* child.kill
            if (early === undefined) kills++
            else {
              completed++
              assert.match(early, /^restored \d+$/)
              window = (window + Number(early.slice("restored ".length))) / 2
            }
            // A fresh process finishes (or redoes) the job; a restore killed after it
            // consumed the snapshot (or one that finished) leaves nothing to recover.
            child = yield* nextChild
            yield* child.send(cmd("recover", dir, root))
            const recovered = yield* child.expect("recovered ")
            if (early !== undefined) assert.strictEqual(recovered, "recovered false")
            else assert.match(recovered, /^recovered (true|false)$/)
            yield* assertOriginal
          }
          const elapsed = (yield* Clock.currentTimeMillis) - started
          yield* Effect.logInfo(
            `snapshot kill test: ${kills} children killed mid-restore, ${completed} finished first; ` +
              `a full restore took ${full} ms (window at the end ${Math.round(window)} ms); delays ${Math.min(...delays)}..${Math.max(...delays)} ms; ${elapsed} ms in all`
          )
          yield* child.kill
        }).pipe(Effect.scoped),
      // About a minute on an idle 2-core machine, 85 s beside the rest of the suite, and
      // past 240 s when other test runs load both cores: the limit only catches a hang.
      600_000
    )
  })
})
