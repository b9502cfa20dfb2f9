/**
 * The `hostnode` command tree: global flags (`--host-root`, `--container`,
 * `--json`, `--dry-run`, and effect's `--log-level`) and one subcommand per operation
 * of @hostnode/core. This module only describes commands and how their
 * outcome is shown; the entry point (`bin.ts`) provides the real host's
 * layers, tests provide `MemoryNode`'s.
 *
 * Output: a person's text by default; with `--json`, exactly one JSON
 * document on stdout (`ok`, the command, its result or the typed error, and
 * the plan of a dry run). Logs always go to stderr. {@link run} fails with a
 * {@link CliExit} carrying the process exit code (see {@link ExitCodes}): 1
 * when the operation failed, 2 on bad usage or bad input (refused before
 * anything changed), 3 when the operation ran to its end but had to keep
 * paths it should have removed.
 *
 * @since 0.1.0
 */
import {
  ConfSnap,
  type Directory,
  type DnsResolvers,
  HostPath,
  IsolationBackend,
  LocalDns,
  type Mounter,
  NodeStart,
  Paths,
  Repave,
  RestartChanged,
  Snapshot,
  type Systemd,
  Unmount
} from "@hostnode/core"
import { NodeContainer } from "@hostnode/node"
import { DryRun } from "@hostnode/test"
import {
  Console,
  Data,
  Duration,
  Effect,
  type FileSystem,
  Layer,
  Logger,
  Option,
  Path,
  Redacted,
  References,
  Runtime,
  Schema
} from "effect"
import { Argument, type CliError, CliOutput, Command, Flag, GlobalFlag } from "effect/cli"
import * as Demo from "./Demo.ts"
import { plural } from "./internal/text.ts"
import * as Progress from "./Progress.ts"

/**
 * The CLI's version, printed by `hostnode --version`: the version of the
 * `@hostnode/cli` package (a test keeps the two equal).
 *
 * @since 0.1.0
 */
export const version = "0.2.0"

// ---------------------------------------------------------------------------
// global flags

/**
 * `--host-root DIR`: where the host's `/` is; the real host by default. A
 * relative DIR is taken relative to the working directory, and the absolute
 * root used is printed on stderr (the library itself refuses relative roots).
 *
 * @since 0.1.0
 */
export const HostRoot = GlobalFlag.Setting("host-root")({
  flag: Flag.String("host-root").pipe(
    Flag.withDefault("/"),
    Flag.withMetavar("DIR"),
    Flag.withDescription(
      "The directory that is the host's / (default: /, the real host; a relative DIR is taken from the working directory)"
    )
  )
})

/**
 * `--container PID`: run the operation on the node stack of the container
 * whose init is host process PID (`NodeContainer.layer`): its files (its root
 * `/proc/PID/root`), its mount table and mount namespace, its systemd, its
 * network. Not a pid, or a process that is gone: exit 2 before anything is
 * done. `--host-root` cannot be given with it: the container's root is its own.
 *
 * @since 0.2.0
 */
export const Container = GlobalFlag.Setting("container")({
  flag: Flag.String("container").pipe(
    Flag.withDefault(""),
    Flag.withMetavar("PID"),
    Flag.withDescription(
      "Work on the node stack of the container whose init is host process PID: its files, mounts, systemd and network"
    )
  )
})

/**
 * `--json`: one machine-readable JSON document on stdout, errors included.
 *
 * @since 0.1.0
 */
export const Json = GlobalFlag.Setting("json")({
  flag: Flag.Boolean("json").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print one JSON document on stdout (the result, or the error), for machines")
  )
})

/**
 * `--dry-run`: change nothing; print what would be written, removed, unmounted or run, in order.
 *
 * @since 0.1.0
 */
export const DryRunFlag = GlobalFlag.Setting("dry-run")({
  flag: Flag.Boolean("dry-run").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "Change nothing: read the host, and print every write, removal, unmount and command as the plan, in order"
    )
  )
})

// ---------------------------------------------------------------------------
// exit codes and rendering

/**
 * The process exit codes of `hostnode`:
 * - 0: the operation did everything it was asked;
 * - 1: it failed (the typed error says where it stopped and what state it left);
 * - 2: bad usage or bad input (an unknown flag, a relative or missing
 *   `--host-root`, an empty prefix, an invalid unit name or listener
 *   address): refused before anything was changed;
 * - 3: it ran to its end but kept paths it was to remove (a mount inside, a
 *   path that changed meanwhile); the output lists each with its reason.
 *
 * @since 0.2.0
 */
export const ExitCodes = { ok: 0, failed: 1, badInput: 2, kept: 3 } as const

/**
 * One of {@link ExitCodes}, other than success.
 *
 * @since 0.2.0
 */
export type FailureCode = 1 | 2 | 3

/**
 * How a run ends when it does not succeed: the process exit code (see
 * {@link ExitCodes}). What went wrong was already printed, so the runtime
 * does not report it again.
 *
 * @since 0.1.0
 */
export class CliExit extends Data.TaggedError("CliExit")<{ readonly code: FailureCode }> {
  override get [Runtime.errorExitCode](): number {
    return this.code
  }
  /**
   * Already reported: the command printed its outcome before exiting with the code.
   *
   * @since 0.2.0
   */
  override readonly [Runtime.errorReported] = false
}

/**
 * Why: a group such as `snapshot` was given without its subcommand.
 *
 * @since 0.3.0
 */
export class MissingSubcommand extends Schema.TaggedError<MissingSubcommand>()("MissingSubcommand", {
  /** The group, as typed. */
  group: Schema.String,
  /** The subcommands it takes. */
  subcommands: Schema.Array(Schema.String)
}) {
  /**
   * Which subcommands the group takes.
   *
   * @since 0.3.0
   */
  override get message(): string {
    return `missing subcommand: ${this.subcommands.slice(0, -1).join(", ")} or ${this.subcommands.at(-1)}`
  }
}

/**
 * Why: a slot this node does not have (the node has one node root).
 *
 * @since 0.3.0
 */
export class UnknownSlot extends Schema.TaggedError<UnknownSlot>()("UnknownSlot", {
  /** The slot given. */
  slot: Schema.String,
  /** The slot the node has. */
  known: Schema.String
}) {
  /**
   * The slot given, and the one there is.
   *
   * @since 0.3.0
   */
  override get message(): string {
    return `unknown slot ${JSON.stringify(this.slot)}: this node has one node root, slot "${this.known}"`
  }
}

/**
 * Why a command refused its usage.
 *
 * @since 0.3.0
 */
export const UsageErrorReason = Schema.Union([MissingSubcommand, UnknownSlot])

/**
 * Why a command refused its usage.
 *
 * @since 0.3.0
 */
export type UsageErrorReason = typeof UsageErrorReason.Type

