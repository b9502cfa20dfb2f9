/**
 * Mounts on the simulated host: the table `/proc/self/mountinfo` serves, the
 * bind-mount semantics that make recursive removal dangerous, the `umount`
 * and `mount` interpreters, and the properties of issue 3 for the unmount
 * operations over random mount forests (tmpfs, binds, stacks), random
 * prefixes and random persistent unmount failures.
 */
import { assert, describe, it } from "@effect/vitest"
import { Directory, Mounter, MountInfo, Unmount } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Lexical } from "@hostnode/core/Programs"
import { MemoryHost } from "@hostnode/sim"
import { Effect, FileSystem, Layer, Schema, Stream } from "effect"
import { ChildProcess } from "effect/process"

const Dirs = ["/w/a", "/w/a/b", "/w/a/b/c", "/w/a/d", "/w/ab", "/w/e", "/w/e/f"] as const
const Sources = [...Dirs, "/src/s0", "/src/s1"] as const
const PrefixCandidates = ["/w", ...Dirs, "/w/a/", "/w/e//"] as const

/** The prefixes cleaned, duplicates dropped, order kept: what the operations match the table against. */
const normalizePrefixes = (prefixes: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...new Set(prefixes.map(Lexical.clean))
]

const index = (n: number) => Schema.Literals(Array.from({ length: n }, (_, i) => i) as [number, ...Array<number>])

const Op = Schema.Struct({
  kind: Schema.Literals(["tmpfs", "bind"]),
  target: index(Dirs.length),
  source: index(Sources.length),
  times: index(3)
})
const Ops = Schema.Array(Op)
const Prefixes = Schema.NonEmptyArray(index(PrefixCandidates.length))
const Failures = Schema.Array(index(Dirs.length))

const files: MemoryHost.Fixture = {
  "/w": { directory: true },
  "/src/s0/data": "zero",
  "/src/s1/data": "one"
}

/** Builds a random forest; never mounts over a path with mounts below it, which would make those unreachable. */
const buildForest = (ops: ReadonlyArray<typeof Op.Type>) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    const fs = yield* FileSystem.FileSystem
    for (const op of ops.slice(0, 10)) {
      const target = Dirs[op.target]!
      const table = yield* host.mountTable
      if (table.some((e) => e.mountPoint !== target && Lexical.covers(target, e.mountPoint))) continue
      yield* fs.makeDirectory(target, { recursive: true }).pipe(Effect.orDie)
      for (let i = 0; i <= op.times; i++) {
        if (op.kind === "tmpfs") yield* host.tmpfs(target).pipe(Effect.orDie)
        else {
          const source = Sources[op.source]!
          yield* fs.makeDirectory(source, { recursive: true }).pipe(Effect.orDie)
          yield* host.bind(source, target).pipe(Effect.orDie)
        }
      }
    }
    return yield* host.mountTable
  })

/** The in-memory Mounter, one target at a time, recording the id of each mount it removed, in order. */
const recording = (removed: Array<number>) =>
  Layer.effect(
    Mounter.Mounter,
    Effect.gen(function* () {
      const inner = yield* Mounter.Mounter
      return Mounter.Mounter.of({
        unmount: (root, targets, options) =>
          Effect.forEach(targets, (target) =>
            Effect.gen(function* () {
              const [r] = yield* inner.unmount(root, [target], options)
              if (r?._tag === "Unmounted") removed.push(target.mountId)
              return r!
            })
          )
      })
    })
  )

const ids = (t: ReadonlyArray<MountInfo.MountEntry>) => t.map((e) => e.id).sort((a, b) => a - b)
const coveredBy = (prefixes: ReadonlyArray<string>, e: MountInfo.MountEntry) =>
  prefixes.some((p) => Lexical.covers(p, Lexical.clean(e.mountPoint)))

/** Mounts detached along with `gone` (their ancestors by parent id), computed from the table alone. */
const withDescendants = (table: ReadonlyArray<MountInfo.MountEntry>, gone: ReadonlySet<number>): Set<number> => {
  const out = new Set(gone)
  for (const e of table) if (e.id !== e.parentId && out.has(e.parentId)) out.add(e.id) // parents come first
  return out
}

