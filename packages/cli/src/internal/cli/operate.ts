/**
 * Running one operation as a command: `--host-root` and `--container`
 * decoded, the dry run and progress wrapped around it, and its outcome
 * printed (text or one JSON document) and turned into the exit code.
 * Boundary: the common handling; each command's own flags and output are
 * `commands.ts`.
 */
import {
  Deadline,
  type Directory,
  type DnsResolvers,
  HostPath,
  type IsolationBackend,
  type Mounter,
  type Systemd
} from "@hostnode/core"
import { DryRun } from "@hostnode/sim"
import { Console, Duration, Effect, type FileSystem, Layer, Logger, Option, Path, Ref, Result } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import { CliExit, ExitCodes } from "../../CliExit.ts"
import { plural } from "../text.ts"
import * as InContainer from "./container.ts"
import {
  errorJson,
  errorText,
  exitCodeFor,
  type Failure,
  inputErrorLine,
  isInputError,
  TimedOut,
  toPlain
} from "./errors.ts"
import { type AllowOwnNamespace, type Container, DryRunFlag, HostRoot, Json, Timeout } from "./flags.ts"
import * as Progress from "./progress.ts"

/** What a command adds to the common handling of {@link operate}. */
interface OperateOptions<A> {
  /** The result as JSON (default: the value as plain JSON). */
  readonly toJson?: ((a: A) => unknown) | undefined
  /** How many paths the operation had to keep: more than none ends the run with exit code 3. */
  readonly kept?: ((a: A) => number) | undefined
  /** Warnings for a person (stderr) and a machine (`warnings` in the JSON document). */
  readonly warnings?: ((a: A) => ReadonlyArray<string>) | undefined
}

/**
 * What running an operation needs besides the operation's own services: the
 * host's services that the dry run reads through and the container
 * composition replaces, and the global settings it reads.
 */
type Around =
  | FileSystem.FileSystem
  | Directory.Directories
  | Mounter.Mounter
  | ChildProcessSpawner.ChildProcessSpawner
  | Systemd.Systemd
  | Effect.Services<
      typeof HostRoot | typeof Container | typeof AllowOwnNamespace | typeof Json | typeof DryRunFlag | typeof Timeout
    >

/**
 * One command's work as its handler runs it: whatever an operation of the
 * command tree needs from the host, `Path` for `--host-root`, and the global
 * settings; it fails only with the exit code, its outcome already printed.
 */
export type Work = Effect.Effect<
  void,
  CliExit,
  Around | Path.Path | DnsResolvers.DnsResolvers | IsolationBackend.IsolationBackend
>

/**
 * Runs one operation as the command `name`: runs it (under `--dry-run` on
 * the {@link DryRun} layers), then prints the outcome (text or JSON) and
 * turns a failure into its exit code (see {@link ExitCodes}).
 */
