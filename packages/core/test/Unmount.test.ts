/**
 * `Unmount.plan` against a reference that checks every prefix against every
 * mount point with `covers` (what it did before it looked prefixes up by
 * ancestor): the same entries in the same order, for random tables whose
 * paths share names such as `a` and `ab` (so a boundary slip shows).
 */
import { assert, describe, it } from "@effect/vitest"
import { type MountInfo, Unmount } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { FaultyMounter, MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, Schema } from "effect"
import { plan } from "#internal/unmount/plan.ts"

const Segment = Schema.Literals(["a", "ab", "b", "kubelet", "pods"])
const PathSegments = Schema.Array(Segment).check(Schema.isMaxLength(4))
const toPath = (segments: ReadonlyArray<string>) => `/${segments.join("/")}`

const reference = (table: ReadonlyArray<MountInfo.MountEntry>, prefixes: ReadonlyArray<string>, strict: boolean) =>
  table
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => {
      if (strict && prefixes.includes(e.mountPoint)) return false
      return prefixes.some((p) => Lexical.covers(p, e.mountPoint))
    })
    .sort((x, y) => {
      const depth = (p: string) => (p === "/" ? 0 : p.split("/").length - 1)
      return depth(y.e.mountPoint) - depth(x.e.mountPoint) || height(table, y.e) - height(table, x.e) || y.e.id - x.e.id
    })
    .map(({ e }) => e)

// How many mounts lie below `e` in the stack at its mount point: its parent, mounted at the same path, and so on.
const height = (table: ReadonlyArray<MountInfo.MountEntry>, e: MountInfo.MountEntry): number => {
  let h = 0
  for (let at = e; ; ) {
    const below = table.find((x) => x.id === at.parentId && x !== at && x.mountPoint === at.mountPoint)
    if (below === undefined || h > table.length) return h
    h++
    at = below
  }
}

describe("Unmount.plan", () => {
  it.effect.prop(
    "selects and orders exactly what checking every prefix against every mount selects",
    {
      mounts: Schema.Array(PathSegments).check(Schema.isMaxLength(30)),
      // Up to 12: more than 8 are looked up by ancestor, fewer compared one by one.
      prefixes: Schema.Array(PathSegments).check(Schema.isMaxLength(12)),
      strict: Schema.Boolean
    },
    ({ mounts, prefixes, strict }) =>
      Effect.sync(() => {
        // Ids in no order (the kernel reuses the lowest free one); each mount on the one before it
        // when they share a path (a stack, whose top can have the lowest id), else on mount 1.
        const ids = mounts.map((_, i) => 100 + ((i * 7) % Math.max(1, mounts.length)))
        const table: ReadonlyArray<MountInfo.MountEntry> = mounts.map((segments, i) => ({
          id: ids[i] as number,
          parentId:
            i > 0 && toPath(mounts[i - 1] as ReadonlyArray<string>) === toPath(segments) ? (ids[i - 1] as number) : 1,
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
        const ps = [...new Set(prefixes.map(toPath).map(Lexical.clean))]
        assert.deepStrictEqual(
          plan(table, ps, strict).map((e) => e.id),
          reference(table, ps, strict).map((e) => e.id)
        )
      }),
    { arbitrary: { runs: 500 } }
  )
})

describe("Unmount.plan on a stack", () => {
  it("peels a stack from its top, whatever the ids say: the top of a stack can have the lowest id", () => {
    const at = (id: number, parentId: number, mountPoint: string): MountInfo.MountEntry => ({
      id,
      parentId,
      major: 0,
      minor: id,
      root: "/",
      mountPoint,
      mountOptions: "rw",
      optionalFields: [],
      fsType: "tmpfs",
      source: "tmpfs",
      superOptions: "rw"
    })
    // On /k/v: 50 (bottom), then 40 on it, then 60 on 40, then 30 on 60; /k/v/w on the top one.
    const table = [at(1, 1, "/"), at(50, 1, "/k/v"), at(40, 50, "/k/v"), at(60, 40, "/k/v"), at(30, 60, "/k/v")]
    const withChild = [...table, at(45, 30, "/k/v/w")]
    assert.deepStrictEqual(
      plan(withChild, ["/k"], false).map((e) => e.id),
      [45, 30, 60, 40, 50]
    )
    // A table whose parents loop still plans every entry, once.
    const looped = [at(1, 1, "/"), at(7, 8, "/k/x"), at(8, 7, "/k/x")]
    assert.sameMembers(
      plan(looped, ["/k"], false).map((e) => e.id),
      [7, 8]
    )
  })
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