/**
 * Bad usage found by the command itself rather than by the parser (a group
 * such as `snapshot` without its subcommand, a slot this node does not have):
 * exit 2, nothing was done. `reason` says what was wrong; `fix` says what to
 * do instead.
 *
 * @since 0.2.0
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  reason: UsageErrorReason,
  fix: Schema.String
}) {
  /**
   * What was wrong, and where.
   *
   * @since 0.2.0
   */
  override get message(): string {
    return this.reason.message
  }
}

/**
 * The tag of `error`'s reason: `reason._tag` for an error whose reason is a
 * tagged class (the 0.3.0 shape), or a reason that is still a plain string.
 */
const reasonTag = (error: Failure): string | undefined => {
  const reason = (error as { readonly reason?: unknown }).reason
  if (typeof reason === "string") return reason
  if (typeof reason === "object" && reason !== null && "_tag" in reason && typeof reason._tag === "string") {
    return reason._tag
  }
  return undefined
}

/** The keys the tables below are read with, most specific first: `Tag/Reason`, then `Tag`. */
const keysOf = (error: Failure): ReadonlyArray<string> => {
  const reason = reasonTag(error)
  return reason === undefined ? [error._tag] : [`${error._tag}/${reason}`, error._tag]
}

/** The entry of `table` for `error`: its reason's if there is one, else its tag's. */
const lookup = <A>(table: Readonly<Record<string, A>>, error: Failure): A | undefined => {
  for (const key of keysOf(error)) if (Object.hasOwn(table, key)) return table[key]
  return undefined
}

/** A field of `error`'s reason, else of the error itself (the reshape moved facts into the reasons). */
const fieldOf = (error: Failure, name: string): unknown => {
  const reason = (error as { readonly reason?: unknown }).reason
  if (typeof reason === "object" && reason !== null && name in reason) return (reason as Record<string, unknown>)[name]
  return (error as unknown as Record<string, unknown>)[name]
}

/**
 * What to check, by `Tag/Reason` or by tag (see {@link keysOf}): the advice
 * printed under a failure. A snapshot error's advice is by its reason: what
 * went wrong differs too much for one sentence.
 */
const hints: Readonly<Record<string, string>> = {
  UnmountError:
    "Check what keeps each mount busy (`fuser -vm MOUNTPOINT`, `lsof +f -- MOUNTPOINT`) and whether a process holds a file open there; then run again.",
  MountInfoError: "Check that the mount table (/proc/self/mountinfo) is readable by this process.",
  SnapshotError:
    "Check the snapshot directory and the path named above; a snapshot that failed a restore is kept, so `hostnode snapshot recover --dir DIR` can try again.",
  ResetError:
    "Each kept path names why it was kept (a mount inside, not a directory, refused); fix that and run the reset again to finish it.",
  HostPathError:
    "Check --host-root (an existing directory; relative paths are taken from the working directory) and the paths given: absolute, not empty, not / unless meant (--allow-root).",
  SystemdError: "Check the unit with `systemctl status UNIT` and `journalctl -u UNIT`.",
  UnitNameError:
    "Check the unit name: systemd unit names are ASCII letters, digits and :-_.\\@ and end in a type suffix such as `.service`.",
  RestartError:
    "The units listed as restarted run the new configuration, the rest the old one; check the failed unit with `systemctl status UNIT` and `journalctl -u UNIT`.",
  LocalDnsError:
    "Check `ip -j addr show` and `iptables -t raw -S`, and that this process may change links and rules (CAP_NET_ADMIN).",
  "LocalDnsError/InvalidListener":
    "Give listener addresses as canonical dotted quads in 169.254.0.0/16 (no leading zeros), the two different.",
  "LocalDnsError/SameAddress":
    "Give listener addresses as canonical dotted quads in 169.254.0.0/16 (no leading zeros), the two different.",
  "LocalDnsError/Timeout": "Check that the LocalDNS resolver runs and listens on the addresses above.",
  IsolationError: "Check that systemd answers: `systemctl is-active containerd.service kubelet.service`.",
  ContainerError:
    "Give --container the host pid of the container's init (e.g. `docker inspect -f '{{.State.Pid}}' NAME`), as root, while it runs.",
  "SnapshotError/Missing":
    "There is no snapshot in that directory: check --dir (the directory `hostnode snapshot take --dir DIR` was given); a snapshot that was restored or discarded is gone.",
  "SnapshotError/Exists":
    "A snapshot is already in --dir (an earlier run did not finish): `hostnode snapshot recover --dir DIR` restores it, `hostnode snapshot discard --dir DIR` drops it; or take the new one in another directory.",
  "SnapshotError/InvalidManifest":
    "The directory is not a snapshot `hostnode snapshot take` wrote, or it is damaged: check --dir; a damaged snapshot cannot be restored, `hostnode snapshot discard --dir DIR` removes it.",
  "SnapshotError/UnsupportedVersion": "The snapshot was written by a newer hostnode: restore it with that version.",
  "SnapshotError/Corrupt":
    "The snapshot's data does not match its manifest (damaged, or not written by a take): it cannot be restored; `hostnode snapshot discard --dir DIR` removes it.",
  "SnapshotError/NotASnapshot":
    "--dir names something that is not a snapshot (a file, or a directory of other files): to take one, give a directory that does not exist yet (the take makes it); to restore, recover or discard, the directory `hostnode snapshot take --dir DIR` wrote.",
  "SnapshotError/Busy":
    "Another process works on this snapshot (its pid is above where known): wait for it, or raise --lock-timeout.",
  "SnapshotError/Unsafe":
    "The snapshot directory or its files are not as a take makes them (a link, another owner, writable by others): check who wrote them before using it."
}

/** A value as plain JSON: Maps become objects, Errors their name and message, effects and functions are dropped. */
const toPlain = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return typeof value === "function" ? undefined : value
  if (Redacted.isRedacted(value)) return "<redacted>"
  if (Array.isArray(value)) return value.map(toPlain)
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), toPlain(v)]))
  // Tagged errors are yieldable, so they are Effects too: test for Error first.
  if (!(value instanceof Error) && Effect.isEffect(value)) return undefined
  const out: Record<string, unknown> = {}
  if (value instanceof Error) {
    if ("_tag" in value) out._tag = value._tag
    out.message = value.message
  }
  for (const [k, v] of Object.entries(value)) {
    const plain = toPlain(v)
    if (plain !== undefined) out[k] = plain
  }
  return out
}

/** The advice for `error`: what to check or do next ("" when there is none). */
const hintFor = (error: Failure): string => {
  if (error instanceof UsageError) return error.fix
  return lookup(hints, error) ?? ""
}

/**
 * The typed error as JSON: its tag, message, fields and the hint.
 *
 * @since 0.1.0
 */
export const errorJson = (error: { readonly _tag: string; readonly message: string }): Record<string, unknown> => {
  const { fix: _, ...plain } = toPlain(error) as Record<string, unknown>
  return { ...plain, _tag: error._tag, message: error.message, hint: hintFor(error) }
}