export const operate = <A, E extends Failure, R>(
  name: string,
  program: Effect.Effect<A, E, R>,
  describe: (a: A) => string,
  options: OperateOptions<A> = {}
): Effect.Effect<void, CliExit, R | Around> =>
  Effect.gen(function* () {
    const json = yield* Json
    const dryRun = yield* DryRunFlag
    const seconds = yield* Timeout
    const toJson = options.toJson ?? toPlain
    // The text log: one line per entry (Effect's default logger replaced), unless
    // `--log-format json` (observe.ts) has put its own logger in its place already.
    const current = yield* Logger.CurrentLoggers
    const lineLoggers = current.has(Logger.defaultLogger)
      ? new Set([...current].filter((l) => l !== Logger.defaultLogger).concat([Progress.lineLogger]))
      : current
    // Progress only for a person at a terminal (bin.ts provides it there), never in JSON.
    const progress = json ? Option.none() : yield* Effect.serviceOption(Progress.Progress)
    // In a container, its log lines name paths as the container sees them too (see InContainer.localLoggers).
    const shown = (
      view: InContainer.View | undefined
    ): Effect.Effect<A, E, R | Mounter.Mounter | FileSystem.FileSystem | Directory.Directories> => {
      const named = (loggers: ReadonlySet<Logger.Logger<unknown, unknown>>) =>
        view === undefined ? loggers : InContainer.localLoggers(loggers, InContainer.localPath(view))
      return Option.match(progress, {
        onNone: () => Effect.provideService(program, Logger.CurrentLoggers, named(lineLoggers)),
        onSome: (p) =>
          Effect.scoped(
            Effect.gen(function* () {
              // Log lines are held briefly and written on a cleared progress line (drawn again after them);
              // closing the scope writes the last of them, before the line is cleared and the result printed.
              const loggers = yield* Effect.provideService(
                Progress.clearingLoggers(p),
                Logger.CurrentLoggers,
                lineLoggers
              )
              return yield* program.pipe(
                Effect.provide(
                  Progress.layer(`hostnode ${name}${dryRun ? " (dry run)" : ""}`).pipe(
                    Layer.provide(Layer.succeed(Progress.Progress, p))
                  )
                ),
                Effect.provideService(Logger.CurrentLoggers, named(loggers))
              )
            })
          ).pipe(Effect.ensuring(p.clear))
      })
    }
    // With --container, the container's services replace the host's (a dry run wraps those);
    // a bad --container is the run's failure, shown and exited with like any bad input.
    const target = yield* Effect.result(Effect.andThen(rootGiven, InContainer.decode))
    const pid = target._tag === "Success" ? target.success?.pid : undefined
    // The container once pinned (its root decoded through the pin): what the output's paths are named against.
    const pinned = yield* Ref.make<InContainer.View | undefined>(undefined)
    // --timeout: the operation's deadline. Its calls end by then (abandoned `Hung`) and it reports
    // what it did; whatever else could still wait is cut off a little later, so the command always ends.
    const bounded = <A2, E2, R2>(effect: Effect.Effect<A2, E2, R2>, grace = 10) =>
      effect.pipe(
        Deadline.within(Duration.seconds(seconds)),
        Effect.timeoutOrElse({
          duration: Duration.seconds(seconds + grace),
          orElse: () => Effect.fail(new TimedOut({ seconds }))
        })
      )
    // The operation's result, and whether the container is gone, asked while its pin is still held.
    const ran = <R2>(body: (view: InContainer.View | undefined) => Effect.Effect<A, E, R2>) =>
      Effect.gen(function* () {
        if (target._tag === "Failure") return { result: Result.fail(target.failure), gone: undefined }
        if (target.success === undefined)
          return { result: yield* Effect.result(bounded(body(undefined))), gone: undefined }
        const inside = yield* Effect.result(
          bounded(
            InContainer.within(target.success, (view) =>
              Effect.gen(function* () {
                yield* Ref.set(pinned, view)
                // Once, for a person: where the command works, and how its paths are named.
                if (!json) {
                  yield* Console.error(
                    `hostnode ${name}: in container process ${view.pid} (paths as the container sees them)`
                  )
                }
                // Bounded here too, so that the question below is asked while the pin is held even when
                // the operation was cut off (a container that stalls it, then exits).
                const result = yield* Effect.result(bounded(body(view)))
                const gone = view.root.gone === undefined ? undefined : yield* view.root.gone
                return { result, gone }
              })
            ),
            // The pinning too, with a later cutoff than the operation's inside it.
            15
          )
        )
        return inside._tag === "Success" ? inside.success : { result: Result.fail(inside.failure), gone: undefined }
      })
    const outcome = dryRun
      ? yield* Effect.gen(function* () {
          const { result, gone } = yield* ran((view) =>
            shown(view).pipe(
              // In a container, the dry run reads its mounts through the pin.
              Effect.provide(view === undefined ? DryRun.layer : InContainer.dryRunLayer(view)),
              // The operation's own logs say "removed", "restarted": mark them as a dry run's.
              Effect.annotateLogs({ dryRun: true })
            )
          )
          return { result, gone, plan: yield* DryRun.steps }
        }).pipe(Effect.provide(DryRun.DryRunPlan.layer))
      : { ...(yield* ran(shown)), plan: undefined }
    const { result, gone, plan } = outcome
    const view = yield* Ref.get(pinned)
    // Every path printed is named as the container sees it (see InContainer.localPath).
    const local = view === undefined ? (text: string) => text : InContainer.localPath(view)
    const planJson = plan === undefined ? {} : { dryRun: true, plan }
    const warnings = result._tag === "Success" ? (options.warnings?.(result.success) ?? []) : []
    const kept = result._tag === "Success" ? (options.kept?.(result.success) ?? 0) : 0
    const failure = result._tag === "Failure" ? result.failure : undefined
    // A container that exited while the command ran is the outcome, whatever the operation made of it.
    const exited = pid === undefined || view === undefined ? undefined : InContainer.exitedOf(pid, gone, failure, kept)
    const shownFailure: Failure | undefined = exited ?? failure
    if (json) {
      const document =
        shownFailure === undefined && result._tag === "Success"
          ? {
              ok: kept === 0,
              command: name,
              ...(pid === undefined ? {} : { container: { pid } }),
              result: toJson(result.success) ?? null,
              ...(warnings.length === 0 ? {} : { warnings }),
              ...planJson
            }
          : {
              ok: false,
              command: name,
              ...(pid === undefined ? {} : { container: { pid } }),
              // What was done before the container exited, where the operation ran to its end.
              ...(result._tag === "Success" ? { result: toJson(result.success) ?? null } : {}),
              error: errorJson(shownFailure as Failure),
              ...planJson
            }
      // Plain JSON first (toJson may give Maps, errors), then every string named as the container sees it.
      yield* Console.log(JSON.stringify(InContainer.localJson(JSON.parse(JSON.stringify(document)), local)))
    } else {
      // A dry run that failed planned only what came before the failure: say so, and print no plan
      // at all for one refused before anything (bad input), which would read as a run that succeeded.
      if (plan !== undefined && (result._tag === "Success" || plan.length > 0)) {
        yield* Console.log(
          local(
            plan.length === 0
              ? "dry run: nothing would be changed"
              : `dry run: the plan${result._tag === "Success" ? "" : " up to the failure below"}, in order (nothing was changed):\n${plan.map((s, i) => `  ${i + 1}. ${DryRun.renderStep(s)}`).join("\n")}`
          )
        )
      }
      if (result._tag === "Success") {
        for (const w of warnings) yield* Console.error(local(`hostnode ${name}: warning: ${w}`))
        yield* Console.log(
          local(
            plan === undefined
              ? describe(result.success)
              : `what the operation would report (dry run, nothing was changed):\n${describe(result.success)}`
          )
        )
      }
      if (shownFailure !== undefined) {
        // Bad input: one line saying what and where, and what to do; nothing was changed.
        yield* Console.error(
          local(isInputError(shownFailure) ? inputErrorLine(name, shownFailure) : errorText(name, shownFailure))
        )
      }
    }
    if (shownFailure !== undefined) return yield* new CliExit({ code: exitCodeFor(shownFailure) })
    if (kept > 0) return yield* new CliExit({ code: ExitCodes.kept })
  })

