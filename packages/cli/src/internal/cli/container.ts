/**
 * `--container PID` for one command: the flag decoded (with
 * `--allow-own-namespace`, and refused with `--host-root`), the command run
 * under `NodeContainer.layer` with the container's root decoded once through
 * its pin, the dry run's layers over the container's pinned mount table, the
 * one path convention of the output (paths as the container sees them), and
 * `ContainerExited`, the outcome of a container that exited while the command
 * ran. Boundary: the container's side of `operate.ts`; printing and exit codes
 * stay there and in `errors.ts`.
 */
import { HostPath } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import * as Programs from "@hostnode/core/Programs"
import { NodeContainer, type NodeHost } from "@hostnode/node"
import { DryRun } from "@hostnode/sim"
import { type Context, Effect, type Fiber, type FileSystem, Logger, Option, References, Schema } from "effect"
import { FlagWithout, goneIn, UsageError } from "./errors.ts"
import { AllowOwnNamespace, Container, HostRoot } from "./flags.ts"

/** What `--container` asked for, decoded: the pid, and whether its being in this process's mount namespace is meant. */
export interface Target {
  readonly pid: number
  readonly allowOwnNamespace: boolean
}

/** A refused `--container`: the typed error the command exits 2 with. */
const invalid = (detail: string) =>
  new NodeContainer.ContainerError({ reason: new NodeContainer.ContainerErrorReason({ _tag: "InvalidPid", detail }) })

/**
 * `--container`, decoded: `undefined` without it, else the pid (a positive
 * integer). Refused (exit 2, before anything is done): an empty value (an
 * unset variable, which would otherwise mean this host), anything but a
 * pid, any `--host-root` with it (`/` included: the container's root is its
 * own), and `--allow-own-namespace` without it (a `UsageError`).
 */
export const decode = Effect.gen(function* () {
  const given = yield* Container
  const allowOwnNamespace = yield* AllowOwnNamespace
  if (Option.isNone(given)) {
    if (!allowOwnNamespace) return undefined
    return yield* new UsageError({
      reason: new FlagWithout({ flag: "--allow-own-namespace", needs: "--container" }),
      fix: "it accepts a --container PID in this process's own mount namespace: leave it out, or give the container"
    })
  }
  const text = given.value
  if (text === "") {
    return yield* invalid(
      "--container is empty (an unset variable?): give the host pid of the container's init, or leave the flag out for this host"
    )
  }
  if (!/^[1-9][0-9]*$/.test(text) || !Number.isSafeInteger(Number(text))) {
    return yield* invalid(`--container takes the host pid of the container's init, not ${JSON.stringify(text)}`)
  }
  const root = yield* HostRoot
  if (Option.isSome(root)) {
    return yield* new HostPath.HostPathError({
      reason: new HostPath.Refused({
        _tag: "InvalidPath",
        detail: `--host-root ${JSON.stringify(root.value)} cannot be given with --container: the container's root is its own; leave --host-root out`
      }),
      root: root.value
    })
  }
  return { pid: Number(text), allowOwnNamespace } satisfies Target
})

/** The container a command works in, once pinned: its pid, and its root as decoded through the pin. */
export interface View {
  readonly pid: number
  /**
   * The node root `NodeContainer.layer` provides, decoded: its `path` names the
   * pinned root directory (`/proc/<this pid>/fd/<n>`), its `mountInfo` the
   * pinned mount table, its `gone` whether the container has exited.
   */
  readonly root: HostPath.HostRoot
}

/**
 * Runs `body` in the container `target` names: under `NodeContainer.layer`,
 * whose services replace the host's, with the {@link View} of the pinned
 * container. Fails with the layer's `ContainerError` (no such process, one in
 * this process's mount namespace unless allowed, ...) or the root's
 * `HostPathError` (`Gone`) before `body` runs; the pin is held until `body`
 * ends, so `body` may ask `view.root.gone` last.
 */
export const within = <A, E, R>(target: Target, body: (view: View) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const root = yield* Layers.rootOf()
    return yield* body({ pid: target.pid, root })
  }).pipe(
    Effect.provide(NodeContainer.layer(target.pid, { allowOwnNamespace: target.allowOwnNamespace }))
  ) as Effect.Effect<
    A,
    E | NodeContainer.ContainerError | HostPath.HostPathError,
    Exclude<R, NodeHost.Services | FileSystem.FileSystem>
  >

/**
 * The dry run's layers in the container of `view` (`DryRun.layerWith` over
 * its pinned table, which the dry run reads as it left it): mounts decided
 * from the container's own table, through the pin, never through
 * `/proc/<pid>/...` by path.
 */
