/**
 * The container composition: every service the operations of @hostnode/core
 * need, for a node stack that runs in a container (its own mount, pid and
 * network namespaces, its own systemd) whose init is a given host process.
 * It provides what `NodeHost.layer` provides, so a program runs unchanged.
 *
 * - The container is trusted for nothing it controls: its init is pinned
 *   once (a pidfd, its root and namespaces as descriptors), everything goes
 *   through those, and once it has exited every call fails with `Gone`.
 * - No program of the container's image runs: commands are this host's, run
 *   in its network namespace; systemd is reached over its D-Bus socket.
 * - What each part does: docs/design/container.md.
 *
 * @since 0.2.0
 */
import { NodeServices } from "@effect/platform-node"
import { Directory, DnsResolvers, HostCommand, HostPath, IsolationBackend, Mounter, Systemd } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import type { Failure } from "@hostnode/core/Programs"
import { Effect, Layer, Schema } from "effect"
import * as PlatformError from "effect/PlatformError"
import { ChildProcessSpawner } from "effect/process"
import { type Pinned, pin } from "./internal/container/pin.ts"
import * as ContainerSystemd from "./internal/container/systemd.ts"
import * as Dns from "./internal/dns.ts"
import * as Io from "./internal/io/client.ts"
import * as Directories from "./internal/io/directories.ts"
import { namespaceMounter } from "./internal/mounter/namespace.ts"
import * as NodeHashing from "./NodeHashing.ts"
import type * as NodeHost from "./NodeHost.ts"
import type * as NodeMounter from "./NodeMounter.ts"
import type * as NodeSystemd from "./NodeSystemd.ts"

/**
 * Why a container could not be composed, by its `_tag`:
 * - `InvalidPid`: the pid given (or resolved) is not a positive integer;
 * - `NotFound`: there is no such process (or only its zombie): the container is gone;
 * - `NoContainer`: the resolver says the slot has no container now, or could not tell;
 * - `Unreachable`: the process exists but its namespaces cannot be opened
 *   (not root, or a kernel that hides them);
 * - `OwnNamespace`: the process is in this agent's own mount namespace, so
 *   the composition would act on this host (a mistyped pid, `1` on a plain
 *   host); pass `allowOwnNamespace` where that is meant.
 *
 * @category errors
 * @since 0.2.0
 */