/**
 * The typed error for a person: what failed (the message names the path or unit) and what to check.
 *
 * @since 0.1.0
 */
export const errorText = (command: string, error: { readonly _tag: string; readonly message: string }): string => {
  const hint = hintFor(error)
  return `hostnode ${command}: failed (${error._tag}): ${error.message}${hint === "" ? "" : `\n  what to check: ${hint}`}`
}

type Failure = { readonly _tag: string; readonly message: string }

/**
 * The errors that refuse the caller's input before anything was changed, by
 * tag (every reason) or by `Tag/Reason`.
 */
const inputErrors: ReadonlySet<string> = new Set([
  "UsageError",
  "UnitNameError",
  "LocalDnsError/InvalidListener",
  "LocalDnsError/SameAddress",
  "HostPathError/InvalidPath",
  "HostPathError/NotAbsolute",
  "HostPathError/NotFound",
  "HostPathError/NotADirectory",
  "HostPathError/IsHostRoot",
  "HostPathError/OutsideTable",
  "SnapshotError/InvalidPath",
  "SnapshotError/HostRootMismatch",
  "SnapshotError/NotASnapshot",
  "ContainerError/InvalidPid",
  "ContainerError/NotFound",
  "ContainerError/NoContainer"
])

/**
 * True when `error` refuses the caller's input before anything was changed:
 * the CLI exits 2 for it, as for bad usage.
 *
 * @since 0.2.0
 */
export const isInputError = (error: Failure): boolean => keysOf(error).some((key) => inputErrors.has(key))

/**
 * The exit code for a failed operation (see {@link ExitCodes}).
 *
 * @since 0.2.0
 */
export const exitCodeFor = (error: Failure): FailureCode =>
  isInputError(error) ? 2 : error._tag === "ResetError" ? 3 : 1

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
 * Runs one operation as the command `name`: runs it (under `--dry-run` on
 * the {@link DryRun} layers), then prints the outcome (text or JSON) and
 * turns a failure into its exit code (see {@link ExitCodes}).
 */
const operate = <A, E extends Failure, R>(
  name: string,
  program: Effect.Effect<A, E, R>,
  describe: (a: A) => string,
  options: OperateOptions<A> = {}
) =>
  Effect.gen(function* () {
    const json = yield* Json
    const dryRun = yield* DryRunFlag
    const toJson = options.toJson ?? toPlain
    // Progress only for a person at a terminal (bin.ts provides it there), never in JSON.
    const progress = json ? Option.none() : yield* Effect.serviceOption(Progress.Progress)
    const shown: Effect.Effect<A, E, R | Mounter.Mounter | FileSystem.FileSystem | Directory.Directories> =
      Option.match(progress, {
        onNone: () => program,
        onSome: (p) =>
          Effect.scoped(
            Effect.gen(function* () {
              // Log lines are held briefly and written on a cleared progress line (drawn again after them);
              // closing the scope writes the last of them, before the line is cleared and the result printed.
              const loggers = yield* Progress.clearingLoggers(p)
              return yield* program.pipe(
                Effect.provide(
                  Progress.layer(`hostnode ${name}${dryRun ? " (dry run)" : ""}`).pipe(
                    Layer.provide(Layer.succeed(Progress.Progress, p))
                  )
                ),
                Effect.provideService(Logger.CurrentLoggers, loggers)
              )
            })
          ).pipe(Effect.ensuring(p.clear))
      })
    // With --container, the container's services replace the host's (a dry run wraps those);
    // a bad --container is the run's failure, shown and exited with like any bad input.
    const container = yield* Effect.result(Effect.andThen(rootGiven, containerOf))
    const pid = container._tag === "Success" ? container.success : undefined
    const inContainer = NodeContainer.layer(pid ?? 0)
    const table = pid === undefined ? {} : { mountInfo: `/proc/${pid}/mountinfo`, tableRoot: `/proc/${pid}/root` }
    const dryShown = shown.pipe(Effect.provide(DryRun.layerWith(table)), Effect.annotateLogs({ dryRun: true }))
    const where = <A2, E2, R2>(
      effect: Effect.Effect<A2, E2, R2>
    ): Effect.Effect<A2, E2 | NodeContainer.ContainerError | HostPath.HostPathError, R2> => {
      if (container._tag === "Failure") return Effect.fail(container.failure)
      if (pid === undefined) return effect
      // The container's services are provided over the host's; what they do not provide stays required.
      return Effect.provide(effect, inContainer) as Effect.Effect<A2, E2 | NodeContainer.ContainerError, R2>
    }
    const outcome = dryRun
      ? yield* Effect.gen(function* () {
          // The operation's own logs say "removed", "restarted": mark them as a dry run's.
          const result = yield* Effect.result(where(dryShown))
          return { result, plan: yield* DryRun.steps }
        }).pipe(Effect.provide(DryRun.DryRunPlan.layer))
      : { result: yield* Effect.result(where(shown)), plan: undefined }
    const { result, plan } = outcome
    const planJson = plan === undefined ? {} : { dryRun: true, plan }
    const warnings = result._tag === "Success" ? (options.warnings?.(result.success) ?? []) : []
    const kept = result._tag === "Success" ? (options.kept?.(result.success) ?? 0) : 0
    if (json) {
      yield* Console.log(
        JSON.stringify(
          result._tag === "Success"
            ? {
                ok: kept === 0,
                command: name,
                result: toJson(result.success) ?? null,
                ...(warnings.length === 0 ? {} : { warnings }),
                ...planJson
              }
            : { ok: false, command: name, error: errorJson(result.failure), ...planJson }
        )
      )
    } else {
      // A dry run that failed planned only what came before the failure: say so, and print no plan
      // at all for one refused before anything (bad input), which would read as a run that succeeded.
      if (plan !== undefined && (result._tag === "Success" || plan.length > 0)) {
        yield* Console.log(
          plan.length === 0
            ? "dry run: nothing would be changed"
            : `dry run: the plan${result._tag === "Success" ? "" : " up to the failure below"}, in order (nothing was changed):\n${plan.map((s, i) => `  ${i + 1}. ${DryRun.renderStep(s)}`).join("\n")}`
        )
      }
      if (result._tag === "Success") {
        for (const w of warnings) yield* Console.error(`hostnode ${name}: warning: ${w}`)
        yield* Console.log(
          plan === undefined
            ? describe(result.success)
            : `what the operation would report (dry run, nothing was changed):\n${describe(result.success)}`
        )
      } else if (isInputError(result.failure)) {
        // Bad input: one line saying what and where, and what to do; nothing was changed.
        yield* Console.error(inputErrorLine(name, result.failure))
      } else yield* Console.error(errorText(name, result.failure))
    }
    if (result._tag === "Failure") return yield* new CliExit({ code: exitCodeFor(result.failure) })
    if (kept > 0) return yield* new CliExit({ code: ExitCodes.kept })
  })

/**
 * The flag a person types for the library option a refusal names, by
 * `Tag/Reason`: the library's own advice (its message from "; pass " on,
 * which names the option) is replaced by this.
 */
