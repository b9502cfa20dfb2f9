/**
 * The CLI's global flags: `--host-root`, `--container`,
 * `--allow-own-namespace`, `--json`, `--dry-run`, `--timeout`, `--log-format`
 * and `--metrics-file`. Boundary:
 * their declarations, and the argv scan of the last two (read before the
 * parser runs); how a command reads them is `operate.ts`, what the log and
 * metrics flags do is `observe.ts`.
 */
import * as Flag from "effect/cli/Flag"
import * as GlobalFlag from "effect/cli/GlobalFlag"

/** Documented where `Cli.ts` exports it. */
export const HostRoot = GlobalFlag.Setting("host-root")({
  // Optional, not defaulted to "/": `--host-root /` given is refused with --container, left out it is not.
  flag: Flag.String("host-root").pipe(
    Flag.optional,
    Flag.withMetavar("DIR"),
    Flag.withDescription(
      "The directory that is the host's / (default: /, the real host; a relative DIR is taken from the working directory)"
    )
  )
})

/** Documented where `Cli.ts` exports it. */
export const Container = GlobalFlag.Setting("container")({
  // Optional, not defaulted to "": `--container ""` (an unset variable) is refused, left out it is the host.
  flag: Flag.String("container").pipe(
    Flag.optional,
    Flag.withMetavar("PID"),
    Flag.withDescription(
      "Work on the node stack of the container whose init is host process PID: its files, mounts, systemd and network; paths are printed as the container sees them; exit 4 if it exits meanwhile"
    )
  )
})

/** Documented where `Cli.ts` exports it. */
export const AllowOwnNamespace = GlobalFlag.Setting("allow-own-namespace")({
  flag: Flag.Boolean("allow-own-namespace").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "With --container: accept a PID in this process's own mount namespace (refused by default: the command would act on this host)"
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

/** Documented where `Cli.ts` exports it. */
export const Timeout = GlobalFlag.Setting("timeout")({
  flag: Flag.Int("timeout").pipe(
    Flag.withDefault(300),
    Flag.withMetavar("SECONDS"),
    Flag.filter(
      (n) => n > 0,
      (n) => `a positive whole number of seconds, not ${n}`
    ),
    Flag.withDescription(
      "End the operation by then (default: 300): a call on a file system that does not answer is abandoned, and the report says what was done"
    )
  )
})

/** Documented where `Cli.ts` exports it. */
export const LogFormat = GlobalFlag.Setting("log-format")({
  flag: Flag.Literals("log-format", ["text", "json"]).pipe(
    Flag.withDefault("text" as const),
    Flag.withMetavar("FORMAT"),
    Flag.withDescription(
      "How log lines are written on stderr: text (one line per entry, the default) or json (one JSON object per line, with its annotations and span)"
    )
  )
})

/** Documented where `Cli.ts` exports it. */
export const MetricsFile = GlobalFlag.Setting("metrics-file")({
  flag: Flag.String("metrics-file").pipe(
    Flag.withDefault(""),
    Flag.withMetavar("PATH"),
    Flag.withDescription(
      "Write the run's metrics to PATH in Prometheus text format when it ends, replacing the file atomically (for node_exporter's textfile collector)"
    )
  )
})

/** The names of the two flags, each taking a value in the next word (for the argv scans and suggestions). */
export const observeFlagNames: ReadonlyArray<string> = ["--log-format", "--metrics-file"]

/** The flags of `observe`, as read from argv. */
interface Observed {
  readonly logFormat: "text" | "json"
  /** As given; `undefined` without the flag (an empty value is refused). */
  readonly metricsFile: string | undefined
}

/**
 * `--log-format` and `--metrics-file` as effect/cli will read them (`--flag
 * VALUE` or `--flag=VALUE`, the last one winning, nothing after `--`). A
 * value the parser refuses (`--log-format xml`) is refused there, with exit
 * code 2; until then it counts as text.
 */
export const observedOf = (argv: ReadonlyArray<string>): Observed => {
  const end = argv.indexOf("--")
  const words = end === -1 ? argv : argv.slice(0, end)
  let logFormat: Observed["logFormat"] = "text"
  let metricsFile: string | undefined
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? ""
    const value = (flag: string): string | undefined =>
      word === flag ? words[++i] : word.startsWith(`${flag}=`) ? word.slice(flag.length + 1) : undefined
    const format = value("--log-format")
    if (format !== undefined) logFormat = format === "json" ? "json" : "text"
    const file = value("--metrics-file")
    if (file !== undefined) metricsFile = file
  }
  return { logFormat, metricsFile }
}
