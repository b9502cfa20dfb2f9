/**
 * The CLI's global flags: `--host-root`, `--container`, `--json` and
 * `--dry-run`. Boundary: their declarations only; how a command reads them is
 * `operate.ts`.
 */
import * as Flag from "effect/cli/Flag"
import * as GlobalFlag from "effect/cli/GlobalFlag"

/** Documented where `Cli.ts` exports it. */
export const HostRoot = GlobalFlag.Setting("host-root")({
  flag: Flag.String("host-root").pipe(
    Flag.withDefault("/"),
    Flag.withMetavar("DIR"),
    Flag.withDescription(
      "The directory that is the host's / (default: /, the real host; a relative DIR is taken from the working directory)"
    )
  )
})

/** Documented where `Cli.ts` exports it. */
export const Container = GlobalFlag.Setting("container")({
  flag: Flag.String("container").pipe(
    Flag.withDefault(""),
    Flag.withMetavar("PID"),
    Flag.withDescription(
      "Work on the node stack of the container whose init is host process PID: its files, mounts, systemd and network"
    )
  )
})

/** Documented where `Cli.ts` exports it. */
export const Json = GlobalFlag.Setting("json")({
  flag: Flag.Boolean("json").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print one JSON document on stdout (the result, or the error), for machines")
  )
})

/** Documented where `Cli.ts` exports it. */
export const DryRunFlag = GlobalFlag.Setting("dry-run")({
  flag: Flag.Boolean("dry-run").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "Change nothing: read the host, and print every write, removal, unmount and command as the plan, in order"
    )
  )
})