const flagAdvice: Readonly<Record<string, string>> = {
  "HostPathError/IsHostRoot": "pass --allow-root to mean every mount below the host root",
  "SnapshotError/HostRootMismatch": "pass --allow-root-mismatch if that is the same tree under another name"
}

/** `error`'s message, with the flag to pass where the library names its option (see {@link flagAdvice}). */
const asFlags = (error: Failure): string => {
  const advice = lookup(flagAdvice, error)
  if (advice === undefined) return error.message
  const cut = error.message.indexOf("; pass ")
  return `${cut === -1 ? error.message : error.message.slice(0, cut)}; ${advice}`
}

/**
 * Whether a `HostPathError` refuses the host root itself (`--host-root`) rather
 * than a path below it: such an error has no path (before 0.3.0: the path "/").
 */
const refusesRoot = (error: Failure): boolean => {
  const path = fieldOf(error, "path")
  return path === undefined || path === "/"
}

/** A path refused as not absolute: what a host path looks like ("" for the empty --host-root, which says it). */
const absolutePathFix = (error: Failure): string =>
  refusesRoot(error) ? "" : "give absolute host paths, as seen from the host's /, e.g. /var/lib/kubelet"

/** A --host-root that is not an existing directory. */
const rootFix = (error: Failure): string =>
  refusesRoot(error) ? "give --host-root an existing directory, or leave it out for the real host" : ""

/** A unit name without a type suffix (or with nothing before it): the `.service` it probably meant. */
const unitFix = (error: Failure): string => {
  const unit = fieldOf(error, "unit")
  if (typeof unit !== "string") return ""
  return /^[A-Za-z0-9:_.\\@-]+$/.test(unit)
    ? `did you mean ${unit}.service?`
    : "a unit name is ASCII letters, digits and :-_.\\@ with a type suffix such as .service"
}

/** What to do about a refused input where the message does not say it, by `Tag/Reason` or by tag. */
const inputFixes: Readonly<Record<string, (error: Failure) => string>> = {
  "UnitNameError/NoTypeSuffix": unitFix,
  "UnitNameError/NothingBeforeSuffix": unitFix,
  "HostPathError/NotAbsolute": absolutePathFix,
  "HostPathError/InvalidPath": absolutePathFix,
  "HostPathError/NotFound": rootFix,
  "HostPathError/NotADirectory": rootFix
}

/** What to do about a refused input, where the message itself does not say it. */
const inputFix = (error: Failure): string => {
  if (error instanceof UsageError) return error.fix
  return lookup(inputFixes, error)?.(error) ?? ""
}

/**
 * The one line a refused input prints on stderr: the command, what was
 * wrong and where, and what to do when the message does not already say it.
 *
 * @since 0.2.0
 */
export const inputErrorLine = (command: string, error: { readonly _tag: string; readonly message: string }): string => {
  const fix = inputFix(error)
  return `hostnode ${command}: ${asFlags(error)}${fix === "" ? "" : ` (${fix})`}`
}

/**
 * `--host-root` given empty (`--host-root "$ROOT"` with ROOT unset) is
 * refused: the library reads an empty root as the real host, which is never
 * what an empty value meant.
 */
const rootGiven = Effect.gen(function* () {
  const root = yield* HostRoot
  if (root !== "") return
  return yield* Effect.fail(
    new HostPath.HostPathError({
      reason: new HostPath.InvalidPath({
        detail:
          "--host-root is empty (an unset variable?): give the directory that is the host's /, or leave the flag out for the real host"
      }),
      root
    })
  )
})

/**
 * `--container`, decoded: `undefined` without it, else the pid (a positive
 * integer; anything else is a `ContainerError` the command exits 2 with).
 * `--host-root` given with it is refused the same way.
 */
const containerOf = Effect.gen(function* () {
  const given = yield* Container
  if (given === "") return undefined
  if (!/^[1-9][0-9]*$/.test(given)) {
    return yield* Effect.fail(
      new NodeContainer.ContainerError({
        reason: new NodeContainer.InvalidPid({
          detail: `--container takes the host pid of the container's init, not ${JSON.stringify(given)}`
        })
      })
    )
  }
  const root = yield* HostRoot
  if (root !== "/") {
    return yield* Effect.fail(
      new HostPath.HostPathError({
        reason: new HostPath.InvalidPath({
          detail: "--host-root cannot be given with --container: the container's root is its own"
        }),
        root
      })
    )
  }
  return Number(given)
})

/**
 * `--host-root`, decoded for an operation that works below it: a relative
 * value is taken from the working directory (and the root used is said on
 * stderr), then `HostPath.decodeRoot` checks it is an existing directory and
 * makes it canonical. A bad root fails the command with exit code 2 before
 * anything is done.
 */
const withRoot = <A, E, R>(name: string, body: (root: HostPath.HostRoot) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const given = yield* HostRoot
    const absolute = given === "" || given.startsWith("/") ? given : (yield* Path.Path).resolve(given)
    if (absolute !== given) {
      yield* Console.error(`hostnode ${name}: --host-root ${JSON.stringify(given)} is taken as ${absolute}`)
    }
    // The real host is the node's: with --container, the container's root (`HostPath.NodeRoot`).
    const root = yield* HostPath.rootOf({ hostRoot: absolute })
    return yield* body(root)
  })

const reportText = (what: string, r: { readonly removed: ReadonlyArray<string> }) =>
  `${what}: ${plural(r.removed.length, "path")} removed${r.removed.length === 0 ? "" : `\n${r.removed.map((p) => `  ${p}`).join("\n")}`}`

const keptText = (kept: ReadonlyArray<{ readonly path: string; readonly reason: string; readonly detail: string }>) =>
  kept.length === 0
    ? ""
    : `\nkept ${plural(kept.length, "path")} (exit code 3):\n${kept.map((k) => `  ${k.path} (${k.reason}: ${k.detail})`).join("\n")}`

// ---------------------------------------------------------------------------
// subcommands

/** A prefix as given, and what it resolved to when that differs. */
const prefixText = (p: HostPath.Resolved) => (p.path === HostPath.clean(p.given) ? p.path : `${p.given} (-> ${p.path})`)

