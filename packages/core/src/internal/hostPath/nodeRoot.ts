/**
 * What a host root is decoded from, the node's root in context, and the host root of an operation's options
 * decoded against it: what a composition provides and what every operation
 * that takes `HostPath.RootOptions` runs first. Re-exported by
 * `@hostnode/core/Layers`.
 *
 * @since 0.4.0
 */
import { Context, Effect, FileSystem } from "effect"
import type { HostRoot, RootOptions } from "../../HostPath.ts"
import { type Gone, type HostPathError, Refused } from "../../HostPathError.ts"
import { refusal } from "./errors.ts"
import { isRealRoot } from "./lexical.ts"
import { decode, isHostRoot } from "./root.ts"

/**
 * What `HostPath.decodeRoot` takes besides a plain path: the root and, optionally, the table that describes it.
 *
 * @since 0.2.0
 * @category models
 */
export interface RootInput {
  /** The host root: `""` or `"/"` for the real host, otherwise an absolute directory. */
  readonly path: string
  /** The mount table (default: `/proc/self/mountinfo`, or `/proc/<pid>/mountinfo` for a root below `/proc/<pid>/root`). */
  readonly mountInfo?: string | undefined
  /**
   * Where that table's `/` is in this process (default `/`, or
   * `/proc/<pid>/root` for a root below it). A root in another mount
   * namespace is resolved below this, never with `realpath`, which would
   * resolve `/proc/<pid>/root` as this process's own `/`.
   */
  readonly tableRoot?: string | undefined
  /**
   * What names the root across time (default: its canonical path). A
   * snapshot records it and a restore refuses a root with another
   * (`HostRootMismatch`). A container's composition gives something that
   * survives the container's restart and that another container cannot
   * have (its slot, or where its root file system comes from), never the
   * `/proc/<pid>/...` path, which a reused pid would match.
   */
  readonly identity?: string | undefined
  /**
   * For a root that belongs to a process that can exit: why it is gone, or
   * `undefined` while it is there (see `HostPath.HostRoot`'s `gone`). A gone root is
   * refused when decoded, with the `HostPath.Gone` reason.
   */
  readonly gone?: Effect.Effect<Gone | undefined> | undefined
}

/**
 * Where the node's real root is, when it is not this process's own `/`: the
 * root an operation works below when its options name none (or name `""` or
 * `"/"`, the Go contract's "the real host"). A composition whose node stack
 * runs in another mount namespace provides it (`NodeContainer.layer` in
 * @hostnode/node: the container's `/proc/<pid>/root` and its
 * `/proc/<pid>/mountinfo`, or the same-path host locations the container
 * shares), so a program written for the host runs unchanged against the
 * container. Unset (the default), the real root is this process's `/`.
 *
 * @since 0.2.0
 * @category services
 */
export const NodeRoot = Context.Reference<RootInput | undefined>("@hostnode/core/HostPath/NodeRoot", {
  defaultValue: () => undefined
})

/**
 * Decodes a root as `HostPath.decodeRoot` does: a decoded root as given
 * (asked again whether its process is gone, with `mountInfo` replacing its
 * table when non-empty), else the path decoded. The real host (absent, `""`
 * or `"/"`) is the {@link NodeRoot} in context where one is set, decoded and
 * marked `isReal`, and this process's `/` otherwise: a program written for
 * the host names the container's node when run in a container composition.
 */
export const rootFrom = (
  input: string | RootInput | HostRoot | undefined,
  mountInfo = ""
): Effect.Effect<HostRoot, HostPathError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    if (isHostRoot(input)) {
      // Decoded earlier: its process may have exited since.
      const gone = input.gone === undefined ? undefined : yield* input.gone
      if (gone !== undefined) return yield* refusal(gone, input.given)
      // This process's own `/`, decoded where no composition named the node's root, handed to an operation
      // that runs in one that does (a container's): that would be the agent's host, not the node asked for.
      const node = input.path === "/" && input.tableRoot === "/" ? yield* NodeRoot : undefined
      if (node !== undefined && !isRealRoot(node.path)) {
        return yield* refusal(
          new Refused({
            _tag: "OutsideTable",
            detail:
              "this process's / was decoded outside the composition that names the node's root (Layers.NodeRoot): leave hostRoot out, or decode it inside"
          }),
          input.given
        )
      }
      return mountInfo === "" ? input : { ...input, mountInfo }
    }
    const fs = yield* FileSystem.FileSystem
    const given: RootInput =
      input === undefined || typeof input === "string"
        ? { path: input ?? "", mountInfo }
        : mountInfo === ""
          ? input
          : { ...input, mountInfo }
    const node = isRealRoot(given.path) ? yield* NodeRoot : undefined
    if (node === undefined) return yield* decode(fs, given)
    const root = yield* decode(
      fs,
      given.mountInfo === undefined || given.mountInfo === "" ? node : { ...node, mountInfo: given.mountInfo }
    )
    return { ...root, isReal: true }
  })

/**
 * The host root of an operation's options, decoded as `HostPath.decodeRoot`
 * decodes one: what every operation that takes `HostPath.RootOptions` runs
 * first, for a composition of its own to run the same.
 *
 * @since 0.2.0
 * @category constructors
 */
export const rootOf: (options?: RootOptions) => Effect.Effect<HostRoot, HostPathError, FileSystem.FileSystem> =
  Effect.fn("HostPath.rootOf")(function* (options?: RootOptions) {
    return yield* rootFrom(options?.hostRoot, options?.mountInfo ?? "")
  })
