/**
 * `hostnode snapshot take|restore|recover|discard` and the files they leave:
 * every subcommand, refused or successful, leaves the snapshot directory's
 * parent holding exactly what it held before, plus the snapshot where one
 * was taken (minus it where one was consumed): no lock file beside it, none
 * beside a mistyped `--dir`, none inside a recorded path, and a refused take
 * makes no directory. Each runs with `--dry-run` first (same exit code, the
 * parent untouched), then for real. The lock is the parent directory's
 * `flock`: a holder makes the others wait and fail `Busy` naming that
 * directory. On real files and locks (a temporary directory of the test's
 * private mount namespace) and on `MemoryNode`.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import type { Cli } from "@hostnode/cli"
import { Directory } from "@hostnode/core"
import { NodeDirectory, NodeMounter } from "@hostnode/node"
import { MemoryNode } from "@hostnode/sim"
import { Gate, MountFixture, RefusingSystemd } from "@hostnode/test"
import * as RepaveTrees from "@hostnode/test/internal/repave/trees"
import { Effect, FileSystem, Layer } from "effect"
import { cliEnvironment, refusedDns, refusedIsolation, runJson } from "./harness.ts"

type Services = Cli.Services | FileSystem.FileSystem | MountFixture.MountFixture | Directory.Directories

/** A sandbox with a host root holding two recorded files, and the snapshots' directory holding one unrelated file. */
const sandboxed = Effect.gen(function* () {
  const fx = yield* MountFixture.MountFixture
  const fs = yield* FileSystem.FileSystem
  const sandbox = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
  yield* RepaveTrees.plant(sandbox, {
    "root/etc/kubernetes/admin.conf": "admin v1\n",
    "root/etc/kubernetes/kubelet.conf": "kubelet v1\n",
    "root/etc/hostname": "node-a\n",
    "snaps/unrelated": "not ours\n"
  })
  const root = `${sandbox}/root`
  const listing = (dir: string) => Effect.map(fs.readDirectory(dir), (n) => [...n].sort()).pipe(Effect.orDie)
  return { fs, sandbox, root, snaps: `${sandbox}/snaps`, dir: `${sandbox}/snaps/s`, listing }
})

/**
 * Runs `argv` dry, then for real; `parent`'s listing must stay as it was
 * through the dry run, and after the real run be what it was plus `added`
 * minus `removed`. Returns the real run's exit code and document.
 */
const leaves = (
  parent: string,
  argv: ReadonlyArray<string>,
  expect: { readonly code: number; readonly added?: ReadonlyArray<string>; readonly removed?: ReadonlyArray<string> }
) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const listing = Effect.map(fs.readDirectory(parent), (n) => [...n].sort()).pipe(Effect.orDie)
    const before = yield* listing
    const dry = yield* runJson(["--dry-run", ...argv])
    assert.deepStrictEqual(yield* listing, before, `${argv.join(" ")} --dry-run changed ${parent}`)
    const real = yield* runJson(argv)
    assert.strictEqual(real.code, expect.code, JSON.stringify(real.doc))
    assert.strictEqual(dry.code, real.code, `the dry run's exit code: ${JSON.stringify(dry.doc)}`)
    const expected = [...before.filter((n) => !(expect.removed ?? []).includes(n)), ...(expect.added ?? [])].sort()
    assert.deepStrictEqual(yield* listing, expected, `${argv.join(" ")} left ${parent} so`)
    return real
  })

