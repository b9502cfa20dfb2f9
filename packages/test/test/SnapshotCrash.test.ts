/**
 * Crash properties of `Snapshot` on the simulated host: the simulated process
 * is stopped after its Nth file-system operation (the operations after it
 * never happen), for every N from 1 until the operation completes, and a new
 * process then runs `Snapshot.recover`. Whatever N was, the recorded paths are
 * exactly as taken (or, for an upgrade that had already committed, exactly as
 * the upgrade left them) and no snapshot, temporary or half-discarded copy is
 * left behind.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Directory, HostPath, Snapshot, Systemd } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import * as SnapshotFixtures from "@hostnode/test/internal/snapshot/fixtures"
import * as SnapshotTrees from "@hostnode/test/internal/snapshot/trees"
import { Cause, Effect, Exit, FileSystem, Schema } from "effect"

const { build, mutate, treeOf, pick, inSnapshot, assertRolledBack, SnapshotPaths, Trees, Mutations } = SnapshotTrees

const root = "/box/root"
const snaps = "/box/snaps"
const dir = `${snaps}/s`

/** Runs `program` on a fresh simulated host holding `specs`; the host is what the test then inspects. */
const onFreshHost = <A, E>(
  program: Effect.Effect<A, E, FileSystem.FileSystem | Directory.Directories | MemoryHost.MemoryHost | Systemd.Systemd>
) =>
  program.pipe(
    Effect.provideService(Systemd.Systemd, SnapshotFixtures.noSystemd),
    Effect.provide(MemoryHost.layer({ files: { [snaps]: { directory: true } } }))
  )

/**
 * Arms the crash, runs `effect`, and says whether the simulated process
 * crashed in it. `crashed` is false when the effect completed: its last
 * operation may be the Nth, which still runs. Any other failure fails the test.
 */
const crashing = <A, E, R>(n: number, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    yield* host.crashAfter(n)
    const exit = yield* Effect.exit(effect)
    const crashed = Exit.isFailure(exit)
    if (crashed) {
      assert.isTrue(yield* host.crashed, `failed without a crash: ${String(exit)}`)
      const defects = exit.cause.reasons.filter(Cause.isDieReason).map((r) => r.defect)
      assert.isTrue(defects.some(MemoryHost.isCrash), `died of the crash, not of ${String(defects[0])}`)
    }
    // A new process on the same host: the countdown is disarmed either way.
    yield* host.restart
    return { crashed, exit }
  })

/** Nothing beside the snapshot: no snapshot, staging or half-discarded copy, and no lock file (a crash leaves none). */
const assertNothingLeft = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  assert.deepStrictEqual(yield* fs.readDirectory(snaps), [])
})

/** Runs `trial(n)` for n = 1, 2, ... until it reports that the operation completed without a crash. */
const everyCrashPoint = <E, R>(trial: (n: number) => Effect.Effect<boolean, E, R>) =>
  Effect.gen(function* () {
    for (let n = 1; ; n++) {
      if (yield* trial(n)) return n
      assert.isBelow(n, 5000, "the operation never completes")
    }
  })

const opts = (runs: number) => ({ timeout: 300_000, arbitrary: { runs } })