const unmountBelow = Command.make(
  "unmount-below",
  {
    strict: Flag.Boolean("strict").pipe(
      Flag.withDefault(false),
      Flag.withDescription("Leave a mount whose mount point is a prefix itself; unmount only what is below")
    ),
    allowRoot: Flag.Boolean("allow-root").pipe(
      Flag.withDefault(false),
      Flag.withDescription("Allow a prefix that is / or the host root itself (every mount below --host-root)")
    ),
    prefixes: Argument.String("PREFIX").pipe(
      Argument.atLeast(1),
      Argument.withDescription(
        "Host paths below --host-root to unmount at or below: absolute, not empty; a symbolic link is followed inside the root"
      )
    )
  },
  ({ strict, allowRoot, prefixes }) =>
    operate(
      "unmount-below",
      withRoot("unmount-below", (root) =>
        (strict ? Unmount.unmountStrictlyBelow : Unmount.unmountBelow)(prefixes, { hostRoot: root, allowRoot }).pipe(
          Effect.map((r) => ({
            hostRoot: root.path,
            strict,
            prefixes: r.prefixes.map((p) => ({ prefix: p.given, resolved: p.path, mountTable: p.table })),
            unmounted: r.unmounted,
            text: r.prefixes.map(prefixText).join(", ")
          }))
        )
      ),
      (r) =>
        `unmounted ${plural(r.unmounted.length, "mount")} ${strict ? "strictly below" : "at or below"} ${r.text}; nothing is mounted there any more${
          r.unmounted.length === 0 ? "" : `\n${r.unmounted.map((m) => `  ${m.mountPoint} (${m.fsType})`).join("\n")}`
        }`,
      { toJson: ({ text: _, ...rest }) => rest }
    )
).pipe(Command.withDescription("Lazily unmount every mount at (or, with --strict, strictly) below the prefixes"))

const snapshotFlags = {
  dir: Flag.String("dir").pipe(
    Flag.withMetavar("DIR"),
    Flag.withDescription("Required: the snapshot directory (a real path, not below --host-root)")
  ),
  lockTimeout: Flag.Int("lock-timeout").pipe(
    Flag.withDefault(60),
    Flag.withMetavar("SECONDS"),
    Flag.filter(
      (n) => n >= 0,
      (n) => `zero or a positive whole number of seconds, not ${n}`
    ),
    Flag.withDescription(
      "How long to wait for another process working on this snapshot (an agent's recover) before failing Busy (default: 60)"
    )
  )
}

const restoreFlags = {
  ...snapshotFlags,
  allowRootMismatch: Flag.Boolean("allow-root-mismatch").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "Restore below --host-root although the snapshot was taken below another root (the same tree under another name)"
    )
  )
}

const handleJson = (s: Snapshot.Snapshot) => ({ dir: s.dir, hostRoot: s.hostRoot, paths: s.paths, absent: s.absent })

const snapshotTake = Command.make(
  "take",
  {
    ...snapshotFlags,
    paths: Flag.String("path").pipe(
      Flag.atLeast(0),
      Flag.withMetavar("P"),
      Flag.withDescription("A host path to record (repeatable; default: the node's shared configuration)")
    )
  },
  ({ dir, paths, lockTimeout }) =>
    operate(
      "snapshot take",
      withRoot("snapshot take", (hostRoot) =>
        Snapshot.takeOf({
          dir,
          hostRoot,
          paths: paths.length === 0 ? ConfSnap.DefaultPaths : paths,
          lockTimeout: Duration.seconds(lockTimeout)
        }).pipe(Effect.map(handleJson))
      ),
      (s) =>
        `snapshot taken in ${s.dir} of ${plural(s.paths.length, "path")} below ${s.hostRoot}:\n${s.paths.map((p) => `  ${p}${s.absent.includes(p) ? " (absent)" : ""}`).join("\n")}`,
      {
        warnings: (s) =>
          s.absent.length === s.paths.length
            ? [
                `every recorded path is absent below ${s.hostRoot}: is --host-root the node's root? A restore there would only remove them`
              ]
            : []
      }
    )
).pipe(Command.withDescription("Record the paths below the host root into a new snapshot directory"))

const snapshotRestore = Command.make("restore", restoreFlags, ({ dir, allowRootMismatch, lockTimeout }) =>
  operate(
    "snapshot restore",
    withRoot("snapshot restore", (hostRoot) =>
      Effect.gen(function* () {
        const s = yield* Snapshot.open({
          dir,
          hostRoot,
          allowHostRootMismatch: allowRootMismatch,
          lockTimeout: Duration.seconds(lockTimeout)
        })
        yield* s.restore
        return handleJson(s)
      })
    ),
    (s) =>
      `restored ${plural(s.paths.length, "path")} below ${s.hostRoot} from ${s.dir}, and removed the snapshot (a later recover will not apply it again)`
  )
).pipe(
  Command.withDescription(
    "Put the recorded paths back as recorded, then remove the snapshot; a failed restore keeps it for another try"
  )
)

const snapshotRecover = Command.make("recover", restoreFlags, ({ dir, allowRootMismatch, lockTimeout }) =>
  operate(
    "snapshot recover",
    withRoot("snapshot recover", (hostRoot) =>
      Snapshot.recover({
        dir,
        hostRoot,
        allowHostRootMismatch: allowRootMismatch,
        lockTimeout: Duration.seconds(lockTimeout)
      }).pipe(Effect.map((recovered) => ({ dir, hostRoot: hostRoot.path, recovered })))
    ),
    (r) =>
      r.recovered
        ? `restored below ${r.hostRoot} and removed the snapshot in ${r.dir}`
        : `no snapshot in ${r.dir}; nothing to do`
  )
).pipe(Command.withDescription("Restore a snapshot an earlier process left, then remove it"))

const snapshotDiscard = Command.make("discard", snapshotFlags, ({ dir, lockTimeout }) =>
  operate(
    "snapshot discard",
    withRoot("snapshot discard", (hostRoot) =>
      // A discard restores nothing: the root it was taken below does not matter, and a damaged snapshot goes too;
      // what is not a snapshot is refused by Snapshot.discard itself (NotASnapshot), on the directory's handle.
      Snapshot.discard({ dir, hostRoot, lockTimeout: Duration.seconds(lockTimeout) }).pipe(
        Effect.map((removed) => ({ dir, removed }))
      )
    ),
    (r) => (r.removed ? `removed the snapshot in ${r.dir}` : `no snapshot in ${r.dir}; nothing to do`)
  )
).pipe(Command.withDescription("Remove a snapshot without restoring it (a damaged one too); none there is success"))

/**
 * The handler of a group run without its subcommand (`hostnode snapshot`):
 * bad usage, exit 2, with the subcommands it takes.
 */
const missingSubcommand = (group: string, names: ReadonlyArray<string>) => () =>
  Effect.gen(function* () {
    const error = new UsageError({
      reason: new MissingSubcommand({ group, subcommands: names }),
      fix: `see \`hostnode ${group} --help\``
    })
    yield* (yield* Json)
      ? Console.log(JSON.stringify({ ok: false, command: group, error: errorJson(error) }))
      : Console.error(inputErrorLine(group, error))
    return yield* new CliExit({ code: ExitCodes.badInput })
  })

const snapshot = Command.make(
  "snapshot",
  {},
  missingSubcommand("snapshot", ["take", "restore", "recover", "discard"])
).pipe(
  Command.withDescription("Take, restore, recover or discard a snapshot of the node's configuration"),
  Command.withSubcommands([snapshotTake, snapshotRestore, snapshotRecover, snapshotDiscard])
)

