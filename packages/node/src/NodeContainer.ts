/**
 * The container composition: every service the operations of @hostnode/core
 * need, for a node stack that runs in a container (its own mount, pid and
 * network namespaces, its own systemd) whose init is a given host process.
 * It provides what `NodeHost.layer` provides, so a program written against
 * the host runs unchanged against the container.
 *
 * The container is trusted for nothing it controls. Its init is pinned once,
 * when the layer is built: a pidfd, then its root directory and its mount,
 * network and pid namespaces opened as descriptors, then the pidfd asked
 * whether that very process still lives (only then are the descriptors
 * known to be its). Everything after goes through those descriptors, never
 * through `/proc/<pid>/...` by path, and everything first asks the pidfd:
 * once the container has exited, every call fails with the `Gone` reason
 * (`HostPath.Gone`, a reason of `HostPathError`, `DirectoryError` and
 * `SystemdError`), and a pid the kernel gives another process is never
 * acted on.
 *
 * - Files are the container's: the real host of every operation (no
 *   `hostRoot`, `""` or `"/"`) is `HostPath.NodeRoot`, the pinned root with
 *   the container's own mount table. Paths below it are resolved as the
 *   container resolves them (an absolute link starts again at its root).
 *   Or, where the container shares the node's state with the host at the
 *   same paths, `files: { shared }` makes those host locations the files
 *   while the mounts stay the container's: an explicit choice of the layer.
 * - Unmounts happen in the container's mount namespace, decided from its
 *   own table, by a helper process of ours entered into the pinned namespace
 *   and root (`NodeMounter.makeIn`): each mount verified there by its
 *   descriptor and detached through it.
 * - systemd is the container's, over D-Bus only, its socket resolved below
 *   the pinned root and connected to through the descriptor found (see
 *   `NodeSystemd.layerDbusIn`): a socket the container made a link to
 *   another machine's is never reached. Connected at the first call, so a
 *   container whose systemd has not booted yet still composes.
 * - Commands (`ip`, `iptables`, and any the program spawns itself) are this
 *   host's programs, run in the container's network namespace only
 *   (`nsenter --net` on the pinned descriptor): no program of the
 *   container's image runs with the agent's privileges.
 * - DNS queries leave from the container's network namespace, and
 *   `IsolationBackend` is the container mode's: a slot is up when its
 *   container is alive and its units active.
 *
 * A pid in the agent's own mount namespace (a mistyped pid, `1` on a plain
 * host) would make the composition act on the host: it is refused unless
 * `allowOwnNamespace` says that is meant.
 *
 * A snapshot taken through this composition records the container's
 * identity, not its pid: the slot the resolver named, or where its root
 * file system comes from (an overlay's upper directory, or a file system's
 * device and directory). A restore after the container restarted (a new
 * pid, the same root) is accepted; one in another container, or in a
 * process that reused the pid, is `HostRootMismatch`.
 *
 * Boundary: composition and the decoding of the target. What each part does
 * and guarantees is said where it is made.
 *
 * @since 0.2.0
 */
import { NodeServices } from "@effect/platform-node"
import { Directory, DnsResolvers, HostCommand, HostPath, IsolationBackend, Mounter, Systemd } from "@hostnode/core"
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
 * Why a container could not be composed: the process is in this agent's own
 * mount namespace, so the composition would act on this host (a mistyped
 * pid, `1` on a plain host). Pass `allowOwnNamespace` where that is meant.
 *
 * @since 0.4.0
 */
export class OwnNamespace extends Schema.TaggedError<OwnNamespace>()("OwnNamespace", {
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
export const ContainerErrorReason = Schema.Union([InvalidPid, NotFound, NoContainer, Unreachable, OwnNamespace])

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
  /**
   * Compose even when the process is in this agent's own mount namespace
   * (default false: refused as `OwnNamespace`, since the operations would
   * act on this host).
   */
  readonly allowOwnNamespace?: boolean | undefined
  /** How the container's systemd is spoken to (`NodeSystemd.DbusOptions`: socket, call and connect timeouts). */
  readonly systemd?: ContainerSystemd.Options | undefined
  /** Options of the container's mounter (`NodeMounter.InOptions`). */
  readonly mounter?: NodeMounter.InOptions | undefined
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
            reason:
              f._tag === "NotFound"
                ? new NotFound({ ...facts, detail: f.detail })
                : new Unreachable({ ...facts, detail: f.detail })
          })
      )
    )
    if (pinned.ownNamespace && options?.allowOwnNamespace !== true) {
      return yield* new ContainerError({
        reason: new OwnNamespace({
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
const nodeRoot = (pinned: Pinned, files: Files): HostPath.RootInput => {
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
    Effect.map(ChildProcessSpawner.ChildProcessSpawner, (inner) => {
      const wrapped = HostCommand.wrapSpawner(inner, ["nsenter", `--net=${pinned.path(pinned.fds.net)}`, "--"])
      return ChildProcessSpawner.make((command) => {
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
    })
  )

/**
 * The container composition (see the module comment) for the container
 * whose init is `target`: a pid, or a slot and its resolver. Building it
 * pins the target first: a pid that is not one, a process that is gone,
 * whose namespaces cannot be opened, or that is in this agent's own mount
 * namespace (unless allowed) is a {@link ContainerError}, and nothing has
 * been done. The pins and the helper processes live as long as the layer.
 *
 * @since 0.2.0
 */
export const layer = (target: Target, options?: Options): Layer.Layer<Services, ContainerError> =>
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
      const resolve: IsolationBackend.ContainerResolver =
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
        Layer.succeed(HostPath.NodeRoot, nodeRoot(pinned, options?.files ?? "container"))
      ).pipe(Layer.provideMerge(NodeServices.layer))
      // Last, so the wrapped spawner is the one the program sees.
      return Layer.merge(services, commandsIn(pinned).pipe(Layer.provide(NodeServices.layer)))
    })
  )