const runs = { arbitrary: { runs: 100 } }

/**
 * The rule of the unmount passes, checked on the order of the successful
 * unmounts: no mount is detached while a selected mount point above it is
 * still mounted (a mount below a dead one is never verified through it; the
 * lazy detach of the one above takes it along), and each mount is detached
 * at most once.
 */
const assertTopmostFirst = (
  before: ReadonlyArray<MountInfo.MountEntry>,
  selected: ReadonlyArray<MountInfo.MountEntry>,
  removed: ReadonlyArray<number>
) => {
  const still = new Set(selected.map((e) => e.id))
  for (const id of removed) {
    const e = selected.find((x) => x.id === id)
    assert.isDefined(e, `mount ${id} was not selected`)
    const mp = Lexical.clean((e as MountInfo.MountEntry).mountPoint)
    for (const f of selected) {
      if (f.id === id || !still.has(f.id)) continue
      const fp = Lexical.clean(f.mountPoint)
      assert.isFalse(
        fp !== mp && Lexical.covers(fp, mp),
        `${mp} (mount ${id}) was detached while ${fp} was mounted above it`
      )
    }
    assert.isTrue(still.has(id), `mount ${id} detached twice`)
    for (const g of withDescendants(before, new Set([id]))) still.delete(g)
  }
}

