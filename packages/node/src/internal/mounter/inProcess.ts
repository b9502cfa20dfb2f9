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
import { Directory, FileName, Mounter } from "@hostnode/core"
import { Effect } from "effect"
import type * as Io from "../io/client.ts"
import { ioHandleOf } from "../io/client.ts"
import type { Outcome, Target } from "../io/mounts.ts"

/** An outcome of the helper as the `Mounter`'s result for `target`. */
export const resultOf = (target: Mounter.Target, o: Outcome): Mounter.UnmountResult => {
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

/** The targets of one call as the helper takes them: components below the root, the table's mount id. */
export const wireTargets = (
  targets: ReadonlyArray<Mounter.Target>,
  rel: (t: Mounter.Target) => string | undefined
): Array<Target | undefined> =>
  targets.map((t) => {
    const below = rel(t)
    return below === undefined
      ? undefined
      : { components: Directory.components(FileName.encode(below)), mountId: t.mountId }
  })

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
        const results: Array<Mounter.UnmountResult | undefined> = targets.map(() => undefined)
        const wire = wireTargets(targets, (t) => Mounter.below(root.path, t.path))
        const sent: Array<number> = []
        for (const [i, w] of wire.entries()) {
          const t = targets[i] as Mounter.Target
          if (w === undefined) {
            results[i] = {
              _tag: "Unverified",
              target: t.path,
              reason: "OutsideRoot",
              detail: `not below the host root ${root.path}`
            }
          } else sent.push(i)
        }
        if (sent.length > 0) {
          const r = yield* Effect.result(
            io.client.request("unmount", [root], ([fd]) => [fd, sent.map((i) => wire[i]), options.lazy], {
              call: "umount2",
              path: root.path,
              program: true,
              onProgress: (p) => {
                for (const [k, o] of p as ReadonlyArray<readonly [number, Outcome]>) {
                  const i = sent[k] as number
                  results[i] = resultOf(targets[i] as Mounter.Target, o)
                }
              }
            })
          )
          if (r._tag === "Success") {
            for (const [k, o] of (r.success.value as ReadonlyArray<Outcome>).entries()) {
              const i = sent[k] as number
              results[i] = resultOf(targets[i] as Mounter.Target, o)
            }
          } else {
            // The helper was abandoned: the first target without an outcome is where it hung.
            const f = r.failure
            const hungAt = sent.find((i) => results[i] === undefined)
            if (hungAt !== undefined) {
              const t = targets[hungAt] as Mounter.Target
              results[hungAt] =
                f.reason === "Hung"
                  ? {
                      _tag: "Hung",
                      target: t.path,
                      call: f.call ?? "umount2",
                      seconds: f.seconds ?? 0,
                      detail: f.detail
                    }
                  : {
                      _tag: "Failed",
                      target: t.path,
                      failure: { target: t.path, errno: f.errno ?? "EIO", message: f.detail }
                    }
            }
          }
        }
        return results.map(
          (r, i): Mounter.UnmountResult =>
            r ?? {
              _tag: "Unverified",
              target: (targets[i] as Mounter.Target).path,
              reason: "Moved",
              detail: "not reached: an earlier call did not return"
            }
        )
      })
  })
