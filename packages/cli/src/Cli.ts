/**
 * The `hostnode` command tree. Each operation of @hostnode/core becomes a
 * subcommand here as it lands; this module only describes commands, the entry
 * point (`bin.ts`) provides the layers and runs them.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import { Command } from "effect/cli"

/** The CLI's version, printed by `hostnode --version`. */
export const version = "0.1.0"

/**
 * The root command. Run with no subcommand it prints what exists, so a
 * newcomer's first `npm start` says where to go next instead of failing.
 */
export const hostnode = Command.make("hostnode", {}, () =>
  Effect.log(
    "hostnode: host-side operations of a Kubernetes node agent. Run `hostnode --help` for the list of commands."
  )
).pipe(
  Command.withDescription(
    "Host-side operations of a Kubernetes node agent: unmount pod volumes, snapshot and roll back configuration, restart changed units, reset CNI state and kubelet identity, prepare LocalDNS."
  )
)

/** Parses `argv` (without node and script) and runs the selected command. */
export const run = Command.runWith(hostnode, { version })