describe("MemoryHost mounts", () => {
  it.effect("serves /proc/self/mountinfo through the FileSystem, as an operation", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* fs.makeDirectory("/mnt/sp ace", { recursive: true })
      yield* host.tmpfs("/mnt/sp ace")
      yield* fs.makeDirectory("/mnt/sp ace/t")
      yield* fs.makeDirectory("/src/x", { recursive: true })
      yield* host.bind("/src/x", "/mnt/sp ace/t")
      yield* host.tmpfs("/mnt/sp ace")
      const text = yield* fs.readFileString("/proc/self/mountinfo")
      assert.strictEqual(text, yield* fs.readFileString("/proc/1234/mountinfo"))
      const table = yield* Layers.parseMountInfo(text)
      assert.deepStrictEqual(
        table.map((e) => [e.id, e.parentId, `${e.major}:${e.minor}`, e.root, e.mountPoint, e.fsType, e.source]),
        [
          [1, 1, "8:1", "/", "/", "ext4", "/dev/vda"],
          [2, 1, "0:40", "/", "/mnt/sp ace", "tmpfs", "tmpfs"],
          [3, 2, "8:1", "/src/x", "/mnt/sp ace/t", "ext4", "/dev/vda"],
          [4, 2, "0:41", "/", "/mnt/sp ace", "tmpfs", "tmpfs"]
        ]
      )
      assert.include(text, "/mnt/sp\\040ace")
      assert.deepStrictEqual(table, yield* host.mountTable)
      // a tmpfs has its own device
      assert.notStrictEqual((yield* fs.stat("/mnt/sp ace")).dev, (yield* fs.stat("/mnt")).dev)
      const ops = (yield* host.operations).filter((o) => o.paths.includes("/proc/self/mountinfo"))
      assert.strictEqual(ops[0]?.kind, "readFile")
      yield* host.failNth({ kind: "readFile", path: "/proc/self/mountinfo", code: "EIO" })
      const e = yield* Effect.flip(MountInfo.read())
      assert.strictEqual(e.reason._tag, "Unreadable")
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("a recursive remove below a bind mount deletes the source's files; the mount point itself is EBUSY", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* host.bind("/src", "/mnt/data")
      assert.strictEqual(yield* fs.readFileString("/mnt/data/sub/f"), "x")
      // Node's fs.rm tries rmdir first: on a mount point (or its parent) that fails EBUSY (verified on Linux 6.x).
      for (const p of ["/mnt/data", "/mnt"]) {
        const e = yield* Effect.flip(fs.remove(p, { recursive: true }))
        assert.strictEqual(e.reason._tag, "Busy", p)
      }
      assert.deepStrictEqual(Object.keys(yield* host.dump("/src")), ["/src", "/src/sub", "/src/sub/f", "/src/top"])
      // ... but anything below the mount point is the source itself.
      yield* fs.remove("/mnt/data/sub", { recursive: true })
      assert.deepStrictEqual(Object.keys(yield* host.dump("/src")), ["/src", "/src/top"])
      assert.strictEqual((yield* host.mountTable).length, 2)
    }).pipe(
      Effect.provide(
        MemoryHost.layer({ files: { "/src/sub/f": "x", "/src/top": "y", "/mnt/data": { directory: true } } })
      )
    )
  )

  it.effect("umount and mount interpreters print util-linux's messages and exit 32 on failure", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      const spawner = MemoryHost.mountCommands(host.state)
      const run = (cmd: string, ...args: ReadonlyArray<string>) =>
        Effect.scoped(
          Effect.gen(function* () {
            const h = yield* spawner.spawn(ChildProcess.make(cmd, args))
            const [stderr, code] = yield* Effect.all([h.stderr.pipe(Stream.decodeText(), Stream.mkString), h.exitCode])
            return { stderr, code: Number(code) }
          })
        )
      yield* fs.makeDirectory("/m/busy", { recursive: true })
      yield* fs.makeDirectory("/m/plain")
      yield* fs.makeDirectory("/src")
      assert.deepStrictEqual(yield* run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", "/m/busy"), {
        stderr: "",
        code: 0
      })
      assert.deepStrictEqual(yield* run("mount", "--bind", "/src", "/m/plain"), { stderr: "", code: 0 })
      assert.deepStrictEqual(yield* run("mount", "--bind", "/nope", "/m/plain"), {
        stderr: "mount: /m/plain: special device /nope does not exist.\n",
        code: 32
      })
      assert.deepStrictEqual(yield* run("mount", "-t", "tmpfs", "tmpfs", "/m/nope"), {
        stderr: "mount: /m/nope: mount point does not exist.\n",
        code: 32
      })
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* fs.open("/m/busy/held", { flag: "w" })
          assert.deepStrictEqual(yield* run("umount", "--", "/m/busy", "/m", "/m/missing"), {
            stderr:
              "umount: /m/busy: target is busy.\numount: /m: not mounted.\numount: /m/missing: no mount point specified.\n",
            code: 32
          })
        })
      )
      yield* host.failUnmount("/m/plain", "EPERM")
      assert.deepStrictEqual(yield* run("umount", "-l", "--", "/m/plain"), {
        stderr: "umount: /m/plain: must be superuser to unmount.\n",
        code: 32
      })
      yield* host.clearUnmountFaults
      assert.deepStrictEqual(yield* run("umount", "-l", "--", "/m/plain", "/m/busy"), { stderr: "", code: 0 })
      assert.deepStrictEqual(
        (yield* host.mountTable).map((e) => e.mountPoint),
        ["/"]
      )
      // -R takes the submounts of the target, deepest first
      yield* host.tmpfs("/m")
      yield* fs.makeDirectory("/m/x/y", { recursive: true })
      yield* host.tmpfs("/m/x")
      yield* fs.makeDirectory("/m/x/y")
      yield* host.tmpfs("/m/x/y")
      assert.deepStrictEqual(yield* run("umount", "-R", "/m"), { stderr: "", code: 0 })
      assert.deepStrictEqual(
        (yield* host.mountTable).map((e) => e.mountPoint),
        ["/"]
      )
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("the in-memory Mounter goes through the journal: failNth, the log, the crash", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      const mounter = yield* Mounter.Mounter
      yield* fs.makeDirectory("/m")
      yield* host.tmpfs("/m")
      yield* host.failNth({ kind: "unmount", path: "/m", code: "EBUSY" })
      const root = yield* (yield* Directory.Directories).openRoot("/")
      const id = (yield* host.mountTable).find((e) => e.mountPoint === "/m")?.id ?? -1
      const target = { path: "/m", mountId: id, tablePath: "/m" }
      const [first] = yield* mounter.unmount(root, [target], { lazy: true })
      assert.strictEqual(first?._tag === "Failed" ? first.failure.errno : first?._tag, "EBUSY")
      assert.strictEqual((yield* mounter.unmount(root, [target], { lazy: true }))[0]?._tag, "Unmounted")
      const log = (yield* host.operations).filter((o) => o.kind === "unmount")
      assert.deepStrictEqual(
        log.map((o) => [o.paths, o.outcome, o.injected]),
        [
          [["/m"], "EBUSY", true],
          [["/m"], "ok", false]
        ]
      )
      yield* host.crashAfter(0)
      const exit = yield* Effect.exit(mounter.unmount(root, [target], { lazy: true }))
      assert.isTrue(exit._tag === "Failure")
    }).pipe(Effect.scoped, Effect.provide(MemoryHost.layer()))
  )

  it.effect.prop(
    "unmountBelow: nothing at or below a prefix remains, others untouched, topmost mount points first",
    [Ops, Prefixes],
    ([ops, prefixIx]) =>
      Effect.gen(function* () {
        const host = yield* MemoryHost.MemoryHost
        const before = yield* buildForest(ops)
        const prefixes = normalizePrefixes(prefixIx.map((i) => PrefixCandidates[i]!))
        const removed: Array<number> = []
        yield* Unmount.unmountBelow(prefixIx.map((i) => PrefixCandidates[i]!)).pipe(Effect.provide(recording(removed)))
        const after = yield* host.mountTable
        assert.deepStrictEqual(
          after.filter((e) => coveredBy(prefixes, e)),
          []
        )
        assert.deepStrictEqual(ids(after), ids(before.filter((e) => !coveredBy(prefixes, e))))
        const selected = before.filter((e) => coveredBy(prefixes, e))
        // The topmost mount points only: what is below goes along with them.
        assertTopmostFirst(before, selected, removed)
        assert.deepStrictEqual(
          ids(selected.filter((e) => removed.includes(e.id))),
          [...removed].sort((a, b) => a - b)
        )
      }).pipe(Effect.provide(MemoryHost.layer({ files }))),
    runs
  )

  it.effect.prop(
    "unmountStrictlyBelow keeps the prefixes' own mounts (and what they hold) and removes the rest below",
    [Ops, Prefixes],
    ([ops, prefixIx]) =>
      Effect.gen(function* () {
        const host = yield* MemoryHost.MemoryHost
        const before = yield* buildForest(ops)
        const prefixes = normalizePrefixes(prefixIx.map((i) => PrefixCandidates[i]!))
        const own = (e: MountInfo.MountEntry) => prefixes.includes(Lexical.clean(e.mountPoint))
        const selected = before.filter((e) => coveredBy(prefixes, e) && !own(e))
        const removed: Array<number> = []
        yield* Unmount.unmountStrictlyBelow(prefixIx.map((i) => PrefixCandidates[i]!)).pipe(
          Effect.provide(recording(removed))
        )
        // A prefix's own mount below a selected one goes with its parent's lazy unmount.
        const gone = withDescendants(before, new Set(selected.map((e) => e.id)))
        const after = yield* host.mountTable
        assert.deepStrictEqual(ids(after), ids(before.filter((e) => !gone.has(e.id))))
        assert.isTrue(after.every((e) => !coveredBy(prefixes, e) || own(e)))
        assertTopmostFirst(before, selected, removed)
      }).pipe(Effect.provide(MemoryHost.layer({ files }))),
    runs
  )

  it.effect.prop(
    "unmountBelowByPrefix reports exactly the prefixes whose mounts failed",
    [Ops, Prefixes, Failures],
    ([ops, prefixIx, failIx]) =>
      Effect.gen(function* () {
        const host = yield* MemoryHost.MemoryHost
        const before = yield* buildForest(ops)
        const failing = new Set<string>(failIx.map((i) => Dirs[i]!))
        for (const p of failing) yield* host.failUnmount(p, "EBUSY")
        const prefixes = normalizePrefixes(prefixIx.map((i) => PrefixCandidates[i]!))
        const selected = before.filter((e) => coveredBy(prefixes, e))
        // Independently: every selected mount whose path does not fail is unmounted, and its
        // lazy unmount takes its whole subtree, failing mounts included.
        const gone = withDescendants(
          before,
          new Set(selected.filter((e) => !failing.has(e.mountPoint)).map((e) => e.id))
        )
        const remaining = selected.filter((e) => !gone.has(e.id))
        // Failures are keyed by each prefix exactly as it was given.
        const given = [...new Set(prefixIx.map((i) => PrefixCandidates[i]!))]
        const expected = given.filter((p) => remaining.some((e) => Lexical.covers(Lexical.clean(p), e.mountPoint)))
        const result = yield* Unmount.unmountBelowByPrefix(prefixIx.map((i) => PrefixCandidates[i]!))
        assert.deepStrictEqual([...result.failures.keys()].sort(), [...expected].sort())
        for (const [p, error] of result.failures) {
          assert.strictEqual(error.reason._tag, "MountsRemain")
          if (error.reason._tag !== "MountsRemain") continue
          assert.deepStrictEqual(
            error.reason.remaining.map((m) => m.mountId).sort((a, b) => a - b),
            ids(remaining.filter((e) => Lexical.covers(Lexical.clean(p), e.mountPoint)))
          )
          assert.isTrue(
            error.reason.remaining.every((m) => m.errno === "EBUSY"),
            JSON.stringify(error.reason.remaining)
          )
        }
        assert.deepStrictEqual(ids(yield* host.mountTable), ids(before.filter((e) => !gone.has(e.id))))
      }).pipe(Effect.provide(MemoryHost.layer({ files }))),
    runs
  )
})

