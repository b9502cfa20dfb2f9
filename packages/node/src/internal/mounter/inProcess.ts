/**
 * The `Mounter` of `NodeMounter.layer`: the targets of one call sent to the
 * helper process that holds the root handle, which verifies each below it
 * (`Programs.verifyMount`) and detaches it through what it verified (see
 * `internal/io/mounts.ts`). The helper reports each target as it goes, so a
 * call that hangs leaves the outcomes of the targets before it; the target
 * it hung on is `Hung`, the ones after it are not reached (`Unverified`,
 * `Moved`: the operation reads the table again and decides).
 *
 * Internal: `NodeMounter` builds the layer; the guarantees are said in its module comment.
 *
 * @since 0.3.0
 */
import { type Directory, FileName, Mounter } from "@hostnode/core"
import type * as Programs from "@hostnode/core/Programs"
import { Lexical } from "@hostnode/core/Programs"
import { Effect } from "effect"
import type * as Io from "../io/client.ts"
import { ioHandleOf } from "../io/client.ts"
import { eachOutcome, encodeTargets, type Outcome, type Outcomes } from "../io/mounts.ts"

/** An outcome of the helper as the `Mounter`'s result for `target`. */
export const resultOf = (target: Programs.Target, o: Outcome): Programs.UnmountResult => {
  switch (o._tag) {
    case "Unmounted":
      return { _tag: "Unmounted", target: target.path }
    case "Failed":
      return {
        _tag: "Failed",
        target: target.path,
        failure: { target: target.path, errno: o.errno, message: o.message }
      }
    case "Unverified":
      return { _tag: "Unverified", target: target.path, reason: o.reason, detail: o.detail }
    case "Hung":
      return { _tag: "Hung", target: target.path, call: o.call, seconds: o.seconds, detail: o.detail }
  }
}

/**
 * Sends the targets `sent` (indices into `targets`; `pathOf` gives each one's
 * path below the root, as bytes) to the helper of `root` in one call, and
 * sets the result of each in `results` as the helper reports it (progress
 * first, so a call that hangs leaves the outcomes before it). False when the
 * call failed as a whole (the helper abandoned): the first target without an
 * outcome is where it hung, and gets the failure.
 */
export const unmountThrough = (
  client: Io.Client,
  root: Directory.Handle,
  targets: ReadonlyArray<Programs.Target>,
  sent: ReadonlyArray<number>,
  pathOf: (t: Programs.Target) => Uint8Array,
  lazy: boolean,
  label: string,
  results: Array<Programs.UnmountResult | undefined>
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    const wire = encodeTargets(
      sent.map((i) => {
        const t = targets[i] as Programs.Target
        return { path: pathOf(t), mountId: t.mountId }
      })
    )
    const record = (o: Outcomes) =>
      eachOutcome(o, (k, outcome) => {
        const i = sent[k] as number
        results[i] = resultOf(targets[i] as Programs.Target, outcome)
      })
    const r = yield* Effect.result(
      client.request("unmount", [root], ([fd]) => [fd, wire, lazy], {
        call: "umount2",
        path: label,
        program: true,
        onProgress: (p) => record(p as Outcomes)
      })
    )
    if (r._tag === "Success") {
      record(r.success.value as Outcomes)
      return true
    }
    const f = r.failure
    const hungAt = sent.find((i) => results[i] === undefined)
    if (hungAt !== undefined) {
      const t = targets[hungAt] as Programs.Target
      results[hungAt] =
        f.reason === "Hung"
          ? { _tag: "Hung", target: t.path, call: f.call ?? "umount2", seconds: f.seconds ?? 0, detail: f.detail }
          : { _tag: "Failed", target: t.path, failure: { target: t.path, errno: f.errno ?? "EIO", message: f.detail } }
    }
    return false
  })

/** The results of `targets`, each one without a result not reached (an earlier call did not return). */
export const settled = (
  targets: ReadonlyArray<Programs.Target>,
  results: ReadonlyArray<Programs.UnmountResult | undefined>
): Array<Programs.UnmountResult> =>
  results.map(
    (r, i): Programs.UnmountResult =>
      r ?? {
        _tag: "Unverified",
        target: (targets[i] as Programs.Target).path,
        reason: "Moved",
        detail: "not reached: an earlier call did not return"
      }
  )

/**
 * `Mounter.holders` through `client` (a helper of its own: procfs is read
 * there, the agent and its helpers left out).
 */
export const holdersWith =
  (client: Io.Client): NonNullable<Mounter.Mounter["holders"]> =>
  (mounts) =>
    client
      .request("holders", [], () => [mounts, [process.pid]], { call: "open", path: "/proc" })
      .pipe(
        Effect.map((a) => new Map(a.value as ReadonlyArray<readonly [number, ReadonlyArray<Mounter.Holder>]>)),
        Effect.orElseSucceed(() => new Map<number, ReadonlyArray<Mounter.Holder>>())
      )

/** The in-process `Mounter` (see the module comment), with `holders` through `client`. */
export const inProcessMounter = (client: Io.Client): Mounter.Mounter =>
  Mounter.Mounter.of({
    holders: holdersWith(client),
    unmount: (root, targets, options) =>
      Effect.gen(function* () {
        const io = ioHandleOf(root)
        if (io === undefined) {
          return yield* Effect.die(new Error("NodeMounter: the root handle is not a NodeDirectory handle"))
        }
        const results: Array<Programs.UnmountResult | undefined> = targets.map(() => undefined)
        const below = new Map<Programs.Target, Uint8Array>()
        const sent: Array<number> = []
        for (const [i, t] of targets.entries()) {
          const rel = Lexical.below(root.path, t.path)
          if (rel === undefined) {
            results[i] = {
              _tag: "Unverified",
              target: t.path,
              reason: "OutsideRoot",
              detail: `not below the host root ${root.path}`
            }
          } else {
            below.set(t, FileName.encode(rel))
            sent.push(i)
          }
        }
        if (sent.length > 0) {
          yield* unmountThrough(
            io.client,
            root,
            targets,
            sent,
            (t) => below.get(t) as Uint8Array,
            options.lazy,
            root.path,
            results
          )
        }
        return settled(targets, results)
      })
  })