describe("Snapshot crash safety on the simulated host", () => {
  it.effect.prop(
    "a restore crashed after any operation, then recover in a new process, gives the original tree",
    [Trees(8), Mutations(6)],
    ([specs, mutations]) =>
      everyCrashPoint((n) =>
        onFreshHost(
          Effect.gen(function* () {
            yield* build(root, specs)
            const original = yield* treeOf(root, "/cfg")
            const snapshot = yield* Snapshot.takeOf({
              dir,
              hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
              paths: SnapshotPaths
            })
            yield* mutate(root, mutations)
            const mutated = yield* treeOf(root, "/cfg")
            const { crashed } = yield* crashing(n, snapshot.restore)
            // True unless the restore got as far as consuming the snapshot.
            yield* Snapshot.recover({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
            yield* assertRolledBack(root, original, mutated, { requireChange: false })
            yield* assertNothingLeft
            return !crashed
          })
        )
      ),
    opts(40)
  )

  it.effect.prop(
    "a recover crashed after any operation (its restore or its discard), then recover again, gives the original tree",
    [Trees(8), Mutations(6)],
    ([specs, mutations]) =>
      everyCrashPoint((n) =>
        onFreshHost(
          Effect.gen(function* () {
            yield* build(root, specs)
            const original = yield* treeOf(root, "/cfg")
            yield* Snapshot.takeOf({
              dir,
              hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
              paths: SnapshotPaths
            })
            yield* mutate(root, mutations)
            const mutated = yield* treeOf(root, "/cfg")
            const { crashed } = yield* crashing(
              n,
              Snapshot.recover({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
            )
            yield* Snapshot.recover({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
            yield* assertRolledBack(root, original, mutated, { requireChange: false })
            yield* assertNothingLeft
            return !crashed
          })
        )
      ),
    opts(25)
  )

  it.effect.prop(
    "a take crashed after any operation leaves every path as it was, and recover removes the temporary copy",
    [Trees(8)],
    ([specs]) =>
      everyCrashPoint((n) =>
        onFreshHost(
          Effect.gen(function* () {
            yield* build(root, specs)
            const before = yield* treeOf("/", "/box")
            const { crashed } = yield* crashing(
              n,
              Snapshot.takeOf({
                dir,
                hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
                paths: SnapshotPaths
              })
            )
            // Committed or not, recover leaves the tree as it was and nothing behind, not even a lock file.
            yield* Snapshot.recover({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
            const after = yield* treeOf("/", "/box")
            assert.deepStrictEqual(after, before)
            return !crashed
          })
        )
      ),
    opts(25)
  )

  it.effect.prop(
    "an upgrade in Snapshot.scoped crashed at any point: recover gives the original, or the committed upgrade",
    [Trees(8), Mutations(6), Schema.Boolean],
    ([specs, mutations, succeeds]) =>
      everyCrashPoint((n) =>
        onFreshHost(
          Effect.gen(function* () {
            yield* build(root, specs)
            const original = yield* treeOf(root, "/cfg")
            const upgrade = Effect.scoped(
              Effect.gen(function* () {
                yield* Snapshot.scoped({
                  dir,
                  hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
                  paths: SnapshotPaths
                })
                yield* mutate(root, mutations)
                if (!succeeds) return yield* Effect.fail("upgrade failed" as const)
              })
            )
            const upgraded = yield* upgradedTree(specs, mutations)
            const { crashed } = yield* crashing(
              n,
              Effect.catch(upgrade, () => Effect.void)
            )
            yield* Snapshot.recover({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) })
            const now = pick(yield* treeOf(root, "/cfg"), inSnapshot)
            const committed = succeeds && (yield* committedBefore(n, specs, mutations))
            assert.deepStrictEqual(now, committed ? pick(upgraded, inSnapshot) : pick(original, inSnapshot))
            yield* assertNothingLeft
            return !crashed
          })
        )
      ),
    opts(20)
  )
})

/** The tree `mutations` make of `specs`, computed on a separate simulated host. */
const upgradedTree = (specs: SnapshotTrees.NodeSpec[], mutations: SnapshotTrees.MutationSpec[]) =>
  Effect.gen(function* () {
    yield* build(root, specs)
    yield* mutate(root, mutations)
    return yield* treeOf(root, "/cfg")
  }).pipe(Effect.provide(MemoryHost.layer()))

/**
 * Whether a successful upgrade crashed after `n` operations had already
 * committed: the rename of the snapshot aside in its discard had happened.
 * Decided by replaying the same upgrade on a separate host and looking at the
 * operation log, so the test does not assume where the commit point lies.
 */
const committedBefore = (n: number, specs: SnapshotTrees.NodeSpec[], mutations: SnapshotTrees.MutationSpec[]) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    yield* build(root, specs)
    yield* host.clearOperations
    yield* Effect.scoped(
      Effect.gen(function* () {
        yield* Snapshot.scoped({
          dir,
          hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie),
          paths: SnapshotPaths
        })
        yield* mutate(root, mutations)
      })
    )
    const ops = yield* host.operations
    const first = ops[0]?.seq ?? 0
    const commit = ops.find((o) => o.kind === "Directory.renameat2" && o.paths[0] === dir && o.outcome === "ok")
    assert.isDefined(commit, "the discard renames the snapshot aside")
    return commit !== undefined && commit.seq - first + 1 <= n
  }).pipe(
    Effect.provideService(Systemd.Systemd, SnapshotFixtures.noSystemd),
    Effect.provide(MemoryHost.layer({ files: { [snaps]: { directory: true } } }))
  )
