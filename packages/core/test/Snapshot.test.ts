/**
 * `Snapshot` with the default paths (`Snapshot.take`, `Snapshot.scoped`) on
 * the simulated host's real root, the way an upgrade uses it, and the
 * manifest Schema and error on their own. The behaviour in depth (random
 * trees, tampering, crashes) is in the conformance suite and the crash tests.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfSnap, Snapshot, Systemd } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import * as SnapshotFixtures from "@hostnode/test/internal/snapshot/fixtures"
import * as SnapshotTrees from "@hostnode/test/internal/snapshot/trees"
import { Cause, Effect, Exit, FileSystem, Ref, Schema } from "effect"
import * as Model from "../src/internal/snapshot/model.ts"

const node = {
  "/etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/local/bin/kubelet $KUBELET_ARGS\n",
  "/etc/systemd/system/kubelet.service.d/10-args.conf": "[Service]\nEnvironment=KUBELET_ARGS=--v=2\n",
  "/etc/containerd/config.toml": "version = 2\n",
  "/etc/default/kubelet": "KUBELET_EXTRA_ARGS=\n",
  "/etc/kubernetes/kubelet.conf": "apiVersion: v1\nkind: Config\n",
  "/etc/kubernetes/pki/ca.crt": "CA",
  "/etc/kubernetes/pki/kubelet.key": { content: "PRIVATE KEY", mode: 0o600 },
  "/etc/hostname": "node-1\n"
} as const

describe("Snapshot on the default paths", () => {
  it.effect("an upgrade that fails inside Snapshot.scoped is rolled back, PKI aside, and systemd reloaded", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const { systemd, calls } = yield* SnapshotFixtures.recordingSystemd
      const dir = "/etc/hostnode/snapshots/upgrade"
      const before = yield* SnapshotTrees.treeOf("/", "/etc")
      const exit = yield* Effect.exit(
        Effect.scoped(
          Effect.gen(function* () {
            const snapshot = yield* Snapshot.scoped({ dir })
            assert.deepStrictEqual(snapshot.paths, ConfSnap.DefaultPaths)
            // The private key never reaches the snapshot.
            assert.notInclude(yield* fs.readFileString(`${dir}/${Model.DataName}`), "PRIVATE KEY")
            // The upgrade rewrites the units and configuration, adds files, and the kubelet rotates a key.
            yield* fs.writeFileString("/etc/systemd/system/kubelet.service", "[Service]\nExecStart=/new/kubelet\n")
            yield* fs.remove("/etc/systemd/system/kubelet.service.d/10-args.conf")
            yield* fs.makeDirectory("/etc/systemd/system/containerd.service.d", { recursive: true })
            yield* fs.writeFileString("/etc/systemd/system/containerd.service.d/limits.conf", "[Service]\n")
            yield* fs.writeFileString("/etc/containerd/config.toml", "version = 3\n")
            yield* fs.makeDirectory("/etc/sysctl.d")
            yield* fs.writeFileString("/etc/sysctl.d/k8s.conf", "net.ipv4.ip_forward = 1\n")
            yield* fs.writeFileString("/etc/kubernetes/pki/kubelet.key", "ROTATED KEY")
            yield* fs.writeFileString("/etc/hostname", "renamed\n")
            return yield* Effect.fail("kubelet did not come up" as const)
          })
        ).pipe(Effect.provideService(Systemd.Systemd, systemd))
      )
      assert.deepStrictEqual(exit, Exit.fail("kubelet did not come up" as const))
      const after = yield* SnapshotTrees.treeOf("/", "/etc")
      const pki = (k: string) => k.startsWith("/etc/kubernetes/pki")
      const unrecorded = (k: string) => k === "/etc/hostname" || k === "/etc/sysctl.d" || pki(k)
      assert.deepStrictEqual(
        SnapshotTrees.pick(after, (k) => !unrecorded(k) && !k.startsWith("/etc/hostnode")),
        SnapshotTrees.pick(before, (k) => !unrecorded(k))
      )
      // Outside the snapshot and in the PKI, the new state stays.
      assert.strictEqual(yield* fs.readFileString("/etc/kubernetes/pki/kubelet.key"), "ROTATED KEY")
      assert.strictEqual(yield* fs.readFileString("/etc/hostname"), "renamed\n")
      // The sysctl drop-in did not exist, so it is gone; its directory was not recorded and stays.
      assert.isFalse(yield* fs.exists("/etc/sysctl.d/k8s.conf"))
      // Consumed by the rollback: nothing stays beside it (the lock was the directory's flock, no file).
      assert.deepStrictEqual(yield* fs.readDirectory("/etc/hostnode/snapshots"), [])
      assert.deepStrictEqual(yield* Ref.get(calls), ["daemon-reload"])
    }).pipe(Effect.provide(MemoryHost.layer({ files: node })))
  )

  it.effect("Snapshot.take then discard: the saved copy goes, the configuration stays, nothing is reloaded", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const snapshot = yield* Snapshot.take({ dir: "/var/lib/agent/snap" })
      yield* fs.writeFileString("/etc/containerd/config.toml", "version = 3\n")
      yield* snapshot.discard
      assert.isFalse(yield* snapshot.restored)
      assert.deepStrictEqual(yield* fs.readDirectory("/var/lib/agent"), [])
      assert.strictEqual(yield* fs.readFileString("/etc/containerd/config.toml"), "version = 3\n")
    }).pipe(Effect.provide(MemoryHost.layer({ files: node })))
  )
})

describe("Snapshot.Manifest and SnapshotError", () => {
  const decode = Schema.decodeUnknownExit(Model.Manifest)
  const valid = {
    format: "hostnode-snapshot",
    version: 1,
    hostRoot: "/",
    paths: ["/etc/a"],
    exclude: [],
    dataSize: 2,
    entries: [
      { type: "Directory", path: "/etc/a", mode: 0o755, uid: 0, gid: 0 },
      {
        type: "File",
        path: "/etc/a/f",
        mode: 0o4755,
        uid: 1000,
        gid: 1000,
        size: 2,
        offset: 0,
        sha256: "a".repeat(64)
      },
      { type: "SymbolicLink", path: "/etc/a/l", target: "f" },
      { type: "Absent", path: "/etc/a/gone" }
    ]
  }

  it("decodes a manifest with every kind of entry, in version 1 and in version 2 with file times", () => {
    assert.isTrue(Exit.isSuccess(decode(valid)))
    const v2 = structuredClone(valid) as { version: number; entries: Array<Record<string, unknown>> }
    v2.version = 2
    v2.entries[1] = { ...v2.entries[1], atimeNs: "1733050000123456789", mtimeNs: "1733050000123456789" }
    assert.isTrue(Exit.isSuccess(decode(v2)))
  })

  it("rejects modes beyond 07777, short hashes, negative sizes, empty link targets and other versions", () => {
    const bad = (patch: (m: typeof valid) => unknown) => Exit.isFailure(decode(patch(structuredClone(valid))))
    assert.isTrue(bad((m) => ({ ...m, entries: [{ ...m.entries[0], mode: 0o10000 }] })))
    assert.isTrue(bad((m) => ({ ...m, entries: [{ ...m.entries[1], sha256: "abc" }] })))
    assert.isTrue(bad((m) => ({ ...m, entries: [{ ...m.entries[1], size: -1 }] })))
    assert.isTrue(bad((m) => ({ ...m, entries: [{ ...m.entries[2], target: "" }] })))
    assert.isTrue(bad((m) => ({ ...m, version: 3 })))
    assert.isTrue(bad((m) => ({ ...m, entries: [{ ...m.entries[1], mtimeNs: "1.5" }] })))
    assert.isTrue(bad((m) => ({ ...m, format: "tar" })))
  })

  it("SnapshotError names the snapshot, the host root, the path and what is wrong", () => {
    const e = new Snapshot.SnapshotError({
      reason: new Snapshot.Failure({
        _tag: "Corrupt",
        path: "/etc/containerd/config.toml",
        detail: "content hash 00 does not match the recorded ff"
      }),
      dir: "/var/lib/agent/snap",
      hostRoot: ""
    })
    assert.strictEqual(
      e.message,
      'snapshot "/var/lib/agent/snap" (host root "/"): Corrupt at "/etc/containerd/config.toml": content hash 00 does not match the recorded ff'
    )
  })

  it.effect("catchReason reaches each reason, with its own fields; a reason that does not exist is refused", () =>
    Effect.gen(function* () {
      const busy: Effect.Effect<never, Snapshot.SnapshotError> = Effect.fail(
        new Snapshot.SnapshotError({
          reason: new Snapshot.Busy({ pid: 4242, detail: "process 4242 holds the lock of /var/lib/agent" }),
          dir: "/var/lib/agent/snap",
          hostRoot: "/"
        })
      )
      const pid = yield* busy.pipe(
        Effect.catchReason("SnapshotError", "Busy", (reason, error) =>
          Effect.succeed({ pid: reason.pid, dir: error.dir, tag: error.reason._tag })
        )
      )
      assert.deepStrictEqual(pid, { pid: 4242, dir: "/var/lib/agent/snap", tag: "Busy" })
      // Another reason is not caught: the error is kept as it was.
      const other = yield* Effect.flip(
        busy.pipe(Effect.catchReason("SnapshotError", "Corrupt", (reason) => Effect.succeed(reason.path)))
      )
      assert.strictEqual(other.reason._tag, "Busy")
      const rollback = yield* Effect.fail(
        new Snapshot.SnapshotError({
          reason: new Snapshot.RollbackFailed({
            upgrade: Cause.fail("kubelet did not come up"),
            rollback: new Snapshot.SnapshotError({
              reason: new Snapshot.Failure({
                _tag: "Io",
                path: "/etc/containerd/config.toml",
                errno: "EACCES",
                detail: "renameat2"
              }),
              dir: "/var/lib/agent/snap",
              hostRoot: "/"
            })
          }),
          dir: "/var/lib/agent/snap",
          hostRoot: "/"
        })
      ).pipe(
        Effect.catchReason("SnapshotError", "RollbackFailed", (reason) =>
          Effect.succeed(reason.rollback._tag === "SnapshotError" ? reason.rollback.reason._tag : reason.rollback._tag)
        )
      )
      assert.strictEqual(rollback, "Io")
      // @ts-expect-error: "Stale" is no reason of SnapshotError
      busy.pipe(Effect.catchReason("SnapshotError", "Stale", () => Effect.void))
    })
  )
})