describe("MemoryMounts.MountError", () => {
  it.effect("catchReason reaches each reason: a bind below a file fails with Bind, naming its source", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      yield* fs.makeDirectory("/src", { recursive: true })
      yield* fs.writeFileString("/file", "")
      const failing = host.bind("/src", "/file/below")
      const source = yield* failing.pipe(
        Effect.map(() => "bound"),
        Effect.catchReason("MemoryHostMountError", "Bind", (reason, error) =>
          Effect.succeed(`${reason.source} -> ${error.target}: ${reason.errno}`)
        )
      )
      assert.match(source, /^\/src -> \/file\/below: E[A-Z]+$/)
      // @ts-expect-error: MountError has no reason tagged "Overlay"
      void failing.pipe(Effect.catchReason("MemoryHostMountError", "Overlay", () => Effect.void))
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect(
    "unmount takes the top of a stack; busy without lazy (EBUSY), lazy takes the subtree, no mount is EINVAL",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const host = yield* MemoryHost.MemoryHost
        const at = (path: string) =>
          host.mountTable.pipe(Effect.map((t) => t.filter((e) => e.mountPoint === path).length))
        const unmountFailure = (target: string, lazy: boolean) =>
          host.unmount(target, { lazy }).pipe(
            Effect.map(() => "unmounted"),
            Effect.catchReason("MemoryHostMountError", "Unmount", (reason, error) =>
              Effect.succeed(`${error.target} lazy=${reason.lazy}: ${reason.errno}`)
            )
          )
        yield* host.tmpfs("/m")
        yield* host.tmpfs("/m")
        yield* fs.makeDirectory("/m/sub")
        yield* host.tmpfs("/m/sub")
        assert.strictEqual(yield* at("/m"), 2)
        // The top of /m has a mount below it: a plain unmount refuses and changes nothing.
        assert.strictEqual(yield* unmountFailure("/m", false), "/m lazy=false: EBUSY")
        assert.deepStrictEqual([yield* at("/m"), yield* at("/m/sub")], [2, 1])
        // A lazy one detaches the top of /m with what is below it; the lower tmpfs stays.
        assert.strictEqual(yield* unmountFailure("/m", true), "unmounted")
        assert.deepStrictEqual([yield* at("/m"), yield* at("/m/sub")], [1, 0])
        assert.strictEqual(yield* unmountFailure("/m", false), "unmounted")
        assert.strictEqual(yield* at("/m"), 0)
        // Nothing mounted there any more: EINVAL, as umount2 says.
        assert.strictEqual(yield* unmountFailure("/m", true), "/m lazy=true: EINVAL")
        // Not a journal operation: a fault armed for the process does not reach it.
        yield* host.tmpfs("/m")
        yield* host.crashAfter(0)
        assert.strictEqual(yield* unmountFailure("/m", false), "unmounted")
      }).pipe(Effect.provide(MemoryHost.layer({ files: { "/m": { directory: true } } })))
  )
})
