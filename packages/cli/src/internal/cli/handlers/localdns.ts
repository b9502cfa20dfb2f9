/**
 * `hostnode localdns setup|cleanup|await`'s work, loaded only when one of them
 * runs. Boundary: the operations and their output; the flags are declared in
 * `commands.ts`.
 */
import { LocalDns, type NodeStart, Repave } from "@hostnode/core"
import { Duration, Effect } from "effect"
import { operate, type Work } from "../operate.ts"

/** The listener flags. */
interface Listeners {
  readonly nodeListener: string
  readonly clusterListener: string
}

/**
 * The node start the LocalDNS steps take, from the listener flags: they read
 * only its listeners (and decode them before any command runs: a bad address
 * exits 2), so its name, API server and authentication are placeholders.
 */
const localDnsNodeStart = ({ nodeListener, clusterListener }: Listeners): NodeStart.NodeStart => ({
  nodeName: "hostnode-cli",
  apiServer: "https://hostnode-cli.invalid",
  auth: { _tag: "Kubeconfig", path: Repave.KubeletPaths.kubeconfig },
  localDns: { nodeListener, clusterListener }
})

/** Creates the LocalDNS interface of the given kind and its NOTRACK rules. */
export const setup = (input: Listeners & { readonly kind: "dummy" | "bridge" }): Work =>
  operate(
    "localdns setup",
    LocalDns.setupLocalDnsNetwork(localDnsNodeStart(input), { interfaceKind: input.kind }).pipe(
      Effect.as({ listeners: [input.nodeListener, input.clusterListener], kind: input.kind })
    ),
    (r) => `LocalDNS network ready: ${r.listeners.join(", ")} on a ${r.kind} interface, NOTRACK rules in place`
  )

/** Removes the LocalDNS rules and interface. */
export const cleanup = (): Work =>
  operate(
    "localdns cleanup",
    LocalDns.cleanupHostNetwork().pipe(Effect.as({})),
    () => "LocalDNS rules and interface removed"
  )

/** Waits until both listeners answer, at most `timeout` seconds. */
export const awaitDns = (input: Listeners & { readonly timeout: number }): Work =>
  operate(
    "localdns await",
    LocalDns.awaitLocalDns(localDnsNodeStart(input), {
      timeout: Duration.seconds(input.timeout)
    }).pipe(Effect.as({ listeners: [input.nodeListener, input.clusterListener] })),
    (r) => `LocalDNS answers on ${r.listeners.join(", ")}`
  )