const suite = <E>(name: string, host: Layer.Layer<Services, E>) =>
  layer(host, { excludeTestServices: false })(name, (it) => {
    it.effect("every subcommand, refused or successful, leaves the parent as it was, plus (minus) the snapshot", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { fs, sandbox, root, snaps, dir, listing } = yield* sandboxed
          const on = ["--host-root", root, "snapshot"]
          const paths = ["--path", "/etc/kubernetes"]
          // Of a snapshot that is not there: Missing (exit 1), or nothing to do.
          yield* leaves(snaps, [...on, "restore", "--dir", dir], { code: 1 })
          yield* leaves(snaps, [...on, "recover", "--dir", dir], { code: 0 })
          yield* leaves(snaps, [...on, "discard", "--dir", dir], { code: 0 })
          // Taken.
          yield* leaves(snaps, [...on, "take", "--dir", dir, ...paths], { code: 0, added: ["s"] })
          // Again: one is there (exit 1); the directory above it is no snapshot (refused, exit 2): nothing beside either.
          yield* leaves(snaps, [...on, "take", "--dir", dir, ...paths], { code: 1 })
          const notOne = yield* leaves(sandbox, [...on, "take", "--dir", snaps, ...paths], { code: 2 })
          assert.strictEqual(notOne.doc.error.reason._tag, "NotASnapshot")
          assert.include(notOne.doc.error.message, "unrelated")
          assert.notInclude(notOne.doc.error.message, ".lock")
          yield* leaves(sandbox, [...on, "discard", "--dir", snaps], { code: 2 })
          // A restore below another root is refused (exit 2): the snapshot stays.
          yield* leaves(snaps, ["--host-root", sandbox, "snapshot", "restore", "--dir", dir], { code: 2 })
          // Restored (consumed), taken again and recovered, taken again and discarded.
          yield* fs.writeFileString(`${root}/etc/kubernetes/admin.conf`, "admin v2\n").pipe(Effect.orDie)
          yield* leaves(snaps, [...on, "restore", "--dir", dir], { code: 0, removed: ["s"] })
          assert.strictEqual(
            yield* fs.readFileString(`${root}/etc/kubernetes/admin.conf`).pipe(Effect.orDie),
            "admin v1\n"
          )
          yield* leaves(snaps, [...on, "take", "--dir", dir, ...paths], { code: 0, added: ["s"] })
          yield* leaves(snaps, [...on, "recover", "--dir", dir], { code: 0, removed: ["s"] })
          yield* leaves(snaps, [...on, "take", "--dir", dir, ...paths], { code: 0, added: ["s"] })
          yield* leaves(snaps, [...on, "discard", "--dir", dir], { code: 0, removed: ["s"] })
          assert.deepStrictEqual(yield* listing(snaps), ["unrelated"])
        })
      )
    )

    it.effect("a mistyped --dir gets no lock file beside it, and a recorded path gets none inside it", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { fs, sandbox, root, listing } = yield* sandboxed
          const on = ["--host-root", root, "snapshot"]
          const recorded = `${root}/etc/kubernetes`
          const before = yield* listing(recorded)
          // `--dir /etc` for `--dir /etc/snap`: refused (exit 2), and no etc.lock beside it.
          yield* leaves(root, [...on, "take", "--dir", `${root}/etc`, "--path", "/var/lib/kubelet"], { code: 2 })
          yield* leaves(root, [...on, "discard", "--dir", `${root}/etc`], { code: 2 })
          // A take whose directory lies inside a recorded path: refused before anything is made there.
          const inside = yield* leaves(
            recorded,
            [...on, "take", "--dir", `${recorded}/snap`, "--path", "/etc/kubernetes"],
            {
              code: 2
            }
          )
          assert.strictEqual(inside.doc.error.reason._tag, "InvalidPath")
          // The same reached through a link, with directories still to make on the way: none is made.
          yield* fs.symlink(recorded, `${sandbox}/via-link`).pipe(Effect.orDie)
          const linked = yield* leaves(
            recorded,
            [...on, "take", "--dir", `${sandbox}/via-link/new/deeper/snap`, "--path", "/etc/kubernetes"],
            { code: 2 }
          )
          assert.strictEqual(linked.doc.error.reason._tag, "InvalidPath")
          assert.deepStrictEqual(yield* listing(recorded), before)
          // A take that fails (a recorded directory with a mount inside: a snapshot does not cross mounts) after
          // making its missing parents removes them again.
          const fx = yield* MountFixture.MountFixture
          yield* fs.makeDirectory(`${recorded}/mnt`).pipe(Effect.orDie)
          yield* fx.tmpfs(`${recorded}/mnt`)
          const failed = yield* leaves(
            sandbox,
            [...on, "take", "--dir", `${sandbox}/new-parent/deeper/snap`, "--path", "/etc/kubernetes"],
            { code: 1 }
          )
          assert.strictEqual(failed.doc.error.reason._tag, "OtherMount")
        })
      )
    )

    it.effect("a holder of the lock makes the others wait, then fail Busy naming the directory locked", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const { root, snaps, dir } = yield* sandboxed
          const dirs = yield* Directory.Directories
          const taken = yield* runJson([
            "--host-root",
            root,
            "snapshot",
            "take",
            "--dir",
            dir,
            "--path",
            "/etc/kubernetes"
          ])
          assert.strictEqual(taken.code, 0)
          // Another holder: the lock is the parent directory's flock, taken here on another open description.
          const parent = yield* dirs.openRoot(snaps)
          assert.isTrue(yield* dirs.lock(parent))
          for (const sub of ["restore", "recover", "discard"]) {
            const busy = yield* runJson(["--host-root", root, "snapshot", sub, "--dir", dir, "--lock-timeout", "0"])
            assert.strictEqual(busy.code, 1, JSON.stringify(busy.doc))
            assert.strictEqual(busy.doc.error.reason._tag, "Busy")
            // The directory locked, as it is: not `snaps/s/s.lock` (0.3 named a path that never existed).
            assert.include(busy.doc.error.message, `the lock of ${snaps} `)
            assert.notInclude(busy.doc.error.message, ".lock")
            assert.strictEqual(busy.doc.error.reason.pid, (yield* dirs.credentials).pid)
          }
        })
      )
    )
  })

suite(
  "on MemoryNode",
  Layer.mergeAll(MountFixture.layerMemory, cliEnvironment).pipe(Layer.provideMerge(MemoryNode.layer()))
)

const gate = Gate.check("snapshot locks on real files", ["root", "private-mount-namespace", { command: "mount" }])

describe.skipIf(gate.skip)("real files and locks", () => {
  suite(
    "on NodeDirectory",
    Layer.mergeAll(
      MountFixture.layerReal,
      RefusingSystemd.layer("a restore below a temporary host root must never reach the machine's systemd"),
      refusedIsolation,
      refusedDns,
      cliEnvironment
    ).pipe(
      Layer.provideMerge(NodeMounter.layer),
      Layer.provideMerge(Layer.mergeAll(NodeDirectory.layer, NodeServices.layer)),
      Layer.orDie
    )
  )
})
