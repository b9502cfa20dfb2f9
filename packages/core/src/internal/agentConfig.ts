/**
 * The agent configuration's defaults and field schemas that other modules of
 * core share (`LocalDns`, `NodeStart`, `IsolationBackend`); `AgentConfig` is
 * the public face.
 *
 * @since 0.4.0
 */
import { Schema } from "effect"

/**
 * The link kind of the LocalDNS interface unless the kernel lacks it.
 */
export const DefaultInterfaceKind = "dummy" as const

/**
 * How long `awaitLocalDns` waits for every listener to answer.
 */
export const DefaultReadinessTimeout = "2 minutes"
/**
 * The pause between two rounds of LocalDNS probes.
 */
export const DefaultProbeInterval = "500 millis"
/**
 * How long one LocalDNS probe waits for an answer.
 */
export const DefaultProbeTimeout = "1 second"

/**
 * An absolute host path without NUL bytes. Host paths are always absolute:
 * a relative one would depend on the agent's working directory.
 */
export const AbsolutePath = Schema.String.check(
  Schema.makeFilter(
    (s: string) =>
      !s.startsWith("/")
        ? "must be an absolute path (start with '/')"
        : s.includes("\0")
          ? "contains a NUL byte"
          : undefined,
    { title: "AbsolutePath" }
  )
)

/**
 * The link kinds the LocalDNS interface can be. Production uses `dummy`, the
 * AKS design; `bridge` is the stand-in where the kernel lacks the dummy
 * driver (some test kernels), and behaves the same for this purpose: a
 * link that only carries local addresses.
 */
export const InterfaceKind = Schema.Literals(["dummy", "bridge"])

/**
 * A link kind the LocalDNS interface can be.
 */
export type InterfaceKind = typeof InterfaceKind.Type
