/**
 * The agent configuration: where the agent keeps its own files (the agent
 * configuration directory, a host path), how the LocalDNS interface is set up
 * and waited on, and which systemd units make up the node. One document,
 * decoded strictly, with defaults for everything a production node does not
 * need to say.
 *
 * Boundary: a Schema and its decoders. Nothing here touches the host; paths
 * are host paths, joined below a host root by the operations that use them.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schema } from "effect"
import {
  AbsolutePath,
  DefaultInterfaceKind,
  DefaultProbeInterval,
  DefaultProbeTimeout,
  DefaultReadinessTimeout,
  InterfaceKind
} from "./internal/agentConfig.ts"
import * as ConfigDecode from "./internal/configFile/decode.ts"
import { UnitName } from "./UnitName.ts"

/**
 * The values the agent configuration takes where it leaves a field out (the
 * configuration of a production host), for a program that names them
 * without decoding one.
 *
 * @category models
 * @since 0.4.0
 */
export const Defaults = {
  /** The agent configuration directory on a production host, when the configuration does not name one. */
  configDir: "/etc/hostnode",
  /** The name of the LocalDNS interface, as AKS names it. */
  interfaceName: "localdns",
  /**
   * The node's units, in restart order: those whose activity means the host
   * mode's stack is up (`IsolationBackend.layerHost`).
   */
  units: ["containerd.service", "kubelet.service"]
} as const

/**
 * Linux interface names: at most 15 bytes (IFNAMSIZ - 1), no '/', ':', whitespace, and not `.` or `..`.
 */
const InterfaceName = Schema.String.check(
  Schema.makeFilter(
    (s: string) => {
      if (s.length === 0) return "is empty"
      if (s.length > 15) return `is ${s.length} characters long, more than Linux's 15`
      if (s === "." || s === "..") return "is not a valid interface name"
      if (!/^[A-Za-z0-9_.-]+$/.test(s)) return "may only contain ASCII letters, digits and '_.-'"
      if (s.startsWith("-")) return "starts with '-', which a command line would read as an option"
      return undefined
    },
    { title: "InterfaceName" }
  )
)

const PositiveDuration = Schema.DurationFromString.check(
  Schema.makeFilter((d: Duration.Duration) => (Duration.isPositive(d) ? undefined : "must be positive"), {
    title: "PositiveDuration"
  })
)

/**
 * How this agent sets up LocalDNS and waits for it. The listeners themselves
 * are part of the node's goal (`NodeStart.localDns`); these are the host's
 * side. Durations are strings such as `"2 minutes"` or `"500 millis"`.
 */
const LocalDnsSettings = Schema.Struct({
  /** The interface that carries the listener addresses. */
  interfaceName: InterfaceName.pipe(Schema.withDecodingDefaultKey(Effect.succeed(Defaults.interfaceName))),
  /** Its link kind; `dummy` unless the kernel lacks it. */
  interfaceKind: InterfaceKind.pipe(Schema.withDecodingDefaultKey(Effect.succeed(DefaultInterfaceKind))),
  /** How long `awaitLocalDns` waits for every listener to answer. */
  readinessTimeout: PositiveDuration.pipe(Schema.withDecodingDefaultKey(Effect.succeed(DefaultReadinessTimeout))),
  /** The pause between two rounds of probes. */
  probeInterval: PositiveDuration.pipe(Schema.withDecodingDefaultKey(Effect.succeed(DefaultProbeInterval))),
  /** How long one probe waits for an answer. */
  probeTimeout: PositiveDuration.pipe(Schema.withDecodingDefaultKey(Effect.succeed(DefaultProbeTimeout)))
})

/**
 * The agent configuration. Every field has a default, so `{}` is the
 * configuration of a production host.
 *
 * @category models
 * @since 0.1.0
 */
export const AgentConfig = Schema.Struct({
  /**
   * The agent configuration directory, a host path: goal states are read from
   * it and configuration snapshots are kept in it.
   */
  configDir: AbsolutePath.pipe(Schema.withDecodingDefaultKey(Effect.succeed(Defaults.configDir))),
  /** The LocalDNS settings of this host. */
  localDns: LocalDnsSettings.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  /** The node's units, in restart order; every name is validated as a systemd unit name. */
  units: Schema.Array(UnitName)
    .check(Schema.isMinLength(1))
    .pipe(Schema.withDecodingDefaultKey(Effect.succeed(Defaults.units)))
})

/**
 * The decoded agent configuration.
 *
 * @category models
 * @since 0.1.0
 */
export type AgentConfig = typeof AgentConfig.Type

/**
 * What the errors call this document.
 */
const What = "AgentConfig"

/**
 * Decodes an agent configuration from an already parsed value; `file` is named in errors.
 *
 * @example
 * ```ts
 * import { AgentConfig } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Settings from the agent's flags, checked by the same rules as the file; the other fields take their defaults.
 * const fromFlags = (interfaceName: string) =>
 *   Effect.gen(function* () {
 *     const config = yield* AgentConfig.decode({ localDns: { interfaceName } }, "--localdns-interface")
 *     yield* Effect.logInfo(`LocalDNS on ${config.localDns.interfaceName}; units ${config.units.join(", ")}`)
 *     return config
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decode = Effect.fn("AgentConfig.decode")(function* (input: unknown, file = "") {
  return yield* ConfigDecode.decodeUnknown(AgentConfig, What, file)(input)
})

/**
 * Decodes an agent configuration from JSON text; `file` is named in errors.
 *
 * @example
 * ```ts
 * import { AgentConfig } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The configuration from a mounted ConfigMap key, which arrives as text; a typo in it is named, not ignored.
 * const fromConfigMap = (data: Readonly<Record<string, string>>) =>
 *   AgentConfig.decodeJson(data["config.json"] ?? "{}", "configmap hostnode/config.json").pipe(
 *     Effect.catchReason("ConfigError", "InvalidValue", (invalid) =>
 *       Effect.fail(`fix ${invalid.field} in the ConfigMap: ${invalid.message}`)
 *     )
 *   )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decodeJson = Effect.fn("AgentConfig.decodeJson")(function* (text: string, file = "") {
  return yield* ConfigDecode.decodeJson(AgentConfig, What, file)(text)
})

/**
 * Reads and decodes the agent configuration file at `path` (a path of this process, already below any host root).
 *
 * @example
 * ```ts
 * import { AgentConfig } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The units to restart, from the host's configuration file (every field has a default).
 * const units = AgentConfig.read("/etc/hostnode/config.json").pipe(Effect.map((config) => config.units))
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const read = Effect.fn("AgentConfig.read")(function* (path: string) {
  return yield* ConfigDecode.read(AgentConfig, What)(path)
})
