/**
 * The removals under a concurrent writer on the simulated host, at every
 * step: a clean run counts the operations `teardownKubeletDir` and
 * `resetCniState` make, then each adversary action (a directory swapped with
 * a link out of the root, a directory moved aside for such a link, the
 * outside bind-mounted onto a directory being removed, a parent renamed away)
 * is played right before operation 1, 2, ..., N+1 of a fresh run. Whatever
 * the index: the tree outside the root is unchanged (nothing was removed
 * through a link or a mount), every path reported removed is gone, and every
 * path reported kept is there.
 */
import { assert, describe, it } from "@effect/vitest"
import { HostPath, Repave, type SafeRemove } from "@hostnode/core"
import { MemoryAdversary, MemoryHost } from "@hostnode/sim"
import { Effect, FileSystem } from "effect"

const data = "/r/var/lib/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/data"
const net = "/r/var/lib/cni/networks/k8s-pod-network"

const files: MemoryHost.Fixture = {
  "/outside/secret/a": "not ours",
  "/outside/secret/sub/b": "not ours",
  "/outside/d/a": "not ours either",
  [`${data}/d/a`]: "ours",
  [`${data}/d/sub/b`]: "ours",
  [`${data}/l`]: { symlink: "/outside/secret" },
  [`${data}/keep/x`]: "ours",
  "/r/var/lib/kubelet/pods/p1/etc-hosts": "hosts",
  [`${net}/d/a`]: "ours",
  [`${net}/d/sub/b`]: "ours",
  [`${net}/l`]: { symlink: "/outside/secret" },
  "/r/etc/cni/net.d/10-bridge.conflist": "{}"
}

/**
 * The adversary's moves, for a raced directory `d` and a link `l` beside it
 * (both in `dir`), each with the paths whose names it gives to other objects:
 * below those, a path the removal reported is not looked up again (it names
 * what the adversary put there, not what was removed).
 */
const actions = (dir: string): ReadonlyArray<readonly [string, MemoryAdversary.Action, ReadonlyArray<string>]> => [
  ["exchange d and l", MemoryAdversary.exchange(`${dir}/d`, `${dir}/l`), [`${dir}/d`, `${dir}/l`]],
  [
    "d moved aside for a link out",
    MemoryAdversary.swapForLink(`${dir}/d`, `${dir}/aside`, "/outside/secret"),
    [`${dir}/d`, `${dir}/aside`]
  ],
  ["the outside bound onto d", MemoryAdversary.bind("/outside/secret", `${dir}/d`), [`${dir}/d`]],
  ["d's parent renamed away", MemoryAdversary.rename(dir, `${dir}-moved`), [dir, `${dir}-moved`]]
]

const below = (ancestor: string, path: string) => path === ancestor || path.startsWith(`${ancestor}/`)

const operations = {
  teardownKubeletDir: Effect.map(
    Effect.flatMap(HostPath.decodeRoot("/r"), (hostRoot) => Repave.teardownKubeletDir({ hostRoot })),
    (r) => ({
      removed: r.removed,
      kept: r.kept
    })
  ),
  resetCniState: Effect.map(
    Effect.result(Effect.flatMap(HostPath.decodeRoot("/r"), (hostRoot) => Repave.resetCniState({ hostRoot }))),
    (r): SafeRemove.Report =>
      r._tag === "Success"
        ? r.success
        : r.failure._tag === "ResetError"
          ? {
              removed: r.failure.removed,
              kept: r.failure.kept,
              removedCount: r.failure.removed.length,
              keptCount: r.failure.kept.length
            }
          : {
              removed: [],
              kept: [{ path: "/", reason: "Failed" as const, detail: r.failure.message }],
              removedCount: 0,
              keptCount: 1
            }
  )
}

/** One run on a fresh host with `act` before operation `at` (0: no adversary); what it left. */
const runOnce = (
  operation: keyof typeof operations,
  at: number,
  act: MemoryAdversary.Action | undefined,
  renamed: ReadonlyArray<string> = []
) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    const fs = yield* FileSystem.FileSystem
    const outsideBefore = yield* host.dump("/outside")
    yield* host.clearOperations
    const installed = act === undefined ? undefined : yield* MemoryAdversary.at(at, act)
    const report = yield* operations[operation]
    yield* installed?.remove ?? Effect.void
    const ops = (yield* host.operations).length
    const outsideAfter = yield* host.dump("/outside")
    const acted = (yield* installed?.record ?? Effect.succeed(undefined))?.acted ?? []
    const moved = acted.some((a) => a.outcome === "ok") ? renamed : []
    const gone = yield* Effect.forEach(
      report.removed.filter((p) => !moved.some((m) => below(m, p))),
      (p) => Effect.map(Effect.result(fs.lstat(p)), (r) => (r._tag === "Failure" ? undefined : p))
    )
    const kept = yield* Effect.forEach(report.kept, (k) =>
      Effect.map(Effect.result(fs.lstat(k.path)), (r) => (r._tag === "Success" ? undefined : k.path))
    )
    return {
      ops,
      acted,
      outsideChanged: JSON.stringify(outsideBefore) !== JSON.stringify(outsideAfter),
      stillThere: gone.filter((p) => p !== undefined),
      keptMissing: kept.filter((p) => p !== undefined)
    }
  }).pipe(Effect.provide(MemoryHost.layer({ files })))

describe("removals with the adversary acting at every operation index", () => {
  for (const [operation, dir] of [
    ["teardownKubeletDir", data],
    ["resetCniState", net]
  ] as const) {
    for (const [name, act, renamed] of actions(dir)) {
      it.effect(`${operation}: ${name}`, () =>
        Effect.gen(function* () {
          const clean = yield* runOnce(operation, 0, undefined)
          assert.isFalse(clean.outsideChanged)
          assert.isAbove(clean.ops, 5)
          let acted = 0
          for (let at = 1; at <= clean.ops + 1; at++) {
            const r = yield* runOnce(operation, at, act, renamed)
            const where = `${operation}, "${name}" before operation ${at} of ${clean.ops}`
            if (r.acted.some((a) => a.outcome === "ok")) acted++
            assert.isFalse(r.outsideChanged, `${where}: the tree outside the root changed`)
            assert.deepStrictEqual(r.stillThere, [], `${where}: reported removed, still there`)
            assert.deepStrictEqual(r.keptMissing, [], `${where}: reported kept, not there`)
          }
          // The adversary really got in: at most indexes its move succeeded.
          assert.isAbove(acted, clean.ops / 2)
        })
      )
    }
  }
})