export class ContainerErrorReason extends Schema.Error<ContainerErrorReason>(
  "@hostnode/node/NodeContainer/ContainerErrorReason"
)({
  _tag: Schema.Literals(["InvalidPid", "NotFound", "NoContainer", "Unreachable", "OwnNamespace"]),
  /** The pid given or resolved, where it was a number (the CLI's `--container` text may not be). */
  pid: Schema.optionalKey(Schema.Number),
  /** The slot whose resolver gave the pid, for a resolver. */
  slot: Schema.optionalKey(Schema.String),
  /** What was found instead, for a person to read. */
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** Who the reason is about, as the message names it. */
const who = ({ pid, slot }: ContainerErrorReason): string =>
  pid !== undefined
    ? `container process ${pid}${slot === undefined ? "" : ` (slot ${JSON.stringify(slot)})`}`
    : slot !== undefined
      ? `the container of slot ${JSON.stringify(slot)}`
      : "the container"

/**
 * The container named could not be composed (see {@link ContainerErrorReason}):
 * nothing has been done in it.
 *
 * @category errors
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
 * @category models
 * @since 0.2.0
 */
export type Target = number | { readonly slot: string; readonly resolve: IsolationBackend.ContainerOptions["resolve"] }

/**
 * Options of {@link layer}.
 *
 * @category models
 * @since 0.2.0
 */
export interface Options {
  /**
   * Where the files the operations touch are:
   * - `"container"` (the default): the container's own, below its pinned
   *   root; the mount table that root comes with is the container's. What a
   *   container with its own image and its own state directories needs.
   * - `{ shared }`: the same-path host locations the container shares with
   *   this host (its `/var/lib/kubelet`, `/etc/cni/net.d`, ... are this host's
   *   at the same paths below `shared`, `/` for the real host): files are
   *   read, removed and snapshotted there, while the mount table is still the
   *   container's and its paths are taken as the same paths below `shared`.
   *   Unmounts still happen only in the container: its pod mounts propagate
   *   to the host's peers through the shared bind, and so does their unmount.
   */
  readonly files?: "container" | { readonly shared: string } | undefined
  /** The units whose activity means the container's node stack is up (default containerd and kubelet). */
  readonly units?: ReadonlyArray<string> | undefined
  /**
   * Compose even when the process is in this agent's own mount namespace
   * (default false: refused as `OwnNamespace`, since the operations would
   * act on this host).
   */
  readonly allowOwnNamespace?: boolean | undefined
  /** How the container's systemd is spoken to (socket, call and connect timeouts). */
  readonly systemd?: NodeSystemd.DbusOptions | undefined
  /** Options of the container's mounter (`NodeMounter.InOptions`). */
  readonly mounter?: NodeMounter.InOptions | undefined
}

/** `pid` as a positive integer, or the error naming it. */
const decodePid = (pid: number, slot?: string) =>
  Number.isSafeInteger(pid) && pid > 0
    ? Effect.succeed(pid)
    : Effect.fail(
        new ContainerError({
          reason: new ContainerErrorReason({
            _tag: "InvalidPid",
            pid,
            ...(slot === undefined ? {} : { slot }),
            detail: "a pid is a positive integer"
          })
        })
      )

/** The pid the resolver of `target` gives for its slot; none now is a `NoContainer`. */
const resolved = (target: Exclude<Target, number>) =>
  target.resolve(IsolationBackend.SlotRef.make(target.slot)).pipe(
    Effect.mapError(
      (e) =>
        new ContainerError({
          reason: new ContainerErrorReason({ _tag: "NoContainer", slot: target.slot, detail: e.message })
        })
    ),
    Effect.flatMap((pid) =>
      pid === undefined
        ? Effect.fail(
            new ContainerError({
              reason: new ContainerErrorReason({
                _tag: "NoContainer",
                slot: target.slot,
                detail: "the resolver finds no container for the slot"
              })
            })
          )
        : Effect.succeed(pid)
    )
  )

/**
 * The container's init, pinned (see the module comment): the pid decoded or
 * resolved, the process pinned, and refused when it is in this agent's own
 * mount namespace unless that is allowed.
 */
const pinTarget = (target: Target, options: Options | undefined) =>
  Effect.gen(function* () {
    const slot = typeof target === "number" ? undefined : target.slot
    const given = typeof target === "number" ? target : yield* resolved(target)
    const pid = yield* decodePid(given, slot)
    const facts = { pid, ...(slot === undefined ? {} : { slot }) }
    const pinned = yield* pin(pid, slot).pipe(
      Effect.mapError(
        (f) =>
          new ContainerError({
            reason: new ContainerErrorReason({
              _tag: f._tag === "NotFound" ? "NotFound" : "Unreachable",
              ...facts,
              detail: f.detail
            })
          })
      )
    )
    if (pinned.ownNamespace && options?.allowOwnNamespace !== true) {
      return yield* new ContainerError({
        reason: new ContainerErrorReason({
          _tag: "OwnNamespace",
          ...facts,
          detail:
            "the process is in this agent's own mount namespace: the operations would act on this host (pass allowOwnNamespace if that is meant)"
        })
      })
    }
    return pinned
  })

/** The helper's refusal of every call once the pinned process is gone. */
const guardOf = (pinned: Pinned) => (): Failure | undefined => {
  const gone = pinned.gone()
  return gone === undefined ? undefined : { _tag: "Failure", reason: "Gone", errno: "ESRCH", detail: gone.detail }
}

/** The node root of `files` for the pinned container. */
const nodeRoot = (pinned: Pinned, files: NonNullable<Options["files"]>): Layers.RootInput => {
  const gone = Effect.sync(() => pinned.gone())
  return files === "container"
    ? {
        path: pinned.rootPath,
        mountInfo: pinned.mountInfo,
        tableRoot: pinned.rootPath,
        identity: pinned.identity,
        gone
      }
    : { path: files.shared, mountInfo: pinned.mountInfo, tableRoot: files.shared, gone }
}

/**
 * This host's programs, run in the pinned network namespace only: a spawner
 * that prefixes every command with `nsenter --net=<the pinned descriptor>`,
 * and refuses (before spawning) once the container is gone.
 */
const commandsIn = (pinned: Pinned) =>
  Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.map(ChildProcessSpawner.ChildProcessSpawner, (wrapped) =>
      ChildProcessSpawner.make((command) => {
        const gone = pinned.gone()
        return gone === undefined
          ? wrapped.spawn(command)
          : Effect.fail(
              PlatformError.systemError({
                _tag: "NotFound",
                module: "ChildProcess",
                method: "spawn",
                description: gone.detail
              })
            )
      })
    )
  ).pipe(Layer.provide(HostCommand.layerWrapped(["nsenter", `--net=${pinned.path(pinned.fds.net)}`, "--"])))

/**
 * The container composition (see the module comment) for the container
 * whose init is `target`: a pid, or a slot and its resolver. Building it
 * pins the target first: a pid that is not one, a process that is gone,
 * whose namespaces cannot be opened, or that is in this agent's own mount
 * namespace (unless allowed) is a {@link ContainerError}, and nothing has
 * been done. The pins and the helper processes live as long as the layer.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Paths, Unmount } from "@hostnode/core"
 * import { NodeContainer } from "@hostnode/node"
 * import { Effect } from "effect"
 *
 * // Detach the pod volumes a stopped kubelet left, in the container whose init is host process 4242.
 * const program = Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir]).pipe(
 *   Effect.provide(NodeContainer.layer(4242)),
 *   // No such process any more: nothing was done.
 *   Effect.catchReason("ContainerError", "NotFound", (reason) => Effect.logError(reason.message))
 * )
 * export const main = () => NodeRuntime.runMain(program)
 * ```
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = (target: Target, options?: Options): Layer.Layer<NodeHost.Services, ContainerError> =>
  Layer.unwrap(
    Effect.gen(function* () {
      const pinned = yield* pinTarget(target, options)
      const client = yield* Effect.acquireRelease(
        Io.make({ name: pinned.name, guard: guardOf(pinned) }),
        (c) => c.shutdown
      )
      const directories = Directories.build(client)
      const mounter = yield* namespaceMounter(pinned, options?.mounter)
      // Lazy: nothing is connected to until the first call, so this cannot fail.
      const systemd = yield* ContainerSystemd.make(pinned, directories, client, {
        ...options?.systemd,
        lazy: true
      }).pipe(Effect.orDie)
      // The backend asks again for every slot: this container while it lives;
      // another slot's through a pin of its own, made for the question.
      const backendClient = yield* Effect.acquireRelease(Io.make({ name: "the isolation backend" }), (c) => c.shutdown)
      // A resolver that still answers the pid of this container once it is gone
      // names whatever has that pid now: that slot has no container.
      const resolve: IsolationBackend.ContainerOptions["resolve"] =
        typeof target === "number"
          ? () => Effect.sync(() => (pinned.gone() === undefined ? pinned.pid : undefined))
          : (slot) =>
              Effect.map(target.resolve(slot), (pid) =>
                pid === pinned.pid && pinned.gone() !== undefined ? undefined : pid
              )
      const systemdOf = (pid: number) =>
        pid === pinned.pid && pinned.gone() === undefined
          ? Effect.succeed(systemd)
          : Effect.gen(function* () {
              const other = yield* pin(pid).pipe(
                Effect.mapError(
                  (f) =>
                    new Systemd.SystemdError({
                      verb: "is-active",
                      reason:
                        f._tag === "NotFound"
                          ? new HostPath.Gone({ pid, detail: `container process ${pid}: ${f.detail}` })
                          : new Systemd.Failure({
                              _tag: "NotBooted",
                              exitCode: 1,
                              stderr: `container process ${pid}: ${f.detail}`
                            })
                    })
                )
              )
              return yield* ContainerSystemd.make(other, Directories.build(backendClient), backendClient, {
                ...options?.systemd,
                lazy: true
              })
            })
      const services = Layer.mergeAll(
        Layer.succeed(Mounter.Mounter, mounter),
        Layer.succeed(Directory.Directories, directories),
        Layer.succeed(Systemd.Systemd, systemd),
        Layer.succeed(DnsResolvers.DnsResolvers, Dns.makeInNamespace({ net: pinned.fds.net, gone: pinned.gone })),
        NodeHashing.layer,
        IsolationBackend.layerContainer({ resolve, units: options?.units, systemdOf }),
        Layer.succeed(Layers.NodeRoot, nodeRoot(pinned, options?.files ?? "container"))
      ).pipe(Layer.provideMerge(NodeServices.layer))
      // Last, so the wrapped spawner is the one the program sees.
      return Layer.merge(services, commandsIn(pinned).pipe(Layer.provide(NodeServices.layer)))
    })
  )