const resetCni = Command.make("reset-cni", {}, () =>
  operate(
    "reset-cni",
    withRoot("reset-cni", (hostRoot) => Repave.resetCniState({ hostRoot })),
    (r) => reportText("CNI state reset", r)
  )
).pipe(Command.withDescription(`Remove the CNI configuration (${Paths.CniConfDir}/*) and state (${Paths.CniStateDir})`))

const resetKubeletIdentity = Command.make(
  "reset-kubelet-identity",
  {
    auth: Flag.Literals("auth", ["bootstrap-token", "kubeconfig", "exec-credential"]).pipe(
      Flag.withMetavar("MODE"),
      Flag.withDescription("Required: how the kubelet authenticates; only bootstrap-token removes anything")
    ),
    bootstrapKubeconfig: Flag.String("bootstrap-kubeconfig").pipe(
      Flag.withDefault(NodeStart.DefaultBootstrapKubeconfig),
      Flag.withMetavar("FILE"),
      // The file kept is compared as a host path: a relative one would match nothing and keep nothing.
      Flag.filter(
        (file) => file.startsWith("/"),
        (file) => `an absolute host path (as seen from the host's /), not ${JSON.stringify(file)}`
      ),
      Flag.withDescription(
        `The bootstrap kubeconfig (kept) in bootstrap-token mode (default: ${NodeStart.DefaultBootstrapKubeconfig})`
      )
    )
  },
  ({ auth, bootstrapKubeconfig }) => {
    // The reset reads only the mode's tag and the bootstrap kubeconfig's path;
    // no token or credential command is needed (or read).
    const mode: NodeStart.AuthMode =
      auth === "bootstrap-token"
        ? { _tag: "BootstrapToken", token: Redacted.make(""), bootstrapKubeconfig }
        : auth === "kubeconfig"
          ? { _tag: "Kubeconfig", path: Repave.KubeletKubeconfig }
          : {
              _tag: "ExecCredential",
              command: "unused",
              args: [],
              apiVersion: "client.authentication.k8s.io/v1",
              env: {}
            }
    return operate(
      "reset-kubelet-identity",
      withRoot("reset-kubelet-identity", (hostRoot) => Repave.resetKubeletIdentity({ auth: mode }, { hostRoot })),
      (r) => reportText("kubelet identity reset", r)
    )
  }
).pipe(Command.withDescription("Remove the kubelet's rotated client credentials (bootstrap-token mode only)"))

const teardownKubeletDir = Command.make("teardown-kubelet-dir", {}, () =>
  operate(
    "teardown-kubelet-dir",
    withRoot("teardown-kubelet-dir", (hostRoot) => Repave.teardownKubeletDir({ hostRoot })),
    (r) => `${reportText("pod directories torn down", r)}${keptText(r.kept)}`,
    { kept: (r) => r.kept.length }
  )
).pipe(Command.withDescription(`Unmount and remove each pod's directory below ${Repave.KubeletPodsDir}`))

/**
 * `UNIT[=changed]`: `changed` is true, yes, 1 or changed (the default), or false, no, 0 or unchanged.
 *
 * @since 0.1.0
 */
export const parseChangedUnit = (word: string): RestartChanged.ChangedUnit | undefined => {
  const eq = word.indexOf("=")
  if (eq < 0) return word === "" ? undefined : { unit: word, changed: true }
  const unit = word.slice(0, eq)
  const value = word.slice(eq + 1).toLowerCase()
  if (unit === "") return undefined
  if (["true", "yes", "1", "changed"].includes(value)) return { unit, changed: true }
  if (["false", "no", "0", "unchanged"].includes(value)) return { unit, changed: false }
  return undefined
}

const restartChanged = Command.make(
  "restart-changed",
  {
    wasRunning: Flag.Boolean("was-running").pipe(
      Flag.withDefault(false),
      Flag.withDescription("The node was running before the configuration was written (otherwise nothing restarts)")
    ),
    units: Argument.String("UNIT[=changed]").pipe(
      Argument.filterMap(
        (w) => Option.fromNullishOr(parseChangedUnit(w)),
        () => "UNIT, or UNIT=true|false (also yes|no, 1|0, changed|unchanged)"
      ),
      Argument.atLeast(1),
      Argument.withDescription("Units in restart order; UNIT=false marks one whose configuration did not change")
    )
  },
  ({ wasRunning, units }) =>
    operate(
      "restart-changed",
      RestartChanged.restartChanged({ wasRunning, units }).pipe(
        Effect.as({
          wasRunning,
          restarted: wasRunning ? units.filter((u) => u.changed).map((u) => u.unit) : []
        })
      ),
      (r) =>
        !r.wasRunning
          ? "the node was not running (no --was-running): nothing restarted; pass --was-running to restart the changed units"
          : r.restarted.length === 0
            ? "no unit's configuration changed: nothing restarted"
            : `restarted, in order: ${r.restarted.join(", ")}`
    )
).pipe(Command.withDescription("Restart, in order, the units whose configuration changed"))

const listenerFlags = {
  nodeListener: Flag.String("node-listener").pipe(
    Flag.withDefault(NodeStart.NodeListener),
    Flag.withMetavar("ADDRESS"),
    Flag.withDescription(
      `The node LocalDNS listener address, a dotted quad in 169.254.0.0/16 (default: ${NodeStart.NodeListener})`
    )
  ),
  clusterListener: Flag.String("cluster-listener").pipe(
    Flag.withDefault(NodeStart.ClusterListener),
    Flag.withMetavar("ADDRESS"),
    Flag.withDescription(
      `The cluster LocalDNS listener address, a dotted quad in 169.254.0.0/16 (default: ${NodeStart.ClusterListener})`
    )
  )
}

/**
 * The node start the LocalDNS steps take, from the listener flags: they read
 * only its listeners (and decode them before any command runs: a bad address
 * exits 2), so its name, API server and authentication are placeholders.
 */
const localDnsNodeStart = (nodeListener: string, clusterListener: string): NodeStart.NodeStart => ({
  nodeName: "hostnode-cli",
  apiServer: "https://hostnode-cli.invalid",
  auth: { _tag: "Kubeconfig", path: Repave.KubeletKubeconfig },
  localDns: { nodeListener, clusterListener }
})

const localDnsSetup = Command.make(
  "setup",
  {
    ...listenerFlags,
    kind: Flag.Literals("kind", ["dummy", "bridge"]).pipe(
      Flag.withDefault("dummy" as const),
      Flag.withMetavar("KIND"),
      Flag.withDescription("The link kind of the LocalDNS interface: dummy or bridge (default: dummy)")
    )
  },
  ({ nodeListener, clusterListener, kind }) =>
    operate(
      "localdns setup",
      LocalDns.setupLocalDnsNetwork(localDnsNodeStart(nodeListener, clusterListener), { interfaceKind: kind }).pipe(
        Effect.as({ listeners: [nodeListener, clusterListener], kind })
      ),
      (r) => `LocalDNS network ready: ${r.listeners.join(", ")} on a ${r.kind} interface, NOTRACK rules in place`
    )
).pipe(Command.withDescription("Create the LocalDNS interface and its NOTRACK rules"))