/**
 * `--host-root` given empty (`--host-root "$ROOT"` with ROOT unset) is
 * refused: the library reads an empty root as the real host, which is never
 * what an empty value meant.
 */
const rootGiven = Effect.gen(function* () {
  const root = yield* HostRoot
  if (Option.isNone(root) || root.value !== "") return
  return yield* Effect.fail(
    new HostPath.HostPathError({
      reason: new HostPath.Refused({
        _tag: "InvalidPath",
        detail:
          "--host-root is empty (an unset variable?): give the directory that is the host's /, or leave the flag out for the real host"
      }),
      root: root.value
    })
  )
})

/**
 * `--host-root`, decoded for an operation that works below it: a relative
 * value is taken from the working directory (and the root used is said on
 * stderr), then `HostPath.decodeRoot` checks it is an existing directory and
 * makes it canonical. A bad root fails the command with exit code 2 before
 * anything is done.
 */
export const withRoot = <A, E, R>(name: string, body: (root: HostPath.HostRoot) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    // Left out: the real host (with --container, the container's root: `Layers.NodeRoot`).
    const given = Option.getOrElse(yield* HostRoot, () => "/")
    const absolute = given === "" || given.startsWith("/") ? given : (yield* Path.Path).resolve(given)
    if (absolute !== given) {
      yield* Console.error(`hostnode ${name}: --host-root ${JSON.stringify(given)} is taken as ${absolute}`)
    }
    // The real host is the node's: with --container, the container's root (`Layers.NodeRoot`).
    const root = yield* HostPath.decodeRoot(absolute)
    return yield* body(root)
  })

export const reportText = (what: string, r: { readonly removed: ReadonlyArray<string> }) =>
  `${what}: ${plural(r.removed.length, "path")} removed${r.removed.length === 0 ? "" : `\n${r.removed.map((p) => `  ${p}`).join("\n")}`}`

export const keptText = (
  kept: ReadonlyArray<{ readonly path: string; readonly reason: string; readonly detail: string }>
) =>
  kept.length === 0
    ? ""
    : `\nkept ${plural(kept.length, "path")} (exit code 3):\n${kept.map((k) => `  ${k.path} (${k.reason}: ${k.detail})`).join("\n")}`
