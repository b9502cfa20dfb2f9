/**
 * `Unmount.plan` against a reference that checks every prefix against every
 * mount point with `covers` (what it did before it looked prefixes up by
 * ancestor): the same entries in the same order, for random tables whose
 * paths share names such as `a` and `ab` (so a boundary slip shows).
 */
import { assert, describe, it } from "@effect/vitest"
import { HostPath, type MountInfo, Unmount } from "@hostnode/core"
import { FaultyMounter, MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, Schema } from "effect"

const Segment = Schema.Literals(["a", "ab", "b", "kubelet", "pods"])
const PathSegments = Schema.Array(Segment).check(Schema.isMaxLength(4))
const toPath = (segments: ReadonlyArray<string>) => `/${segments.join("/")}`

const reference = (table: MountInfo.MountTable, prefixes: ReadonlyArray<string>, strict: boolean) =>
  table
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => {
      if (strict && prefixes.includes(e.mountPoint)) return false
      return prefixes.some((p) => Unmount.covers(p, e.mountPoint))
    })
    .sort((x, y) => {
      const depth = (p: string) => (p === "/" ? 0 : p.split("/").length - 1)
      return depth(y.e.mountPoint) - depth(x.e.mountPoint) || y.e.id - x.e.id
    })
    .map(({ e }) => e)

describe("Unmount.plan", () => {
  it.effect.prop(
    "selects and orders exactly what checking every prefix against every mount selects",
    {
      mounts: Schema.Array(PathSegments).check(Schema.isMaxLength(30)),
      prefixes: Schema.Array(PathSegments).check(Schema.isMaxLength(5)),
      strict: Schema.Boolean
    },
    ({ mounts, prefixes, strict }) =>
      Effect.sync(() => {
        const table: MountInfo.MountTable = mounts.map((segments, i) => ({
          id: 100 + i,
          parentId: 1,
          major: 0,
          minor: 40 + i,
          root: "/",
          mountPoint: toPath(segments),
          mountOptions: "rw",
          optionalFields: [],
          fsType: "tmpfs",
          source: "tmpfs",
          superOptions: "rw"
        }))
        const ps = [...new Set(prefixes.map(toPath).map(HostPath.clean))]
        assert.deepStrictEqual(
          Unmount.plan(table, ps, strict).map((e) => e.id),
          reference(table, ps, strict).map((e) => e.id)
        )
      }),
    { arbitrary: { runs: 500 } }
  )
})

describe("UnmountError", () => {
  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const host = yield* MemoryHost.MemoryHost
      yield* fs.makeDirectory("/k/pods/a/vol", { recursive: true })
      yield* host.tmpfs("/k/pods/a/vol")
      const failing = Unmount.unmountBelow(["/k"]).pipe(
        Effect.provide(FaultyMounter.layer((t) => t === "/k/pods/a/vol", "EPERM"))
      )
      const remaining = yield* failing.pipe(
        Effect.map(() => []),
        Effect.catchReason("UnmountError", "MountsRemain", (reason, error) =>
          Effect.succeed(reason.remaining.map((m) => [m.mountPoint, m.errno, error.prefixes.join(",")]))
        )
      )
      assert.deepStrictEqual(remaining, [["/k/pods/a/vol", "EPERM", "/k"]])
      // @ts-expect-error: UnmountError has no reason tagged "Busy"
      void failing.pipe(Effect.catchReason("UnmountError", "Busy", () => Effect.void))
    }).pipe(Effect.provide(MemoryHost.layer()))
  )
})
