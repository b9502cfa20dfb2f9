/**
 * The container composition: every service the operations of @hostnode/core
 * need, for a node stack that runs in a container (its own mount, pid and
 * network namespaces, its own systemd) whose init is a given host process.
 * It provides what `NodeHost.layer` provides, so a program written against
 * the host runs unchanged against the container:
 *
 * - Commands (`systemctl`, `ip`, `iptables`, and any the program spawns
 *   itself) run inside the container's mount, pid and network namespaces:
 *   the spawner in context is this host's wrapped with
 *   `nsenter -t <pid> -m -p -n --`.
 * - Unmounts happen in the container's mount namespace and are decided from
 *   its own table, `/proc/<pid>/mountinfo`, never this process's:
 *   `NodeMounter.layerIn` verifies each mount here through a handle on the
 *   container's root and detaches it through that very descriptor from a
 *   helper entered into the namespace (see there for what it guarantees).
 * - Files are the container's: the real host of every operation (no
 *   `hostRoot`, `""` or `"/"`) is `HostPath.NodeRoot`, the container's root
 *   as this process sees it, `/proc/<pid>/root`, with its table. Or, where
 *   the container shares the node's state with the host at the same paths
 *   (a kubelet directory bound in from the host, `/etc/cni/net.d` a host
 *   path), `files: { shared }` makes those host locations the files while
 *   the mounts stay the container's: an explicit choice of the layer.
 * - systemd is the container's (D-Bus through its sockets below
 *   `/proc/<pid>/root`, or `systemctl` inside it), DNS queries leave from the
 *   container's network namespace, and `IsolationBackend` is the container
 *   mode's: a slot is up when its container is alive and its units active.
 *
 * Boundary: composition and the decoding of the target. What each part does
 * and guarantees is said where it is made.
 *
 * @since 0.2.0
 */
import { NodeServices } from "@effect/platform-node"
import { HostCommand, HostPath, IsolationBackend } from "@hostnode/core"
import { Effect, FileSystem, Layer, Schema } from "effect"
import * as NodeDirectory from "./NodeDirectory.ts"
import * as NodeDns from "./NodeDns.ts"
import * as NodeHashing from "./NodeHashing.ts"
import type * as NodeHost from "./NodeHost.ts"
import * as NodeMounter from "./NodeMounter.ts"
import * as NodeSystemd from "./NodeSystemd.ts"

/**
 * Why a container could not be composed: the pid given (or resolved) is not a
 * positive integer.
 *
 * @since 0.3.0
 */
