/**
 * The real `Directory.Directories`: every operation one system call on a
 * file descriptor (`openat`, `statx`, `getdents64`, ...), made by a helper
 * process so that no call on a host's files runs on the agent's event loop.
 * - A call that does not return (a dead NFS server, a FUSE daemon) is
 *   abandoned at its timeout or the operation's `Deadline` and fails `Hung`;
 *   the next call gets a new helper (docs/design/dead-storage.md).
 * - Identifying a node, holding it `O_PATH` and detaching a mount never ask
 *   the file system, so a dead volume is detached or kept, never entered.
 * - Directories open `O_DIRECTORY | O_NOFOLLOW`, files `O_NOFOLLOW |
 *   O_NONBLOCK`; what a path resolves to is decided in @hostnode/core.
 *
 * @since 0.2.0
 */
import { Directory } from "@hostnode/core"
import { Effect, Layer, Schema, type Scope } from "effect"
import * as Io from "./internal/io/client.ts"
import { build, type Options } from "./internal/io/directories.ts"
import { LibcUnavailable, load } from "./internal/libc.ts"

/**
 * The system-call layer could not be built here: koffi's prebuilt binary,
 * libc.so.6 or this architecture's system call table could not be loaded;
 * `detail` says which and why.
 *
 * @category errors
 * @since 0.2.0
 */
export class DirectoryUnavailable extends Schema.TaggedError<DirectoryUnavailable>()("DirectoryUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return `directory handles through system calls are unavailable: ${this.detail}`
  }
}

/** Fails with {@link DirectoryUnavailable} where koffi or libc cannot load here (the helper could not work either). */
const checkFfi = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable ? Effect.fail(new DirectoryUnavailable({ detail: c.message })) : Effect.void
})

/** The service over a helper process (started at the first call, ended with the scope). */
const make: (options?: Options) => Effect.Effect<Directory.Directories, DirectoryUnavailable, Scope.Scope> = Effect.fn(
  "NodeDirectory.make"
)(function* (options?: Options) {
  yield* checkFfi
  const client = yield* Effect.acquireRelease(Io.make({ name: "this host" }), (c) => c.shutdown)
  return build(client, options)
})

/**
 * The real `Directories`, resolving with `openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS)` where the kernel has it; its helper process starts
 * at the first call and ends with the layer. Fails to build with
 * {@link DirectoryUnavailable} where koffi or libc cannot load.
 *
 * @category layers
 * @since 0.2.0
 */
export const layer: Layer.Layer<Directory.Directories, DirectoryUnavailable> = Layer.effect(
  Directory.Directories,
  make()
)

/**
 * The real `Directories` resolving by core's walk from handle to handle only
 * (no `openat2`): a kernel older than 5.6, and its tests.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerWalk: Layer.Layer<Directory.Directories, DirectoryUnavailable> = Layer.effect(
  Directory.Directories,
  make({ openat2: false })
)
