/**
 * How the LocalDNS phases fail: one `LocalDnsError` whose `reason` says what
 * went wrong, with only its own facts: a network step whose command could not
 * run, exited non-zero or printed what was not expected ({@link Failure}); a
 * listener address that is not one ({@link BadListener}); listeners that never
 * answered ({@link Timeout}).
 *
 * A leaf module: `LocalDns` re-exports it and its steps in `internal/localdns`
 * build it, so each class is written once.
 *
 * @since 0.4.0
 */
import { Duration, Schema } from "effect"

const commandLine = (r: { readonly command: string; readonly args: ReadonlyArray<string> }): string =>
  [r.command, ...r.args].join(" ")

/**
 * A network step that failed, told by its `_tag`, with what the step was
 * doing (`step`) and the command it ran; `exitCode` and `stderr` (as the
 * command printed it) where it ran and exited non-zero, `detail` otherwise:
 * - `CommandUnavailable`: the command could not be started at all (not
 *   installed, not executable);
 * - `PermissionDenied`: this process may not change links or rules (no
 *   CAP_NET_ADMIN, not root);
 * - `UnsupportedKind`: the kernel lacks the link kind asked for (`ip link add
 *   ... type dummy`: "Unknown device type.");
 * - `TableUnavailable`: the kernel lacks the iptables table (`raw`);
 * - `ExtensionUnavailable`: iptables lacks a match or target extension the
 *   rules use (`comment`, `NOTRACK`);
 * - `UnexpectedOutput`: the command succeeded but printed what cannot be used
 *   (`ip -j` output that is not the JSON expected);
 * - `CommandFailed`: it exited non-zero for any other reason.
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/LocalDns/Failure")({
  _tag: Schema.Literals([
    "CommandUnavailable",
    "PermissionDenied",
    "UnsupportedKind",
    "TableUnavailable",
    "ExtensionUnavailable",
    "UnexpectedOutput",
    "CommandFailed"
  ]),
  /** What the step was doing ("add a rule"). */
  step: Schema.String,
  command: Schema.String,
  args: Schema.Array(Schema.String),
  exitCode: Schema.optionalKey(Schema.Number),
  /** What the command printed on stderr, as it printed it. */
  stderr: Schema.optionalKey(Schema.String),
  detail: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    const [what, said] =
      this._tag === "CommandUnavailable"
        ? ["could not run", (this.detail ?? "").trim()]
        : this._tag === "UnexpectedOutput"
          ? ["exited 0", this.detail ?? ""]
          : [`exited ${this.exitCode}`, (this.stderr ?? "").trim()]
    return `${this.step} failed (${this._tag}): ${commandLine(this)} ${what}${said === "" ? "" : `: ${said}`}`
  }
}

const ListenerName = Schema.Literals(["node", "cluster"])

/**
 * A listener address that is not usable, told by its `_tag`:
 * - `InvalidListener`: not a canonical dotted quad (`169.254.010.10` would
 *   reach `ip` as 169.254.8.10) or outside the link-local range; `problem` is
 *   what the decoder said;
 * - `SameAddress`: both listeners have the same address; `listener` is the one
 *   that repeats the other's.
 *
 * @category errors
 * @since 0.4.0
 */
export class BadListener extends Schema.Error<BadListener>("@hostnode/core/LocalDns/BadListener")({
  _tag: Schema.Literals(["InvalidListener", "SameAddress"]),
  listener: ListenerName,
  address: Schema.String,
  problem: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    if (this._tag === "InvalidListener") {
      return `${this.listener} listener ${JSON.stringify(this.address)} ${this.problem ?? ""}`
    }
    const other = this.listener === "node" ? "cluster" : "node"
    return `${this.listener} listener ${JSON.stringify(this.address)} is the ${other} listener's address too; the two must differ`
  }
}

/** A listener that never answered, and why its last probe failed. */
const SilentListener = Schema.Struct({
  name: ListenerName,
  address: Schema.String,
  reason: Schema.String
})

/**
 * LocalDNS did not answer on every listener before the deadline. `listeners`
 * names those that never answered (with why their last probe failed);
 * `answered` the addresses that did.
 *
 * @category errors
 * @since 0.3.0
 */
export class Timeout extends Schema.Error<Timeout>("@hostnode/core/LocalDns/Timeout")({
  _tag: Schema.tag("Timeout"),
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

/** The reasons that are not a network step's: their messages say "LocalDNS ...", a network step's "LocalDNS network: ...". */
const notNetwork: ReadonlySet<string> = new Set(["InvalidListener", "SameAddress", "Timeout"])

/**
 * A LocalDNS phase that failed; `reason` says why and carries what the step,
 * listener or wait knew. Reach one case with
 * `Effect.catchReason("LocalDnsError", "PermissionDenied", ...)`.
 *
 * @category errors
 * @since 0.1.0
 */
export class LocalDnsError extends Schema.TaggedError<LocalDnsError>()("LocalDnsError", {
  reason: Schema.Union([Failure, BadListener, Timeout])
}) {
  override get message(): string {
    return notNetwork.has(this.reason._tag)
      ? `LocalDNS ${this.reason.message}`
      : `LocalDNS network: ${this.reason.message}`
  }
}