export class InvalidPid extends Schema.TaggedError<InvalidPid>()("InvalidPid", {
  /** The number given, where it was one (the CLI's `--container` text may not be). */
  pid: Schema.optionalKey(Schema.Number),
  /** The slot whose resolver gave it, for a resolver. */
  slot: Schema.optionalKey(Schema.String),
  /** What was given instead, for a person to read. */
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why a container could not be composed: there is no such process (or only
 * its zombie): the container is gone.
 *
 * @since 0.3.0
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  pid: Schema.Number,
  /** The slot whose resolver gave the pid, for a resolver. */
  slot: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why a container could not be composed: the resolver says the slot has no
 * container now, or could not tell.
 *
 * @since 0.3.0
 */
export class NoContainer extends Schema.TaggedError<NoContainer>()("NoContainer", {
  slot: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why a container could not be composed: the process exists but its
 * namespaces cannot be opened (not root, or a kernel that hides them).
 *
 * @since 0.3.0
 */
export class Unreachable extends Schema.TaggedError<Unreachable>()("Unreachable", {
  pid: Schema.Number,
  /** The slot whose resolver gave the pid, for a resolver. */
  slot: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * Why a container could not be composed: each reason names the pid and the
 * slot where it has them, and what was found instead.
 *
 * @since 0.2.0
 */
export const ContainerErrorReason = Schema.Union([InvalidPid, NotFound, NoContainer, Unreachable])

/**
 * Why a container could not be composed.
 *
 * @since 0.2.0
 */
export type ContainerErrorReason = typeof ContainerErrorReason.Type

/** Who the reason is about, as the message names it. */
const who = (reason: ContainerErrorReason): string => {
  const pid = "pid" in reason ? reason.pid : undefined
  const slot = "slot" in reason ? reason.slot : undefined
  return pid !== undefined
    ? `container process ${pid}${slot === undefined ? "" : ` (slot ${JSON.stringify(slot)})`}`
    : slot !== undefined
      ? `the container of slot ${JSON.stringify(slot)}`
      : "the container"
}

/**
 * The container named could not be composed (see {@link ContainerErrorReason}):
 * nothing has been done in it.
 *
 * @since 0.2.0
 */
export class ContainerError extends Schema.TaggedError<ContainerError>()("ContainerError", {
  reason: ContainerErrorReason
}) {
  override get message(): string {
    return `${who(this.reason)}: ${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * Which container: the host pid of its init, or a slot and the resolver that
 * finds the slot's container (asked when the layer is built, and again by
 * `IsolationBackend.running` for every slot it is asked about).
 *
 * @since 0.2.0
 */
export type Target = number | { readonly slot: string; readonly resolve: IsolationBackend.ContainerResolver }

/**
 * Where the files the operations touch are:
 * - `"container"` (the default): the container's own, below its root as
 *   this process sees it (`/proc/<pid>/root`); the mount table that root
 *   comes with is the container's. What a container with its own image and
 *   its own state directories needs.
 * - `{ shared }`: the same-path host locations the container shares with
 *   this host (its `/var/lib/kubelet`, `/etc/cni/net.d`, ... are this host's
 *   at the same paths below `shared`, `/` for the real host): files are
 *   read, removed and snapshotted there, while the mount table is still the
 *   container's and its paths are taken as the same paths below `shared`.
 *   Unmounts still happen only in the container: its pod mounts propagate
 *   to the host's peers through the shared bind, and so does their unmount.
 *
 * @since 0.2.0
 */
export type Files = "container" | { readonly shared: string }

/**
 * Options of {@link layer}.
 *
 * @since 0.2.0
 */
export interface Options {
  /** Where the operations' files are (default `"container"`; see {@link Files}). */
  readonly files?: Files | undefined
  /** The units whose activity means the container's node stack is up (default containerd and kubelet). */
  readonly units?: ReadonlyArray<string> | undefined
  /** The namespaces commands run in (default mount, pid and network: `-m -p -n`). */
  readonly namespaces?: ReadonlyArray<"m" | "p" | "n" | "u" | "i"> | undefined
}

/**
 * Everything {@link layer} provides: what `NodeHost.layer` provides.
 *
 * @since 0.2.0
 */
export type Services = NodeHost.Services

/** `pid` as a positive integer, or the error naming it. */
const decodePid = (pid: number, slot?: string) =>
  Number.isSafeInteger(pid) && pid > 0
    ? Effect.succeed(pid)
    : Effect.fail(
        new ContainerError({
          reason: new InvalidPid({
            pid,
            ...(slot === undefined ? {} : { slot }),
            detail: "a pid is a positive integer"
          })
        })
      )

/** The pid the resolver of `target` gives for its slot; none now is a `NoContainer`. */
const resolved = (target: Exclude<Target, number>) =>
  target.resolve(IsolationBackend.SlotRef.make(target.slot)).pipe(
    Effect.mapError((e) => new ContainerError({ reason: new NoContainer({ slot: target.slot, detail: e.message }) })),
    Effect.flatMap((pid) =>
      pid === undefined
        ? Effect.fail(
            new ContainerError({
              reason: new NoContainer({ slot: target.slot, detail: "the resolver finds no container for the slot" })
            })
          )
        : Effect.succeed(pid)
    )
  )

/**
 * The container's init, checked: alive (not a zombie) and its mount
 * namespace open to this process. Returns the pid and the start time that
 * names that very process.
 */
const inspect = (target: Target) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const slot = typeof target === "number" ? undefined : target.slot
    const given = typeof target === "number" ? target : yield* resolved(target)
    const pid = yield* decodePid(given, slot)
    const stat = yield* IsolationBackend.processStat(pid)
    const facts = { pid, ...(slot === undefined ? {} : { slot }) }
    if (stat === undefined) {
      return yield* new ContainerError({
        reason: new NotFound({ ...facts, detail: "no such process (the container is gone)" })
      })
    }
    yield* fs.readLink(`/proc/${pid}/ns/mnt`).pipe(
      Effect.mapError(
        (e) =>
          new ContainerError({
            reason: new Unreachable({
              ...facts,
              detail: `its mount namespace cannot be opened (run as root): ${e.message}`
            })
          })
      )
    )
    return stat
  })

/** The node root of `files` for the container whose init is `pid`. */
const nodeRoot = (pid: number, files: Files): HostPath.RootInput =>
  files === "container"
    ? { path: `/proc/${pid}/root` }
    : { path: files.shared, mountInfo: `/proc/${pid}/mountinfo`, tableRoot: files.shared }

/**
 * The container composition (see the module comment) for the container
 * whose init is `target`: a pid, or a slot and its resolver. Building it
 * decodes the target first (a pid that is not one, a process that is gone
 * or whose namespaces cannot be opened is a {@link ContainerError}, and
 * nothing has been done); the directory handles die where their system calls
 * cannot load, as in `NodeHost.layer`.
 *
 * @since 0.2.0
 */
export const layer = (target: Target, options?: Options): Layer.Layer<Services, ContainerError> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const stat = yield* inspect(target)
      const pid = stat.pid
      const directories = NodeDirectory.layer.pipe(Layer.orDie)
      const commands = HostCommand.layerWrapped(HostCommand.nsenterPrefix(pid, options?.namespaces ?? ["m", "p", "n"]))
      // Built with this host's spawner: the mounter enters the namespace itself.
      const mounter = NodeMounter.layerIn(pid).pipe(
        Layer.catch(() =>
          NodeMounter.layerCommand({ mountInfo: `/proc/${pid}/mountinfo` }).pipe(
            Layer.provide(HostCommand.layerNsenter(pid))
          )
        ),
        Layer.provide(directories)
      )
      // The backend asks again for every slot; a fixed pid is the container
      // as long as it is that very process (a reused pid is another one).
      const resolve: IsolationBackend.ContainerResolver =
        typeof target === "number"
          ? () =>
              Effect.map(IsolationBackend.processStat(pid), (now) =>
                now !== undefined && now.startTime === stat.startTime ? pid : undefined
              ).pipe(Effect.provide(NodeServices.layer))
          : target.resolve
      // The container's systemd is asked with systemctl through `nsenter -t <pid> -m -p` on this host's spawner.
      const backend = IsolationBackend.layerContainer({ resolve, units: options?.units })
      const services = Layer.mergeAll(
        mounter,
        directories,
        NodeSystemd.layerWithFallback({ pid }),
        NodeDns.layerIn(pid),
        NodeHashing.layer,
        backend,
        Layer.succeed(HostPath.NodeRoot, nodeRoot(pid, options?.files ?? "container"))
      ).pipe(Layer.provideMerge(NodeServices.layer))
      // Last, so the wrapped spawner is the one the program sees.
      return Layer.merge(services, commands.pipe(Layer.provide(NodeServices.layer)))
    }).pipe(Effect.provide(NodeServices.layer))
  )