const localDnsCleanup = Command.make("cleanup", {}, () =>
  operate(
    "localdns cleanup",
    LocalDns.cleanupHostNetwork().pipe(Effect.as({})),
    () => "LocalDNS rules and interface removed"
  )
).pipe(Command.withDescription("Remove the LocalDNS rules and interface a stopped node left"))

const localDnsAwait = Command.make(
  "await",
  {
    ...listenerFlags,
    timeout: Flag.Int("timeout").pipe(
      Flag.withDefault(120),
      Flag.withMetavar("SECONDS"),
      Flag.filter(
        (n) => n > 0,
        (n) => `a positive whole number of seconds, not ${n}`
      ),
      Flag.withDescription("How long to keep probing, in seconds (default: 120)")
    )
  },
  ({ nodeListener, clusterListener, timeout }) =>
    operate(
      "localdns await",
      LocalDns.awaitLocalDns(localDnsNodeStart(nodeListener, clusterListener), {
        timeout: Duration.seconds(timeout)
      }).pipe(Effect.as({ listeners: [nodeListener, clusterListener] })),
      (r) => `LocalDNS answers on ${r.listeners.join(", ")}`
    )
).pipe(Command.withDescription("Wait until both LocalDNS listeners answer"))

const localdns = Command.make("localdns", {}, missingSubcommand("localdns", ["setup", "cleanup", "await"])).pipe(
  Command.withDescription("Set up, clean up or wait for the LocalDNS network"),
  Command.withSubcommands([localDnsSetup, localDnsCleanup, localDnsAwait])
)

/** The one slot of the host and the container compositions. */
const HostSlot = "host"

const running = Command.make(
  "running",
  {
    slot: Argument.String("SLOT").pipe(
      Argument.withDefault(HostSlot),
      Argument.withDescription(`The node root to ask about: this node has one, "${HostSlot}" (the default)`)
    )
  },
  ({ slot }) =>
    operate(
      "running",
      // The host and the container compositions have one node root each: any other slot would be
      // answered about that one root, under a name that is not its own.
      slot !== HostSlot
        ? Effect.fail<UsageError | IsolationBackend.IsolationError>(
            new UsageError({
              reason: new UnknownSlot({ slot, known: HostSlot }),
              fix: "leave SLOT out: `hostnode running`"
            })
          )
        : Effect.suspend(() => IsolationBackend.running(Schema.decodeSync(IsolationBackend.SlotRef)(slot))).pipe(
            Effect.map((up) => ({ slot, running: up }))
          ),
      (r) => (r.running ? `the node stack of ${r.slot} is running` : `the node stack of ${r.slot} is not running`)
    )
).pipe(Command.withDescription("Say whether the node stack is up (its units are active)"))

/**
 * `hostnode demo`: the guided run of `Demo.ts` on its own simulated node
 * (never the host, whatever `--host-root` says). Quiet unless `--log-level`
 * is given: only warnings and errors are logged. Exits 1 when a claim does
 * not hold or a step fails.
 */
const demo = Command.make("demo", {}, () =>
  Effect.gen(function* () {
    const json = yield* Json
    const logLevel = yield* GlobalFlag.LogLevel
    const program = Option.isSome(logLevel)
      ? Demo.run
      : Demo.run.pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))
    const result = yield* Effect.result(program)
    if (result._tag === "Failure") {
      yield* json
        ? Console.log(JSON.stringify({ ok: false, command: "demo", error: errorJson(result.failure) }))
        : Console.error(errorText("demo", result.failure))
      return yield* new CliExit({ code: 1 })
    }
    yield* Console.log(json ? JSON.stringify(Demo.toJson(result.success)) : Demo.renderText(result.success))
    if (!result.success.ok) return yield* new CliExit({ code: 1 })
  })
).pipe(
  Command.withDescription(
    "A guided run on a simulated node (in memory; this host is never touched): a failed upgrade rolled back, the upgrade succeeding, a repave, and every claim checked"
  )
)

const subcommands = [
  unmountBelow,
  snapshot,
  resetCni,
  resetKubeletIdentity,
  teardownKubeletDir,
  restartChanged,
  localdns,
  running,
  demo
] as const

const subcommandNames = subcommands.map((c) => c.name)

/**
 * The root command. Run with no subcommand it says where to go next instead
 * of failing.
 */
const hostnode = Command.make("hostnode", {}, () =>
  Effect.gen(function* () {
    const hint = "Run `hostnode --help` (or `hostnode help SUBCOMMAND`) for the commands."
    yield* (yield* Json)
      ? Console.log(JSON.stringify({ ok: true, command: null, result: { subcommands: subcommandNames, hint } }))
      : Console.log(
          `hostnode: host-side operations of a Kubernetes node agent.\nsubcommands: ${subcommandNames.join(", ")}\n${hint}`
        )
  })
).pipe(
  Command.withDescription(
    "Host-side operations of a Kubernetes node agent: unmount pod volumes, snapshot and roll back configuration, restart changed units, reset CNI state and kubelet identity, prepare LocalDNS."
  ),
  Command.withSubcommands(subcommands),
  Command.withGlobalFlags([HostRoot, Container, Json, DryRunFlag])
)

/**
 * What the command tree needs: the host's services (`NodeHost.layer`, `MemoryNode.layer`) and the CLI's environment.
 *
 * @since 0.1.0
 */
export type Services =
  | Command.Environment
  | Directory.Directories
  | Mounter.Mounter
  | Systemd.Systemd
  | DnsResolvers.DnsResolvers
  | IsolationBackend.IsolationBackend

/**
 * A parse error on one line: effect/cli puts a suggestion on lines of its
 * own ("Did you mean this?"); here it ends the sentence instead.
 */
const parseErrorLine = (error: CliError.CliError): string => {
  const suggestions = suggestionsFor(error)
  const [first = ""] = error.message.split("\n\n")
  return suggestions.length === 0 ? first : `${first}; did you mean ${suggestions.join(" or ")}?`
}

/** The global flags a person types, for suggestions: effect/cli suggests only the subcommand's own flags. */
const globalFlagNames = ["--help", "--version", "--log-level", "--host-root", "--container", "--json", "--dry-run"]

/** The edit distance between two words (insertions, deletions, substitutions). */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = row
  }
  return previous[b.length] ?? 0
}

/** What a parse error suggests instead: effect/cli's own, else a global flag within two edits of an unknown one. */
const suggestionsFor = (error: CliError.CliError): ReadonlyArray<string> => {
  const own = "suggestions" in error ? error.suggestions : []
  if (own.length > 0 || error._tag !== "UnrecognizedOption") return own
  const [given = ""] = error.option.split("=")
  return globalFlagNames.filter((name) => distance(name, given) <= 2)
}