export const dryRunLayer = (view: View): ReturnType<typeof DryRun.layerWith> =>
  DryRun.layerWith({ mountInfo: view.root.mountInfo, tableRoot: view.root.tableRoot })

/** `text` as a literal part of a regular expression. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * The path convention of a command's output in the container of `view`: a
 * path below its pinned root (`/proc/<this pid>/fd/<n>/var/lib/...`) is
 * named as the container sees it (`/var/lib/...`), the root itself as `/`,
 * and the pinned mount table as the container's own, `/proc/self/mountinfo`.
 * The prefix is the decoded root's path, so a path that only looks like one
 * (another descriptor, a longer number) is left as it is.
 */
export const localPath = (view: View): ((text: string) => string) => {
  const below = new RegExp(`${literal(view.root.path)}(?:/|(?![0-9]))`, "g")
  const table = view.root.mountInfo
  return (text) => text.replaceAll(table, Programs.DefaultMountInfo).replace(below, "/")
}

/** `value` (plain JSON) with every string in it, keys included, passed through `local`. */
export const localJson = (value: unknown, local: (text: string) => string): unknown => {
  if (typeof value === "string") return local(value)
  if (Array.isArray(value)) return value.map((v) => localJson(v, local))
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [local(k), localJson(v, local)]))
  }
  return value
}

/** A log message with its strings passed through `local` (other values are formatted by the logger as they are). */
const localMessage = (message: unknown, local: (text: string) => string): unknown =>
  typeof message === "string"
    ? local(message)
    : Array.isArray(message)
      ? message.map((m) => (typeof m === "string" ? local(m) : m))
      : message

/**
 * `loggers`, each given the log annotations with their paths passed through
 * `local` (the operations annotate their logs with the root they work
 * below: `hostRoot: "/proc/<this pid>/fd/<n>"` would otherwise be in every
 * line), and the message's strings too. The fiber a logger reads its
 * annotations from is seen through a view that answers that one reference
 * differently; everything else is the fiber's own.
 */
export const localLoggers = (
  loggers: ReadonlySet<Logger.Logger<unknown, unknown>>,
  local: (text: string) => string
): ReadonlySet<Logger.Logger<unknown, unknown>> => {
  const fiberOf = (fiber: Fiber.Fiber<unknown, unknown>): Fiber.Fiber<unknown, unknown> =>
    new Proxy(fiber, {
      get: (target, key) => {
        if (key === "getRef") {
          return <X>(ref: Context.Reference<X>): X => {
            const value = target.getRef(ref)
            return ref === (References.CurrentLogAnnotations as unknown) ? (localJson(value, local) as X) : value
          }
        }
        const value: unknown = Reflect.get(target, key, target)
        return typeof value === "function" ? value.bind(target) : value
      }
    })
  return new Set(
    [...loggers].map((logger) =>
      Logger.make((options) =>
        logger.log({ ...options, message: localMessage(options.message, local), fiber: fiberOf(options.fiber) })
      )
    )
  )
}

/**
 * The container exited while the command ran, after it was pinned: nothing
 * more was done in it (every later call was refused `Gone`, never acted on a
 * process that has its pid now). `reason` says which process and how;
 * `cause` is the operation's own error where it failed (it says where it
 * stopped), absent where it ran to its end but had to keep paths.
 */
export class ContainerExited extends Schema.TaggedError<ContainerExited>()("ContainerExited", {
  reason: HostPath.Gone,
  /** The operation's own failure, where there was one. */
  cause: Schema.optionalKey(Schema.Unknown)
}) {
  override get message(): string {
    const pid = this.reason.pid
    return `the container${pid === undefined ? "" : ` (process ${pid})`} exited while the command ran: nothing more was done in it`
  }
}

/**
 * Whether the command's outcome is that the container exited: the
 * container is gone now (`gone`, asked while the pin was still held) and the
 * operation failed or kept paths, or its failure carries a `Gone` reason.
 * The `ContainerExited` to report, else `undefined`.
 */
export const exitedOf = (
  pid: number,
  gone: HostPath.Gone | undefined,
  failure: { readonly _tag: string; readonly message: string } | undefined,
  kept: number
): ContainerExited | undefined => {
  const found = failure === undefined ? undefined : goneIn(failure)
  if (gone === undefined && found === undefined) return undefined
  if (failure === undefined && kept === 0) return undefined
  const reason =
    gone ??
    (found instanceof HostPath.Gone ? found : new HostPath.Gone({ pid, detail: `container process ${pid} has exited` }))
  return new ContainerExited({
    reason:
      reason.pid === undefined
        ? new HostPath.Gone({ pid, detail: reason.detail, ...(reason.slot === undefined ? {} : { slot: reason.slot }) })
        : reason,
    ...(failure === undefined ? {} : { cause: failure })
  })
}
