/**
 * Unit tests of MemoryHost itself: seeding from a fixture, `dump`, the
 * operation log, fault injection of the nth operation, the crash seam and
 * times from the Effect clock. File-system semantics are covered by the
 * conformance suite and the differential test.
 */
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost } from "@hostnode/sim"
import { Cause, Effect, Exit, FileSystem, Option, Path, Result } from "effect"
import { TestClock } from "effect/testing"

const files: MemoryHost.Fixture = {
  "/etc/kubernetes/kubelet.conf": "text",
  "/etc/x": { content: new Uint8Array([104, 105]), mode: 0o600, uid: 1, gid: 2 },
  "/etc/l": { symlink: "x" },
  "/var/empty": { directory: true, mode: 0o700 }
}

const causeCode = (e: { readonly reason: { readonly cause?: unknown } }): unknown => {
  const cause = e.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
}

/** The defect an effect died with, if it died. */
const defectOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) =>
    Exit.isFailure(exit) ? Result.getSuccess(Cause.findDefect(exit.cause)) : Option.none()
  )

describe("MemoryHost", () => {
  it.effect("seeds the fixture: files, modes, owners, symlinks, directories, 0755 parents", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      assert.strictEqual(yield* fs.readFileString("/etc/kubernetes/kubelet.conf"), "text")
      assert.strictEqual(yield* fs.readFileString("/etc/l"), "hi")
      const x = yield* fs.stat("/etc/x")
      assert.strictEqual(x.mode, 0o100600)
      assert.strictEqual(Option.getOrThrow(x.uid), 1)
      assert.strictEqual(Option.getOrThrow(x.gid), 2)
      assert.strictEqual((yield* fs.stat("/etc/kubernetes")).mode, 0o040755)
      assert.strictEqual((yield* fs.stat("/var/empty")).mode, 0o040700)
      assert.strictEqual((yield* fs.stat("/etc/kubernetes/kubelet.conf")).mode, 0o100644)
      // /tmp exists like on a real host, world-writable and sticky
      assert.strictEqual((yield* fs.stat("/tmp")).mode, 0o041777)
    }).pipe(Effect.provide(MemoryHost.layer({ files })))
  )

  it.effect("dump is a deterministic flat record of a subtree", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      const before = yield* host.dump("/etc")
      assert.deepStrictEqual(before, {
        "/etc": { type: "Directory", mode: 0o755, uid: 0, gid: 0 },
        "/etc/kubernetes": { type: "Directory", mode: 0o755, uid: 0, gid: 0 },
        "/etc/kubernetes/kubelet.conf": { type: "File", mode: 0o644, uid: 0, gid: 0, content: "text" },
        "/etc/l": { type: "SymbolicLink", target: "x" },
        "/etc/x": { type: "File", mode: 0o600, uid: 1, gid: 2, content: "hi" }
      })
      assert.deepStrictEqual(Object.keys(before), Object.keys(before).slice().sort())
      // reads leave the tree as it was
      yield* fs.readDirectory("/etc", { recursive: true })
      yield* fs.readFile("/etc/x")
      assert.deepStrictEqual(yield* host.dump("/etc"), before)
      yield* fs.writeFileString("/etc/new", "n")
      assert.deepStrictEqual((yield* host.dump("/etc"))["/etc/new"], {
        type: "File",
        mode: 0o644,
        uid: 0,
        gid: 0,
        content: "n"
      })
      assert.deepStrictEqual(yield* host.dump("/nope"), {})
      assert.isTrue("/var/empty" in (yield* host.dump()))
    }).pipe(Effect.provide(MemoryHost.layer({ files })))
  )

  it.effect("logs every operation with its paths and outcome, and can forget them", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString("/a", "x")
      yield* fs.rename("/a", "/b")
      yield* Effect.ignore(fs.readFile("/a"))
      yield* fs.exists("/b")
      yield* Effect.scoped(Effect.flatMap(fs.open("/b"), (f) => f.readAlloc(10)))
      const ops = (yield* host.operations).map(({ kind, paths, outcome }) => ({ kind, paths, outcome }))
      assert.deepStrictEqual(ops, [
        { kind: "writeFile", paths: ["/a"], outcome: "ok" },
        { kind: "rename", paths: ["/a", "/b"], outcome: "ok" },
        { kind: "readFile", paths: ["/a"], outcome: "ENOENT" },
        // derived methods log as the call they are made of (exists is access)
        { kind: "access", paths: ["/b"], outcome: "ok" },
        { kind: "open", paths: ["/b"], outcome: "ok" },
        { kind: "File.readAlloc", paths: ["/b"], outcome: "ok" }
      ])
      yield* host.clearOperations
      assert.deepStrictEqual(yield* host.operations, [])
      yield* fs.stat("/b")
      assert.deepStrictEqual(
        (yield* host.operations).map((o) => o.kind),
        ["stat"]
      )
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("fails the nth operation of a kind with the chosen errno, changing nothing", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString("/one", "1")
      yield* fs.writeFileString("/two", "2")
      yield* host.failNth({ kind: "rename", nth: 2, code: "EIO" })
      yield* fs.rename("/one", "/one.renamed")
      const before = yield* host.dump()
      const e = yield* Effect.flip(fs.rename("/two", "/two.renamed"))
      assert.strictEqual(e.reason._tag, "Unknown")
      assert.strictEqual(e.reason.method, "rename")
      assert.strictEqual(causeCode(e), "EIO")
      assert.strictEqual(e.reason._tag === "BadArgument" ? undefined : e.reason.syscall, "rename")
      assert.deepStrictEqual(yield* host.dump(), before)
      // a fault fires once
      yield* fs.rename("/two", "/two.renamed")
      const last = (yield* host.operations).filter((o) => o.kind === "rename")
      assert.deepStrictEqual(
        last.map((o) => [o.outcome, o.injected]),
        [
          ["ok", false],
          ["EIO", true],
          ["ok", false]
        ]
      )
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("a fault can be limited to a path, and maps its errno like NodeFileSystem", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* host.failNth({ kind: "writeFile", path: "/etc/target", code: "EACCES" })
      yield* host.failNth({ kind: "File.writeAll", code: "ENOSPC" })
      yield* fs.writeFileString("/etc/other", "x")
      const denied = yield* Effect.flip(fs.writeFileString("/etc/target", "x"))
      assert.strictEqual(denied.reason._tag, "PermissionDenied")
      assert.strictEqual(causeCode(denied), "EACCES")
      assert.isFalse(yield* fs.exists("/etc/target"))
      const full = yield* Effect.flip(
        Effect.scoped(Effect.flatMap(fs.open("/etc/other", { flag: "a" }), (f) => f.writeAll(new Uint8Array([1]))))
      )
      assert.strictEqual(full.reason._tag, "Unknown")
      assert.strictEqual(causeCode(full), "ENOSPC")
      assert.strictEqual(yield* fs.readFileString("/etc/other"), "x")
      yield* host.failNth({ kind: "stat", code: "ENOENT" })
      yield* host.clearFaults
      yield* fs.stat("/etc/other")
    }).pipe(Effect.provide(MemoryHost.layer({ files: { "/etc": { directory: true } } })))
  )

  it.effect("crashAfter(n): n operations complete, every later one dies and changes nothing", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString("/state", "v1")
      yield* host.crashAfter(2)
      yield* fs.writeFileString("/state.tmp", "v2")
      yield* fs.rename("/state.tmp", "/state")
      assert.isTrue(yield* host.crashed)
      const afterCrash = yield* host.dump()
      const defect = yield* defectOf(fs.writeFileString("/state", "v3"))
      assert.isTrue(Option.isSome(defect) && MemoryHost.isCrash(defect.value))
      if (Option.isSome(defect) && MemoryHost.isCrash(defect.value)) {
        assert.strictEqual(defect.value.reason._tag, "ProcessCrashed")
        assert.strictEqual(defect.value.operation, "writeFile")
        assert.deepStrictEqual(defect.value.paths, ["/state"])
      }
      assert.isTrue(Option.isSome(yield* defectOf(fs.readFileString("/state"))))
      assert.deepStrictEqual(yield* host.dump(), afterCrash)
      assert.strictEqual(afterCrash["/state"]?.type === "File" ? afterCrash["/state"].content : undefined, "v2")
      // inspection still works and shows the refused operations
      assert.deepStrictEqual(
        (yield* host.operations).slice(-2).map((o) => [o.kind, o.outcome]),
        [
          ["writeFile", "crashed"],
          ["readFile", "crashed"]
        ]
      )
      yield* host.restart
      assert.isFalse(yield* host.crashed)
      assert.strictEqual(yield* fs.readFileString("/state"), "v2")
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("files opened before a crash are dead after restart; a dead process's finalizers do not run", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      const leftover = yield* Effect.scoped(
        Effect.gen(function* () {
          const dir = yield* fs.makeTempDirectoryScoped()
          const file = yield* fs.open(`${dir}/f`, { flag: "w" })
          yield* file.writeAll(new Uint8Array([1, 2, 3]))
          yield* host.crashAfter(0)
          yield* host.restart
          const defect = yield* defectOf(file.writeAll(new Uint8Array([4])))
          assert.isTrue(Option.isSome(defect) && MemoryHost.isCrash(defect.value))
          if (Option.isSome(defect) && MemoryHost.isCrash(defect.value)) {
            assert.strictEqual(defect.value.reason._tag, "StaleHandle")
            assert.strictEqual(defect.value.operation, "File.writeAll")
          }
          yield* host.crashAfter(0)
          return dir
        })
      )
      // the scope closed while crashed: the temporary directory was not removed
      yield* host.restart
      assert.deepStrictEqual([...(yield* fs.readFile(`${leftover}/f`))], [1, 2, 3])
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("times come from the Effect clock", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      yield* TestClock.setTime(1_000_000)
      yield* fs.writeFileString("/f", "x")
      yield* TestClock.adjust("1 hour")
      yield* fs.writeFileString("/f", "y", { flag: "a" })
      const s = yield* fs.stat("/f")
      assert.strictEqual(Option.getOrThrow(s.birthtime).getTime(), 1_000_000)
      assert.strictEqual(Option.getOrThrow(s.mtime).getTime(), 1_000_000 + 3_600_000)
    }).pipe(Effect.provide(MemoryHost.layer()))
  )

  it.effect("provides Path and resolves relative paths against cwd", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      yield* fs.writeFileString("relative", "r")
      assert.strictEqual(yield* fs.readFileString("/work/relative"), "r")
      assert.strictEqual(yield* fs.realPath("relative"), "/work/relative")
      assert.strictEqual(path.join("/a", "b"), "/a/b")
    }).pipe(Effect.provide(MemoryHost.layer({ cwd: "/work" })))
  )

  it.effect("a fixture that cannot be created is a defect naming the path", () =>
    Effect.gen(function* () {
      const defect = yield* defectOf(
        Effect.provide(
          Effect.gen(function* () {
            return yield* FileSystem.FileSystem
          }),
          MemoryHost.layer({ files: { "/a": "file", "/a/b": "below a file" } })
        )
      )
      assert.isTrue(Option.isSome(defect))
      if (Option.isSome(defect)) assert.include(String(defect.value), "/a/b")
    })
  )

  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      // The defects the host dies with, turned into failures so that catchReason can narrow them.
      const fixture = yield* defectOf(
        Effect.provide(
          Effect.gen(function* () {
            return yield* FileSystem.FileSystem
          }),
          MemoryHost.layer({ files: { "/a": "file", "/a/b": "x" } })
        )
      )
      assert.isTrue(Option.isSome(fixture) && fixture.value instanceof MemoryHost.FixtureError)
      if (!(Option.isSome(fixture) && fixture.value instanceof MemoryHost.FixtureError)) return
      const parent = yield* Effect.fail(fixture.value).pipe(
        Effect.catchReason("MemoryHostFixtureError", "ParentNotDirectory", (reason, error) =>
          Effect.succeed(`${reason._tag} ${error.path}: ${reason.message}`)
        )
      )
      assert.strictEqual(parent, "ParentNotDirectory /a/b: has a parent that is not a directory")
      assert.strictEqual(fixture.value.message, 'MemoryHost fixture: "/a/b" has a parent that is not a directory')

      const stale = yield* Effect.scoped(
        Effect.gen(function* () {
          const host = yield* MemoryHost.MemoryHost
          const fs = yield* FileSystem.FileSystem
          const file = yield* fs.open("/f", { flag: "w" })
          yield* host.crashAfter(0)
          yield* host.restart
          return yield* defectOf(file.writeAll(new Uint8Array([1])))
        })
      ).pipe(Effect.provide(MemoryHost.layer()))
      assert.isTrue(Option.isSome(stale) && MemoryHost.isCrash(stale.value))
      if (!(Option.isSome(stale) && MemoryHost.isCrash(stale.value))) return
      const fd = yield* Effect.fail(stale.value).pipe(
        Effect.catchReason("MemoryHostCrashed", "StaleHandle", (reason) => Effect.succeed(reason.fd))
      )
      assert.isNumber(fd)
      assert.include(stale.value.message, `descriptor ${fd}`)
      const refused = yield* Effect.fail(stale.value).pipe(
        Effect.catchReason(
          "MemoryHostCrashed",
          "ProcessCrashed",
          () => Effect.succeed("ProcessCrashed"),
          (reason) => Effect.succeed(reason._tag)
        )
      )
      assert.strictEqual(refused, "StaleHandle")
      const failed = Effect.fail(fixture.value)
      const notAbsolute = yield* Effect.catchReason(failed, "MemoryHostFixtureError", "NotAbsolute", () =>
        Effect.succeed("NotAbsolute")
      ).pipe(Effect.catchTag("MemoryHostFixtureError", (e) => Effect.succeed(e.reason._tag)))
      assert.strictEqual(notAbsolute, "ParentNotDirectory")
      // @ts-expect-error: FixtureError has no reason NoSuchReason
      void Effect.catchReason(failed, "MemoryHostFixtureError", "NoSuchReason", () => Effect.succeed("never"))
    })
  )

  it.effect("each build of the layer is a fresh host", () =>
    Effect.gen(function* () {
      const write = Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const existed = yield* fs.exists("/marker")
        yield* fs.writeFileString("/marker", "x")
        return existed
      })
      assert.isFalse(yield* Effect.provide(write, MemoryHost.layer()))
      assert.isFalse(yield* Effect.provide(write, MemoryHost.layer()))
    })
  )
})
