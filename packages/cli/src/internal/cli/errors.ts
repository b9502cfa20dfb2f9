/**
 * How a failure is shown: the CLI's own `UsageError`, the advice for each error by its tag and reason,
 * which errors are bad input (exit 2), and the error as a person's text, as
 * one refused-input line, or as JSON. Boundary: rendering only; nothing here
 * runs an operation. The exit codes and `CliExit` are `CliExit.ts`.
 */
import { Effect, Redacted, Schema } from "effect"
import type { CliExit } from "../../CliExit.ts"

/**
 * The operation did not end within `--timeout` (and the grace after it):
 * something it waited on was not bounded by the deadline. The command ends
 * anyway, exit 1.
 */
export class TimedOut extends Schema.TaggedError<TimedOut>()("TimedOut", {
  seconds: Schema.Number
}) {
  override get message(): string {
    return `the operation did not end within --timeout ${this.seconds} s; it was stopped`
  }
}

/** Why: a group such as `snapshot` was given without its subcommand. */
export class MissingSubcommand extends Schema.Error<MissingSubcommand>("@hostnode/cli/Cli/MissingSubcommand")({
  _tag: Schema.tag("MissingSubcommand"),
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

/** Why: a slot this node does not have (the node has one node root). */
export class UnknownSlot extends Schema.Error<UnknownSlot>("@hostnode/cli/Cli/UnknownSlot")({
  _tag: Schema.tag("UnknownSlot"),
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
 * Why: a flag that only applies with another was given without it
 * (`--allow-own-namespace` without `--container`).
 */
export class FlagWithout extends Schema.Error<FlagWithout>("@hostnode/cli/Cli/FlagWithout")({
  _tag: Schema.tag("FlagWithout"),
  /** The flag given, as typed. */
  flag: Schema.String,
  /** The flag it only applies with. */
  needs: Schema.String
}) {
  /**
   * Which flag was given without the one it applies with.
   *
   * @since 0.4.0
   */
  override get message(): string {
    return `${this.flag} is given without ${this.needs}, the only flag it applies with`
  }
}

/** Why a command refused its usage. */
export type UsageErrorReason = UsageError["reason"]

/**
 * Bad usage found by the command itself rather than by the parser (a group
 * such as `snapshot` without its subcommand, a slot this node does not have):
 * exit 2, nothing was done. `reason` says what was wrong; `fix` says what to
 * do instead.
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  reason: Schema.Union([MissingSubcommand, UnknownSlot, FlagWithout]),
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
 * tagged class, or the reason itself where it is a plain string.
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
  "UnmountError/PeersOutsideRoot":
    "The mounts named are copies on peers or slaves (shared:N, master:N in /proc/self/mountinfo) of the mounts below the prefixes; leave out --peers-outside-root refuse to detach them too, or make their parents private first (mount --make-private).",
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
  "ContainerError/OwnNamespace":
    "That pid is in this process's own mount namespace, so the command would act on this host: give the pid of the container's init (e.g. `docker inspect -f '{{.State.Pid}}' NAME`), or pass --allow-own-namespace if acting on this host is meant.",
  ContainerExited:
    "The container's init exited (a stop, a crash, a restart): what the result lists was done before that. Find its new pid (e.g. `docker inspect -f '{{.State.Pid}}' NAME`) and run the command again.",
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
export const toPlain = (value: unknown): unknown => {
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
  // An error's `cause` field (a reason's, as RestartFailed's SystemdError) is not enumerable: kept all the same.
  if (value instanceof Error && !("cause" in out) && value.cause !== undefined) out.cause = toPlain(value.cause)
  return out
}

/** The advice for `error`: what to check or do next ("" when there is none). */
const hintFor = (error: Failure): string => {
  if (error instanceof UsageError) return error.fix
  return lookup(hints, error) ?? ""
}

/** The typed error as JSON: its tag, message, fields and the hint. */
export const errorJson = (error: { readonly _tag: string; readonly message: string }): Record<string, unknown> => {
  const { fix: _, ...plain } = toPlain(error) as Record<string, unknown>
  // The operation's own error below a ContainerExited is a document of its own, with its advice.
  const cause = error._tag === "ContainerExited" ? causeOf(error) : undefined
  return {
    ...plain,
    _tag: error._tag,
    message: asFlags(error),
    ...(cause === undefined ? {} : { cause: errorJson(cause) }),
    hint: hintFor(error)
  }
}

/** The operation's failure a `ContainerExited` carries, if any. */
const causeOf = (error: Failure): Failure | undefined => {
  const cause = (error as { readonly cause?: unknown }).cause
  return typeof cause === "object" && cause !== null && "_tag" in cause && "message" in cause
    ? (cause as Failure)
    : undefined
}

/** The typed error for a person: what failed (the message names the path or unit) and what to check. */
export const errorText = (command: string, error: { readonly _tag: string; readonly message: string }): string => {
  const hint = hintFor(error)
  const advice = hint === "" ? "" : `\n  what to check: ${hint}`
  if (error._tag === "ContainerExited") {
    // What happened first (the container is gone), then where the operation stopped.
    const cause = causeOf(error)
    return `hostnode ${command}: ${error.message}${cause === undefined ? "" : `\n  where it stopped (${cause._tag}): ${cause.message}`}${advice}`
  }
  return `hostnode ${command}: failed (${error._tag}): ${error.message}${advice}`
}

export type Failure = { readonly _tag: string; readonly message: string }

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
  "UnmountError/PeersOutsideRoot",
  "ContainerError/InvalidPid",
  "ContainerError/NotFound",
  "ContainerError/NoContainer",
  "ContainerError/OwnNamespace"
])

/**
 * True when `error` refuses the caller's input before anything was changed:
 * the CLI exits 2 for it, as for bad usage.
 */
export const isInputError = (error: Failure): boolean => keysOf(error).some((key) => inputErrors.has(key))

/**
 * The `Gone` reason (`HostPath.Gone`: a container that exited after it was
 * pinned) `error` carries, as its reason or anywhere below it (a
 * `SnapshotError`'s failed step, a `RestartError`'s `SystemdError`, a
 * `ContainerExited`), or `undefined`. Found by its tag, so that this module
 * loads no library code: an object tagged `Gone` is that class (the
 * mounter's `Unverified` reason "Gone" is a string, never an object).
 */
export const goneIn = (error: unknown): { readonly _tag: "Gone" } | undefined => {
  const seen = new Set<object>()
  const visit = (value: unknown, depth: number): { readonly _tag: "Gone" } | undefined => {
    if (typeof value !== "object" || value === null || depth > 8 || seen.has(value)) return undefined
    seen.add(value)
    if ((value as { readonly _tag?: unknown })._tag === "Gone") return value as { readonly _tag: "Gone" }
    const children = Array.isArray(value) ? value : Object.values(value)
    // An error's `cause` is not enumerable.
    const cause = value instanceof Error ? [value.cause] : []
    for (const child of [...children, ...cause]) {
      const found = visit(child, depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  return visit(error, 0)
}

/** The exit code for a failed operation (see {@link ExitCodes}). */
export const exitCodeFor = (error: Failure): CliExit["code"] =>
  error._tag === "ContainerExited" || goneIn(error) !== undefined
    ? 4
    : isInputError(error)
      ? 2
      : error._tag === "ResetError"
        ? 3
        : 1

/**
 * The flag a person types for the library option a refusal names, by
 * `Tag/Reason`: the library's own advice (its message from "; pass " on,
 * which names the option) is replaced by this.
 */
const flagAdvice: Readonly<Record<string, string>> = {
  "HostPathError/IsHostRoot": "pass --allow-root to mean every mount below the host root",
  "SnapshotError/HostRootMismatch": "pass --allow-root-mismatch if that is the same tree under another name",
  "ContainerError/OwnNamespace": "pass --allow-own-namespace if acting on this host is meant"
}

/** `error`'s message, with the flag to pass where the library names its option (see {@link flagAdvice}). */
const asFlags = (error: Failure): string => {
  const advice = lookup(flagAdvice, error)
  if (advice === undefined) return error.message
  // The library's advice ("; pass allowRoot ...", " (pass allowOwnNamespace ...)") runs to the end of the message.
  const cuts = [error.message.indexOf("; pass "), error.message.indexOf(" (pass ")].filter((i) => i !== -1)
  const cut = cuts.length === 0 ? -1 : Math.min(...cuts)
  return `${cut === -1 ? error.message : error.message.slice(0, cut)}; ${advice}`
}

/**
 * Whether a `HostPathError` refuses the host root itself (`--host-root`) rather
 * than a path below it: such an error has no path, or the path "/".
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
  "UnmountError/PeersOutsideRoot": () => "without --peers-outside-root refuse they are detached with them and reported",
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
 */
export const inputErrorLine = (command: string, error: { readonly _tag: string; readonly message: string }): string => {
  const fix = inputFix(error)
  return `hostnode ${command}: ${asFlags(error)}${fix === "" ? "" : ` (${fix})`}`
}
