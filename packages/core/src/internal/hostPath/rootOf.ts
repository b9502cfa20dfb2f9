/**
 * The host root of an operation's options, decoded. Re-exported by
 * `@hostnode/core/Layers`.
 *
 * @since 0.4.0
 */
import { Effect, type FileSystem } from "effect"
import type { HostRoot, RootOptions } from "../../HostPath.ts"
import type { HostPathError } from "../../HostPathError.ts"
import { rootFrom } from "./rootFrom.ts"

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
