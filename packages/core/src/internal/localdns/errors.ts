/**
 * How the LocalDNS phases fail: one `LocalDnsError` whose reason is a tagged
 * class per thing that went wrong — a network step whose command could not
 * run, exited non-zero or printed what was not expected; a listener address
 * that is not one; listeners that never answered. Each reason has only its
 * own fields.
 *
 * Internal: `LocalDns` re-exports all of it; the steps in this directory
 * build the errors.
 *
 * @since 0.3.0
 */
import { Duration, Schema } from "effect"

/** The fields of every network reason: what the step was doing and the command it ran. */
const commandFields = {
  /** What the step was doing ("add a rule"). */
  step: Schema.String,
  command: Schema.String,
  args: Schema.Array(Schema.String)
}

/** The fields of a network reason whose command ran and exited non-zero: also its exit code and stderr. */
const exitedFields = {
  ...commandFields,
  exitCode: Schema.Number,
  /** What the command printed on stderr, as it printed it. */
  stderr: Schema.String
}

interface CommandReason {
  readonly _tag: string
  readonly step: string
  readonly command: string
  readonly args: ReadonlyArray<string>
}

const commandLine = (r: CommandReason): string => [r.command, ...r.args].join(" ")

const failedWith = (r: CommandReason, what: string, said: string): string =>
  `${r.step} failed (${r._tag}): ${commandLine(r)} ${what}${said === "" ? "" : `: ${said}`}`

const exited = (r: CommandReason & { readonly exitCode: number; readonly stderr: string }): string =>
  failedWith(r, `exited ${r.exitCode}`, r.stderr.trim())

/** The command could not be started at all (not installed, not executable); `detail` says why. */
export class CommandUnavailable extends Schema.TaggedError<CommandUnavailable>()("CommandUnavailable", {
  ...commandFields,
  detail: Schema.String
}) {
  override get message(): string {
    return failedWith(this, "could not run", this.detail.trim())
  }
}

/** The command was refused: this process may not change links or rules (no CAP_NET_ADMIN, not root). */
export class PermissionDenied extends Schema.TaggedError<PermissionDenied>()("PermissionDenied", exitedFields) {
  override get message(): string {
    return exited(this)
  }
}

/** The kernel lacks the link kind asked for (`ip link add ... type dummy`: "Unknown device type."). */
export class UnsupportedKind extends Schema.TaggedError<UnsupportedKind>()("UnsupportedKind", exitedFields) {
  override get message(): string {
    return exited(this)
  }
}

/** The kernel lacks the iptables table (`raw`). */
export class TableUnavailable extends Schema.TaggedError<TableUnavailable>()("TableUnavailable", exitedFields) {
  override get message(): string {
    return exited(this)
  }
}

/** iptables lacks a match or target extension the rules use (`comment`, `NOTRACK`). */
export class ExtensionUnavailable extends Schema.TaggedError<ExtensionUnavailable>()(
  "ExtensionUnavailable",
  exitedFields
) {
  override get message(): string {
    return exited(this)
  }
}

/** The command succeeded but printed what cannot be used (`ip -j` output that is not the JSON expected); `detail` says what. */
export class UnexpectedOutput extends Schema.TaggedError<UnexpectedOutput>()("UnexpectedOutput", {
  ...commandFields,
  detail: Schema.String
}) {
  override get message(): string {
    return failedWith(this, "exited 0", this.detail)
  }
}

/** The command exited non-zero for any other reason; its stderr says why. */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", exitedFields) {
  override get message(): string {
    return exited(this)
  }
}

/** Why a network step failed, classified from the command's exit and stderr. */
export const NetworkErrorReason = Schema.Union([
  CommandUnavailable,
  PermissionDenied,
  UnsupportedKind,
  TableUnavailable,
  ExtensionUnavailable,
  UnexpectedOutput,
  CommandFailed
])

/** Why a network step failed. */
export type NetworkErrorReason = typeof NetworkErrorReason.Type

const ListenerName = Schema.Literals(["node", "cluster"])

/**
 * A listener address that is not one: not a canonical dotted quad
 * (`169.254.010.10` would reach `ip` as 169.254.8.10) or outside the
 * link-local range. `problem` is what the decoder said.
 */
export class InvalidListener extends Schema.TaggedError<InvalidListener>()("InvalidListener", {
  listener: ListenerName,
  address: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `${this.listener} listener ${JSON.stringify(this.address)} ${this.problem}`
  }
}

/** Both listeners have the same address; `listener` is the one that repeats the other's. */
export class SameAddress extends Schema.TaggedError<SameAddress>()("SameAddress", {
  listener: ListenerName,
  address: Schema.String
}) {
  override get message(): string {
    const other = this.listener === "node" ? "cluster" : "node"
    return `${this.listener} listener ${JSON.stringify(this.address)} is the ${other} listener's address too; the two must differ`
  }
}

/** A listener that never answered, and why its last probe failed. */
export const SilentListener = Schema.Struct({
  name: ListenerName,
  address: Schema.String,
  reason: Schema.String
})

/** A listener that never answered. */
export type SilentListener = typeof SilentListener.Type

/**
 * LocalDNS did not answer on every listener before the deadline. `listeners`
 * names those that never answered (with why their last probe failed);
 * `answered` the addresses that did.
 */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  listeners: Schema.Array(SilentListener),
  answered: Schema.Array(Schema.String),
  attempts: Schema.Number,
  timeoutMillis: Schema.Number
}) {
  override get message(): string {
    const silent = this.listeners.map((l) => `${l.name} listener ${l.address} (${l.reason})`).join(", ")
    return `did not answer within ${Duration.format(Duration.millis(this.timeoutMillis))} (${this.attempts} attempts): ${silent}`
  }
}

/** Why a LocalDNS phase failed: a network step, a listener address, or the wait's deadline. */
export const LocalDnsErrorReason = Schema.Union([...NetworkErrorReason.members, InvalidListener, SameAddress, Timeout])

/** Why a LocalDNS phase failed. */
export type LocalDnsErrorReason = typeof LocalDnsErrorReason.Type

/** The reasons that are not a network step's: their messages say "LocalDNS ...", a network step's "LocalDNS network: ...". */
const notNetwork: ReadonlySet<string> = new Set(["InvalidListener", "SameAddress", "Timeout"])

/** A LocalDNS phase that failed; `reason` says why and carries what the step, listener or wait knew. */
export class LocalDnsError extends Schema.TaggedError<LocalDnsError>()("LocalDnsError", {
  reason: LocalDnsErrorReason
}) {
  override get message(): string {
    return notNetwork.has(this.reason._tag)
      ? `LocalDNS ${this.reason.message}`
      : `LocalDNS network: ${this.reason.message}`
  }
}

/** The error of a failed network step. */
export const networkError = (reason: NetworkErrorReason): LocalDnsError => new LocalDnsError({ reason })