const parseErrors = (error: CliError.CliError): ReadonlyArray<CliError.CliError> =>
  error._tag === "ShowHelp" ? error.errors : [error]

const usageText = (error: CliError.CliError): string => parseErrors(error).map(parseErrorLine).join("; ")

/** A parse error's suggestions, for the JSON document. */
const suggestionsOf = (error: CliError.CliError): ReadonlyArray<string> => parseErrors(error).flatMap(suggestionsFor)

/** The arguments before `--`: the only place a global flag such as `--json` can be. */
const flagWords = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const end = argv.indexOf("--")
  return end === -1 ? argv : argv.slice(0, end)
}

/**
 * `--help` after a subcommand that does not exist (`hostnode bogus --help`,
 * `hostnode help bogus`) would print the parent's help and exit 0, hiding
 * the typo: without `--help`, the parser names the unknown subcommand (and
 * the one meant), exit 2.
 */
const helpOfKnown = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const words = flagWords(argv)
  if (!words.some((w) => w === "--help" || w === "-h")) return argv
  let node: Command.Command.Any = hostnode
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? ""
    if (word.startsWith("-")) {
      if (valueFlags.has(word)) i++
      continue
    }
    const children = node.subcommands.flatMap((group) => group.commands)
    // A command without subcommands: the rest are its arguments.
    if (children.length === 0) return argv
    const child = children.find((c) => c.name === word)
    if (child === undefined) {
      return [...words.filter((w) => w !== "--help" && w !== "-h"), ...argv.slice(words.length)]
    }
    node = child
  }
  return argv
}

/** The words effect/cli reads as a boolean flag's value (`--json=on`, `--json false`). */
const trueWords: ReadonlySet<string> = new Set(["true", "1", "y", "yes", "on"])
const falseWords: ReadonlySet<string> = new Set(["false", "0", "n", "no", "off"])

/**
 * Whether `argv` asks for JSON as effect/cli will read it (`--json`,
 * `--json=on`, `--json true`; not `--json=false` or `--json false`), so a
 * usage error, which the parser reports before `--json` reaches the command,
 * is printed the way the command would print its outcome.
 *
 * @since 0.2.0
 */
export const wantsJson = (argv: ReadonlyArray<string>): boolean => {
  const words = flagWords(argv)
  let json = false
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? ""
    if (word.startsWith("--json=")) json = trueWords.has(word.slice("--json=".length).toLowerCase())
    else if (word === "--json") {
      const next = (words[i + 1] ?? "").toLowerCase()
      json = !falseWords.has(next)
      if (trueWords.has(next) || falseWords.has(next)) i++
    }
  }
  return json
}

/**
 * Help and version go to stdout as effect/cli renders them; an invalid
 * invocation is one line on stderr (what was wrong, and where to read more)
 * instead of the whole help text; with `--json` nothing is presented, since
 * {@link run} prints the one document itself.
 */
const presenter = (json: boolean): CliOutput.Presenter => ({
  present: (event) => {
    if (json) {
      // Help and the version are a run's result too: one document. An invalid invocation's is printed by `run`.
      if (event._tag === "Version") {
        return Console.log(
          JSON.stringify({ ok: true, command: "version", result: { name: event.name, version: event.version } })
        )
      }
      if (event._tag === "Help" && event.reason === "Requested") {
        const help = CliOutput.defaultFormatter({ colors: false }).formatHelpDoc(event.helpDoc)
        return Console.log(
          JSON.stringify({ ok: true, command: "help", result: { command: event.commandPath.join(" "), help } })
        )
      }
      return Effect.void
    }
    if (event._tag !== "InvalidInvocation") return CliOutput.defaultPresenter.present(event)
    const path = event.commandPath.join(" ")
    return Console.error(`${path}: ${event.errors.map(parseErrorLine).join("; ")} (see \`${path} --help\`)`)
  }
})

/** The global flags that take a value in the next word. */
const valueFlags: ReadonlySet<string> = new Set(["--host-root", "--container", "--log-level", "--completions"])

/**
 * `hostnode help [SUBCOMMAND...]` as `hostnode [SUBCOMMAND...] --help`: the
 * word a newcomer tries first. Only `help` in the subcommand's place counts
 * (not the value of a flag, not an argument after a subcommand).
 *
 * @since 0.2.0
 */
export const helpAsFlag = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ""
    if (word === "--") return argv
    if (word.startsWith("-")) {
      if (valueFlags.has(word)) i++
      continue
    }
    return word === "help" ? [...argv.slice(0, i), ...argv.slice(i + 1), "--help"] : argv
  }
  return argv
}

/**
 * Parses `argv` (without node and script) and runs the selected command.
 * Logs go to stderr, so stdout holds only the result. Bad usage prints one
 * line on stderr saying what was wrong (with `--json`: one JSON document on
 * stdout) and fails with `CliExit` 2; a failed operation fails with the
 * `CliExit` of its {@link ExitCodes}. A defect (a bug) is reported the same
 * way, as an internal error with exit code 1, so `--json` always prints
 * exactly one document.
 *
 * @since 0.1.0
 */
export const run = (given: ReadonlyArray<string>): Effect.Effect<void, CliExit, Services> => {
  const argv = helpOfKnown(helpAsFlag(given))
  const json = wantsJson(argv)
  return Command.runWith(hostnode, { version })(argv).pipe(
    Effect.catch((error) =>
      error instanceof CliExit
        ? Effect.fail(error)
        : error._tag === "ShowHelp" && error.errors.length === 0
          ? Effect.void
          : (json
              ? Console.log(
                  JSON.stringify({
                    ok: false,
                    command: null,
                    error: {
                      _tag: "UsageError",
                      cause: error._tag === "ShowHelp" ? (error.errors[0]?._tag ?? error._tag) : error._tag,
                      message: usageText(error),
                      ...(suggestionsOf(error).length === 0 ? {} : { suggestions: suggestionsOf(error) }),
                      hint: `see \`${error._tag === "ShowHelp" ? error.commandPath.join(" ") : "hostnode"} --help\``
                    }
                  })
                )
              : Effect.void
            ).pipe(Effect.andThen(Effect.fail(new CliExit({ code: ExitCodes.badInput }))))
    ),
    Effect.catchDefect((defect) => {
      const message = defect instanceof Error ? defect.message : String(defect)
      return (
        json
          ? Console.log(
              JSON.stringify({
                ok: false,
                command: null,
                error: {
                  _tag: "InternalError",
                  message,
                  hint: "this is a bug in hostnode; please report it with the command line"
                }
              })
            )
          : Console.error(`hostnode: internal error (a bug in hostnode; please report it): ${message}`)
      ).pipe(Effect.andThen(Effect.fail(new CliExit({ code: ExitCodes.failed }))))
    }),
    Effect.provide(CliOutput.layerPresenter(presenter(json))),
    Effect.provideService(Logger.LogToStderr, true)
  )
}
