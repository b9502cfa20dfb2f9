/**
 * The CLI's logs and metrics around a whole run: `--log-format` (`text`: one
 * line per log entry, Effect's default logger replaced by `Progress.lineLogger`;
 * `json`: one JSON object per line on stderr, log entries and the CLI's own
 * messages alike, no progress line) and `--metrics-file` (the run's metrics,
 * in a registry of its own, written in Prometheus text format when the run
 * ends, atomically: a temporary file in the same directory, then a rename,
 * as node_exporter's textfile collector expects). Boundary: what the run
 * writes on stderr and to the metrics file; stdout is the commands'.
 *
 * The two flags are read from argv before the parser runs (as `--json` is),
 * so a usage error is a JSON line too, and a bad `--metrics-file` is refused
 * before anything runs; they are also declared as global flags, so the
 * parser accepts them and `--help` lists them.
 */
import {
  Cause,
  Clock,
  Console,
  Effect,
  Exit,
  FileSystem,
  Formatter,
  Logger,
  Metric,
  Path,
  Random,
  References
} from "effect"
import { PrometheusMetrics } from "effect/observability"
import { CliExit, ExitCodes } from "../../CliExit.ts"
import { observedOf } from "./flags.ts"
import * as Progress from "./progress.ts"

/** The CLI's own gauges in the metrics file: how the run ended, and when. */
const exitCodeGauge = Metric.gauge("hostnode_cli_exit_code", {
  description:
    "The exit code of the hostnode run that wrote this file (0 success, 1 failed, 2 bad input, 3 kept paths, 4 the container exited)"
})
const finishedGauge = Metric.gauge("hostnode_cli_run_finished_timestamp_seconds", {
  description: "When the hostnode run that wrote this file ended, in seconds since the epoch"
})

/** A JSON object on one line; values Effect's formatter makes safe (cycles, bigints, errors). */
const jsonLine = (record: Readonly<Record<string, unknown>>): string => Formatter.formatJson(record)

/**
 * One JSON object per log entry, written to `stderr`: time, level, message,
 * annotations, the current span (name, trace and span ids) and the cause of a
 * failure logged with one.
 */
const jsonLogger = (stderr: (line: string) => void): Logger.Logger<unknown, void> =>
  Logger.make(({ cause, date, fiber, logLevel, message }) => {
    const parts = (Array.isArray(message) ? message : [message]).map((m) =>
      typeof m === "string" ? m : Formatter.format(m)
    )
    const span = fiber.cache.span
    stderr(
      jsonLine({
        timestamp: date.toISOString(),
        level: logLevel.toUpperCase(),
        message: parts.join(" "),
        annotations: fiber.getRef(References.CurrentLogAnnotations),
        ...(span === undefined
          ? {}
          : {
              span: {
                ...(span._tag === "Span" ? { name: span.name } : {}),
                traceId: span.traceId,
                spanId: span.spanId
              }
            }),
        ...(cause.reasons.length > 0 ? { cause: Cause.pretty(cause) } : {}),
        fiber: `#${fiber.id}`
      })
    )
  })

/**
 * The level of one of the CLI's own stderr messages, from its fixed forms: a
 * warning says `hostnode CMD: warning:`, the notices say how a relative
 * `--host-root` is taken and which container the command works in; every
 * other one reports a failure or a refusal.
 */
const levelOfMessage = (text: string): "WARN" | "INFO" | "ERROR" =>
  /^hostnode [^:]*: warning: /.test(text)
    ? "WARN"
    : / is taken as \//.test(text) || /^hostnode [^:]*: in container process \d+ \(/.test(text)
      ? "INFO"
      : "ERROR"

/** The console whose stderr writes each message as one JSON object (stdout stays as it is). */
const jsonConsole = (base: Console.Console, now: () => number): Console.Console => {
  const line = (args: ReadonlyArray<unknown>) => {
    const text = args.map((a) => (typeof a === "string" ? a : Formatter.format(a))).join(" ")
    base.error(
      jsonLine({
        timestamp: new Date(now()).toISOString(),
        level: levelOfMessage(text),
        message: text,
        annotations: {}
      })
    )
  }
  return Object.assign(Object.create(base) as Console.Console, {
    error: (...args: ReadonlyArray<unknown>) => line(args),
    warn: (...args: ReadonlyArray<unknown>) => line(args)
  })
}

/** Progress drawn nowhere: with JSON logs, stderr holds JSON lines only. */
const noProgress: Progress.Progress = {
  show: () => Effect.void,
  clear: Effect.void,
  log: () => Effect.void
}

