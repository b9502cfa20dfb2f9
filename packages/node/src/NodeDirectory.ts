/**
 * The real `Directory.Directories`: every operation one system call on a
 * file descriptor (`openat`, `statx`, `getdents64`, `unlinkat`, `renameat2`,
 * ...), names passed and returned as bytes, made by a helper process so that
 * no call on a host's files ever runs on the agent's event loop. Each call
 * ends by its timeout or the operation's deadline (`Deadline`); one that
 * does not return (a dead NFS server, a FUSE daemon that never answers) is
 * abandoned and fails `Hung`, naming the call, the path and the seconds
 * waited, and the next call gets a new helper.
 *
 * Which calls can leave a helper stuck in the kernel: any that reaches a
 * file system that does not answer: `open` of a directory or file on it,
 * `statx` for fresh attributes, `getdents64`, `unlinkat`, `renameat2`,
 * `fsync`, `syncfs`, reads and writes. A FUSE request the daemon has read
 * waits uninterruptibly (not even `SIGKILL` ends it) until the daemon
 * answers or dies. That is why the calls run in a process and not in a
 * thread: a stuck thread would keep the agent itself from exiting, a stuck
 * helper is killed, left behind (it ends when the kernel lets go, or with
 * the agent: `PR_SET_PDEATHSIG`) and replaced.
 *
 * What never asks a file system, and so cannot hang on one: identifying a
 * node (`statx(AT_STATX_DONT_SYNC)`, the mount id), holding it `O_PATH`,
 * refusing a child that is the root of another mount before opening it, and
 * detaching a mount (`umount2(MNT_DETACH)`). The removal walk and the
 * unmounts are built on those, so a dead volume is detached, or kept, never
 * entered.
 *
 * Directories are opened `O_DIRECTORY | O_NOFOLLOW` (through an `O_PATH`
 * descriptor that was checked first), files `O_NOFOLLOW | O_NONBLOCK` (a
 * FIFO planted at a name cannot hang an open). A name that is not one
 * component is refused before the call (`InvalidName`). `layer` resolves
 * paths with `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)` where the
 * kernel has it; `layerWalk` with core's walk from handle to handle.
 *
 * Boundary: the calls and their errors (errnos are read and classified in
 * the helper, never in core). What a path resolves to and what may be
 * removed is decided in @hostnode/core.
 *
 * @since 0.2.0
 */
import { Directory } from "@hostnode/core"
import { Effect, Layer, Schema, type Scope } from "effect"
import * as Io from "./internal/io/client.ts"
import { build } from "./internal/io/directories.ts"
import { LibcUnavailable, load } from "./internal/libc.ts"

/**
 * koffi's prebuilt binary, libc.so.6 or this architecture's system call
 * table could not be loaded; `detail` says which and why.
 *
 * @since 0.3.0
 */
export class FfiUnavailable extends Schema.TaggedError<FfiUnavailable>()("FfiUnavailable", {
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why the system-call layer could not be built (one reason so far: {@link FfiUnavailable}).
 *
 * @since 0.3.0
 */
export const DirectoryUnavailableReason = Schema.Union([FfiUnavailable])

/**
 * Why the system-call layer could not be built.
 *
 * @since 0.3.0
 */
export type DirectoryUnavailableReason = typeof DirectoryUnavailableReason.Type

/**
 * The system-call layer could not be built here (no koffi binary, no libc.so.6, an unknown architecture).
 *
 * @since 0.2.0
 */
export class DirectoryUnavailable extends Schema.TaggedError<DirectoryUnavailable>()("DirectoryUnavailable", {
  reason: DirectoryUnavailableReason
}) {
  override get message(): string {
    return `directory handles through system calls are unavailable: ${this.reason.message}`
  }
}

/**
 * Options of {@link make}.
 *
 * @since 0.2.0
 */
export interface Options {
  /** Use `openat2` for resolution where the kernel has it (default true); false walks from handle to handle. */
  readonly openat2?: boolean | undefined
}

/** Fails with {@link DirectoryUnavailable} where koffi or libc cannot load here (the helper could not work either). */
const checkFfi = Effect.suspend(() => {
  const c = load()
  return c instanceof LibcUnavailable
    ? Effect.fail(new DirectoryUnavailable({ reason: new FfiUnavailable({ detail: c.message }) }))
    : Effect.void
})

/**
 * The service over a helper process (started at the first call, ended with
 * the scope); fails to build with {@link DirectoryUnavailable}.
 *
 * @since 0.2.0
 */
export const make: (options?: Options) => Effect.Effect<Directory.Directories, DirectoryUnavailable, Scope.Scope> =
  Effect.fn("NodeDirectory.make")(function* (options?: Options) {
    yield* checkFfi
    const client = yield* Effect.acquireRelease(Io.make({ name: "this host" }), (c) => c.shutdown)
    return build(client, options)
  })

/**
 * The real `Directories`, resolving with `openat2` where the kernel has it.
 *
 * @since 0.2.0
 */
export const layer: Layer.Layer<Directory.Directories, DirectoryUnavailable> = Layer.effect(
  Directory.Directories,
  make()
)

/**
 * The real `Directories` resolving by the walk only (no `openat2`): a kernel older than 5.6, and its tests.
 *
 * @since 0.2.0
 */
export const layerWalk: Layer.Layer<Directory.Directories, DirectoryUnavailable> = Layer.effect(
  Directory.Directories,
  make({ openat2: false })
)
