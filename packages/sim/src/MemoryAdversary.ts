/**
 * Concurrent writers for the simulated host's adversary seam
 * (`MemoryHost.adversary`): what a pod's container that keeps running after the
 * node stack stopped can do between two system calls of the code under test.
 * Each action changes the host state directly, as another process would, never
 * through the journal. `at(n, action)` acts once, right before the `n`-th
 * operation (1-based) after it is installed, so a property can try every index
 * of a run; `every(action)` acts before every operation, as a tight loop in
 * another process would.
 *
 * @since 0.2.0
 */
import { Effect } from "effect"
import { Errno } from "./internal/errno.ts"
import type { HostState } from "./internal/hostState.ts"
import type { Upcoming } from "./internal/journal.ts"
import * as MemoryFileSystem from "./internal/memoryFileSystem.ts"
import { MemoryHost } from "./MemoryHost.ts"

/**
 * One thing a concurrent writer does; `undefined` when it worked, the errno code when it did not (then nothing changed).
 *
 * @category models
 * @since 0.2.0
 */
export type Action = (state: HostState, upcoming: Upcoming) => string | undefined

/**
 * Exchanges two entries (`renameat2(RENAME_EXCHANGE)`): a directory and a link to somewhere else swap names.
 *
 * @category constructors
 * @since 0.2.0
 */
export const exchange =
  (a: string, b: string): Action =>
  (state) =>
    MemoryFileSystem.foreign.exchange(state.fs, a, b, 0)

/**
 * Renames `from` to `to` (a parent moved away mid-walk).
 *
 * @category constructors
 * @since 0.2.0
 */
export const rename =
  (from: string, to: string): Action =>
  (state) =>
    MemoryFileSystem.foreign.rename(state.fs, from, to, 0)

/**
 * Bind-mounts the directory `source` at the directory `target` (a mount made after the table was read).
 *
 * @category constructors
 * @since 0.2.0
 */
export const bind =
  (source: string, target: string): Action =>
  (state) => {
    const r = MemoryFileSystem.bindMount(state.fs, source, target)
    return r instanceof Errno ? r.code : undefined
  }

/**
 * Unmounts the top mount at `target` (a mount that goes away again).
 *
 * @category constructors
 * @since 0.2.0
 */
export const unbind =
  (target: string): Action =>
  (state) =>
    MemoryFileSystem.unmount(state, target, true)?.code

/**
 * Replaces the entry at `path` by a symbolic link to `target` (the entry moved to `aside`).
 *
 * @category constructors
 * @since 0.2.0
 */
export const swapForLink =
  (path: string, aside: string, target: string): Action =>
  (state) =>
    MemoryFileSystem.foreign.rename(state.fs, path, aside, 0) ??
    MemoryFileSystem.foreign.symlink(state.fs, target, path, 0)

/**
 * Several actions in order; the first that fails stops the rest.
 *
 * @category constructors
 * @since 0.2.0
 */
export const sequence =
  (...actions: ReadonlyArray<Action>): Action =>
  (state, upcoming) => {
    for (const a of actions) {
      const r = a(state, upcoming)
      if (r !== undefined) return r
    }
    return undefined
  }

/**
 * What an installed adversary did: how many operations it saw, and when it acted.
 *
 * @since 0.2.0
 */
interface Record {
  readonly seen: number
  readonly acted: ReadonlyArray<{ readonly seq: number; readonly kind: string; readonly outcome: string }>
}

/**
 * Installs `action` to run once, right before the `n`-th operation (1-based)
 * from now; returns the record, read after the run.
 *
 * @example
 * ```ts
 * import { SafeRemove } from "@hostnode/core"
 * import { MemoryAdversary, MemoryHost } from "@hostnode/sim"
 * import { Effect } from "effect"
 *
 * // A container swaps the pod's directory for a link to /etc right before the removal's
 * // third call; a property tries every index. What got in, and what the removal did about it:
 * export const raced = (n: number) =>
 *   Effect.gen(function* () {
 *     const pods = "/var/lib/kubelet/pods"
 *     const adversary = yield* MemoryAdversary.at(n, MemoryAdversary.swapForLink(`${pods}/p1`, `${pods}/aside`, "/etc"))
 *     const report = yield* SafeRemove.remove([`${pods}/p1`])
 *     yield* adversary.remove
 *     return { report, acted: (yield* adversary.record).acted }
 *   }).pipe(
 *     Effect.provide(MemoryHost.layer({ files: { "/var/lib/kubelet/pods/p1/data": "x", "/etc/hostname": "node-1" } }))
 *   )
 * ```
 *
 * @category operations
 * @since 0.2.0
 */
export const at = Effect.fn("MemoryAdversary.at")(function* (n: number, action: Action) {
  return yield* install((count) => count === n, action)
})

/**
 * Installs `action` to run before every operation from now (its failures are recorded, not raised).
 *
 * @example
 * ```ts
 * import { MemoryAdversary } from "@hostnode/sim"
 * import { Effect } from "effect"
 *
 * // A writer that keeps exchanging two pods' directories while `program` runs, as a tight loop in
 * // another process would; removed afterwards whatever the outcome.
 * export const underExchange = <A, E, R>(program: Effect.Effect<A, E, R>) =>
 *   Effect.acquireUseRelease(
 *     MemoryAdversary.every(MemoryAdversary.exchange("/var/lib/kubelet/pods/a", "/var/lib/kubelet/pods/b")),
 *     () => program,
 *     (installed) => installed.remove
 *   )
 * ```
 *
 * @category operations
 * @since 0.2.0
 */
export const every = Effect.fn("MemoryAdversary.every")(function* (action: Action) {
  return yield* install(() => true, action)
})

const install = (when: (count: number) => boolean, action: Action) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost
    const state = host.state
    const acted: Array<{ seq: number; kind: string; outcome: string }> = []
    let seen = 0
    yield* host.adversary((upcoming) => {
      seen++
      if (!when(seen)) return
      acted.push({ seq: upcoming.seq, kind: upcoming.kind, outcome: action(state, upcoming) ?? "ok" })
    })
    return {
      record: Effect.sync((): Record => ({ seen, acted: [...acted] })),
      remove: host.adversary(undefined)
    }
  })
