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

/**
 * `--host-root DIR`: where the host's `/` is; the real host by default
 * (`Option.none()`: not given). A relative DIR is taken relative to the
 * working directory, and the absolute root used is printed on stderr (the
 * library itself refuses relative roots); an empty one is refused (exit 2).
 */
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

/**
 * `--container PID`: run the operation on the node stack of the container
 * whose init is host process PID (`NodeContainer.layer`, which pins that
 * process once: its files below its pinned root, its mount table and mount
 * namespace, its systemd, its network). Refused before anything is done
 * (exit 2): an empty PID (an unset variable), anything but a pid, a process
 * that is gone, one in this process's own mount namespace (unless
 * `--allow-own-namespace`), and any `--host-root` with it (`/` too).
 * Every path the command prints is named as the container sees it
 * (`/var/lib/kubelet/...`), and the JSON document names the container once,
 * `"container": { "pid": PID }`. A container that exits while the command
 * runs ends it with exit code 4 (`ContainerExited`, reason `Gone`).
 * Absent unless given (`Option.none()`).
 */
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

/**
 * `--allow-own-namespace`: with `--container`, accept a PID in this
 * process's own mount namespace, which is refused otherwise (exit 2): the
 * command would act on this host (a mistyped pid, `1` on a plain host).
 * Without `--container` it is refused too (exit 2, a `UsageError`,
 * reason `FlagWithout`).
 */
export const AllowOwnNamespace = GlobalFlag.Setting("allow-own-namespace")({
  flag: Flag.Boolean("allow-own-namespace").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "With --container: accept a PID in this process's own mount namespace (refused by default: the command would act on this host)"
    )
  )
})

/** `--json`: one machine-readable JSON document on stdout, errors included. */
export const Json = GlobalFlag.Setting("json")({
  flag: Flag.Boolean("json").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print one JSON document on stdout (the result, or the error), for machines")
  )
})

/** `--dry-run`: change nothing; print what would be written, removed, unmounted or run, in order. */
export const DryRunFlag = GlobalFlag.Setting("dry-run")({
  flag: Flag.Boolean("dry-run").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "Change nothing: read the host, and print every write, removal, unmount and command as the plan, in order"
    )
  )
})

/**
 * `--timeout SECONDS`: the operation's deadline (default 300). No call on
 * a host's files is waited for past it: one that does not return (a dead
 * NFS or FUSE mount) is abandoned `Hung`, a command or systemd call still
 * running fails and is stopped, the operation ends with its report, and the
 * command exits; 0 or less is refused (exit 2).
 */
export const Timeout = GlobalFlag.Setting("timeout")({
  flag: Flag.Int("timeout").pipe(
    Flag.withDefault(300),
    Flag.withMetavar("SECONDS"),
    Flag.filter(
      (n) => n > 0,
      (n) => `a positive whole number of seconds, not ${n}`
    ),
    Flag.withDescription(
      "End the operation by then (default: 300): a call on a file system that does not answer is abandoned, a command or systemd call still running fails and is stopped, and the report says what was done"
    )
  )
})

/**
 * `--log-format text|json`: how log lines are written on stderr. `text`
 * (the default): one line per entry (at `info`, one per operation). `json`:
 * one JSON object per line (`timestamp`, `level`, `message`, `annotations`,
 * `span` with its name and trace and span ids, `cause`), the CLI's own
 * messages (errors, warnings) too; no progress line. stdout is unchanged.
 */
export const LogFormat = GlobalFlag.Setting("log-format")({
  flag: Flag.Literals("log-format", ["text", "json"]).pipe(
    Flag.withDefault("text" as const),
    Flag.withMetavar("FORMAT"),
    Flag.withDescription(
      "How log lines are written on stderr: text (one line per entry, the default) or json (one JSON object per line, with its annotations and span)"
    )
  )
})

/**
 * `--metrics-file PATH`: when the run ends (whatever its outcome), its
 * metrics (`Metrics` of `@hostnode/core`, and the run's exit code and end
 * time) are written to PATH in Prometheus text format, replacing the file
 * atomically (a temporary file in the same directory, then a rename), as
 * node_exporter's textfile collector expects. A PATH whose directory does
 * not exist is refused before anything runs (exit 2).
 */
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