/**
 * `--metrics-file`, decoded: an absolute path (a relative one taken from the
 * working directory) whose directory exists and which is not a directory
 * itself; otherwise the run is refused (exit 2) before anything is done.
 */
const decodeMetricsFile = (given: string, say: (line: string) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const refuse = (why: string) =>
      Effect.andThen(
        say(`hostnode: --metrics-file ${JSON.stringify(given)}: ${why}`),
        Effect.fail(new CliExit({ code: ExitCodes.badInput }))
      )
    if (given === "") return yield* refuse("empty (an unset variable?): give the file to write the metrics to")
    const absolute = path.resolve(given)
    const dir = path.dirname(absolute)
    const dirInfo = yield* Effect.option(fs.stat(dir))
    if (dirInfo._tag === "None" || dirInfo.value.type !== "Directory") {
      return yield* refuse(`its directory ${dir} does not exist`)
    }
    const info = yield* Effect.option(fs.stat(absolute))
    if (info._tag === "Some" && info.value.type === "Directory") return yield* refuse("it is a directory")
    return absolute
  })

/**
 * Writes `text` to `target` atomically: a new file created exclusively
 * beside it (never through a link that is there), written and synced, then
 * renamed over it, so a reader sees the old file or the new one, whole. The
 * temporary name does not end in `.prom`, so the textfile collector never
 * reads it. A failure removes the temporary file.
 */
const writeAtomically = (target: string, text: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const suffix = (yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)
    const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${suffix}.tmp`)
    yield* Effect.scoped(
      Effect.gen(function* () {
        const file = yield* fs.open(temporary, { flag: "wx", mode: 0o644 })
        yield* file.writeAll(new TextEncoder().encode(text))
        yield* file.sync
      })
    ).pipe(
      Effect.andThen(fs.rename(temporary, target)),
      Effect.tapError(() => Effect.ignore(fs.remove(temporary, { force: true })))
    )
  })

/**
 * Runs `run` (a whole `hostnode` run, `argv` its words) with the logs and
 * metrics its flags ask for: the loggers, the console of JSON lines, a
 * registry of its own, and the metrics file written when it ends, whatever
 * its outcome. A metrics file that cannot be written is said on stderr and
 * makes a run that succeeded exit 1.
 */
export const observe =
  (argv: ReadonlyArray<string>) =>
  <A, R>(run: Effect.Effect<A, CliExit, R>): Effect.Effect<A, CliExit, R | FileSystem.FileSystem | Path.Path> =>
    Effect.gen(function* () {
      const { logFormat, metricsFile } = observedOf(argv)
      const base = yield* Console.Console
      const clock = yield* Clock.Clock
      const stderr = (line: string) => base.error(line)
      const console = logFormat === "json" ? jsonConsole(base, () => clock.currentTimeMillisUnsafe()) : base
      const say = (line: string) => Effect.sync(() => console.error(line))
      const target = metricsFile === undefined ? undefined : yield* decodeMetricsFile(metricsFile, say)
      const registry: Metric.MetricRegistry = new Map()
      // The console logger becomes one line (or one JSON object) per entry; the others (a tracer's) stay.
      const current = yield* Logger.CurrentLoggers
      const loggers = new Set([...current].filter((l) => l !== Logger.defaultLogger && l !== Progress.lineLogger))
      loggers.add(logFormat === "json" ? jsonLogger(stderr) : Progress.lineLogger)
      let program = run.pipe(
        Effect.provideService(Logger.CurrentLoggers, loggers),
        Effect.provideService(Metric.MetricRegistry, registry)
      )
      if (logFormat === "json") {
        program = program.pipe(
          Effect.provideService(Console.Console, console),
          Effect.provideService(Progress.Progress, noProgress)
        )
      }
      const exit = yield* Effect.exit(program)
      if (target === undefined) return yield* exit
      const failure = Exit.isSuccess(exit) ? undefined : Cause.findErrorOption(exit.cause)
      const code = failure === undefined ? 0 : failure._tag === "Some" ? failure.value.code : ExitCodes.failed
      const written = yield* Effect.exit(
        Effect.gen(function* () {
          yield* Metric.update(exitCodeGauge, code)
          yield* Metric.update(finishedGauge, (yield* Clock.currentTimeMillis) / 1000)
          yield* writeAtomically(target, yield* PrometheusMetrics.format())
        }).pipe(Effect.provideService(Metric.MetricRegistry, registry))
      )
      if (Exit.isFailure(written)) {
        yield* say(
          `hostnode: the metrics could not be written to ${target}: ${Cause.pretty(written.cause).split("\n")[0]}`
        )
        if (Exit.isSuccess(exit)) return yield* new CliExit({ code: ExitCodes.failed })
      }
      return yield* exit
    })
