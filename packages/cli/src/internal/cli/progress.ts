/**
 * Progress of long work (hundreds of unmounts, a snapshot of many files) on a
 * terminal: a layer wrapping the services an operation uses (the Mounter, the
 * FileSystem and the directory handles) that counts unmounts, files opened and
 * paths removed, and redraws the counts on one line at most ten times a
 * second. The operations know nothing about it.
 *
 * Boundary: where the line goes is the {@link Progress} service;
 * {@link layerInteractive} draws it only when stdout and stderr are terminals,
 * and the CLI never wraps a `--json` run. While the line is shown, log lines
 * are batched by {@link clearingLoggers} and written on a cleared line.
 */
import { Directory, Mounter } from "@hostnode/core"
import {
  Cause,
  Clock,
  Console,
  Context,
  Effect,
  FileSystem,
  Formatter,
  Layer,
  Logger,
  References,
  type Scope,
  Stdio,
  Stream
} from "effect"

/**
 * Where progress lines go. `show` replaces the line shown; `clear` removes it
 * before the result is printed; `log` writes whole log lines to the same
 * terminal, removing the line shown first (and drawing it again after them),
 * so a warning never lands in the middle of a half-drawn line.
 */
export interface Progress {
  readonly show: (line: string) => Effect.Effect<void>
  readonly clear: Effect.Effect<void>
  readonly log: (lines: ReadonlyArray<string>) => Effect.Effect<void>
}

/**
 * The {@link Progress} service.
 */
export const Progress = Context.Service<Progress>("@hostnode/cli/Progress")

/** Carriage return, erase the whole line: the cursor is back at column 0 of an empty line. */
const EraseLine = "\r\x1b[2K"

/**
 * Progress on the terminal behind `Stdio`'s stderr, one line redrawn in place
 * (carriage return, erase line). A write that fails (a closed terminal) is
 * dropped: progress never fails the operation it shows.
 */
export const layerTerminal: Layer.Layer<Progress, never, Stdio.Stdio> = Layer.effect(
  Progress,
  Effect.gen(function* () {
    const stdio = yield* Stdio.Stdio
    const write = (text: string) => Effect.ignore(Stream.run(Stream.make(text), stdio.stderr()))
    // The line on screen, drawn again after log lines; undefined once cleared.
    let shown: string | undefined
    return Progress.of({
      show: (line) =>
        Effect.suspend(() => {
          shown = line
          return write(`${EraseLine}${line}`)
        }),
      clear: Effect.suspend(() => {
        shown = undefined
        return write(EraseLine)
      }),
      log: (lines) =>
        Effect.suspend(() =>
          lines.length === 0 ? Effect.void : write(`${EraseLine}${lines.map((l) => `${l}\n`).join("")}${shown ?? ""}`)
        )
    })
  })
)

/**
 * {@link layerTerminal} where a person watches, that is where `Stdio` says
 * both stdout and stderr are terminals; no progress otherwise (a pipe, a
 * file, CI). Its type provides nothing: the CLI asks for the
 * {@link Progress} service only as an option.
 */
export const layerInteractive: Layer.Layer<never, never, Stdio.Stdio> = Layer.unwrap(
  Effect.gen(function* () {
    const stdio = yield* Stdio.Stdio
    const terminals = (yield* stdio.stdoutIsTerminal) && (yield* stdio.stderrIsTerminal)
    const chosen: Layer.Layer<never, never, Stdio.Stdio> = terminals ? layerTerminal : Layer.empty
    return chosen
  })
)

/**
 * How long log lines are held while progress is shown: short enough that a
 * person sees a warning as it happens, long enough that a burst of lines is
 * written on one clearing of the progress line.
 */
const LogWindowMillis = 20

const pad = (n: number, width = 2) => n.toString().padStart(width, "0")

/**
 * One log entry as the line Effect's default logger prints
 * (`[12:00:00.000] INFO (#1) span=3ms: message {annotations}`), as a string
 * rather than written to the console: the values that are not strings are
 * shown with Effect's `Formatter`.
 */
export const logLine: Logger.Logger<unknown, string> = Logger.make(({ cause, date, fiber, logLevel, message }) => {
  const parts = (Array.isArray(message) ? message : [message]).map((m) =>
    typeof m === "string" ? m : Formatter.format(m)
  )
  if (cause.reasons.length > 0) parts.push(Cause.pretty(cause))
  const now = date.getTime()
  let spans = ""
  for (const [label, start] of fiber.getRef(References.CurrentLogSpans)) spans += ` ${label}=${now - start}ms`
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  if (Object.keys(annotations).length > 0) parts.push(Formatter.format(annotations))
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`
  return `[${time}] ${logLevel.toUpperCase()} (#${fiber.id})${spans}: ${parts.join(" ")}`
})

/**
 * {@link logLine} written to the console's stderr, one line per log entry:
 * the console logger the `hostnode` command runs with in place of Effect's
 * default one, which spreads annotations over several lines.
 */
export const lineLogger: Logger.Logger<unknown, void> = Logger.make((options) => {
  options.fiber.getRef(Console.Console).error(logLine.log(options))
})

/**
 * The loggers in context with the console logger (Effect's default logger,
 * or {@link lineLogger}) replaced by a batched one that writes through `progress.log`: log lines are
 * held for a few milliseconds, then the progress line is cleared and they are
 * written together (the progress line is drawn again after them). The other
 * loggers (the tracer's) stay as they are. When the scope closes, the lines
 * still held are written: close it before the result is printed.
 */
export const clearingLoggers = (
  progress: Progress
): Effect.Effect<ReadonlySet<Logger.Logger<unknown, unknown>>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const loggers = yield* Logger.CurrentLoggers
    const console = (logger: Logger.Logger<unknown, unknown>) =>
      logger === Logger.defaultLogger || logger === lineLogger
    if (![...loggers].some(console)) return loggers
    const batched = yield* Logger.batched(logLine, {
      window: LogWindowMillis,
      flush: (lines) => progress.log(lines)
    })
    const replaced = new Set<Logger.Logger<unknown, unknown>>([batched])
    for (const logger of loggers) if (!console(logger)) replaced.add(logger)
    return replaced
  })

/** The counts shown, in the order they appear on the line. */
interface Counts {
  unmounted: number
  files: number
  removed: number
}

const render = (label: string, c: Counts): string =>
  `${label}: ${[
    c.unmounted > 0 ? `${c.unmounted} unmounted` : undefined,
    c.files > 0 ? `${c.files} files` : undefined,
    c.removed > 0 ? `${c.removed} removed` : undefined
  ]
    .filter((part) => part !== undefined)
    .join(", ")}`

/** How often the line may be redrawn. */
const IntervalMillis = 100

/**
 * Wraps the Mounter and FileSystem in context so that each unmount, opened
 * file and removal is counted and shown under `label`.
 */
export const layer = (
  label: string
): Layer.Layer<
  Mounter.Mounter | FileSystem.FileSystem | Directory.Directories,
  never,
  Mounter.Mounter | FileSystem.FileSystem | Directory.Directories | Progress
> =>
  Layer.effectContext(
    Effect.gen(function* () {
      const progress = yield* Progress
      const mounter = yield* Mounter.Mounter
      const fs = yield* FileSystem.FileSystem
      const dirs = yield* Directory.Directories
      const counts: Counts = { unmounted: 0, files: 0, removed: 0 }
      let shownAt = Number.NEGATIVE_INFINITY
      const tick = (count: (c: Counts) => void) =>
        Effect.gen(function* () {
          count(counts)
          const now = yield* Clock.currentTimeMillis
          if (now - shownAt < IntervalMillis) return
          shownAt = now
          yield* progress.show(render(label, counts))
        })
      return Context.make(
        Mounter.Mounter,
        Mounter.Mounter.of({
          unmount: (root, targets, options) =>
            Effect.tap(mounter.unmount(root, targets, options), (results) =>
              tick((c) => {
                c.unmounted += results.filter((r) => r._tag === "Unmounted").length
              })
            )
        })
      ).pipe(
        Context.add(
          FileSystem.FileSystem,
          FileSystem.FileSystem.of({
            ...fs,
            open: (path, options) =>
              Effect.tap(fs.open(path, options), () =>
                tick((c) => {
                  c.files++
                })
              ),
            remove: (path, options) =>
              Effect.tap(fs.remove(path, options), () =>
                tick((c) => {
                  c.removed++
                })
              )
          })
        ),
        // Removals and files of the operations that work through directory handles.
        Context.add(Directory.Directories, {
          ...dirs,
          unlink: (dir, name, options) =>
            Effect.tap(dirs.unlink(dir, name, options), () =>
              tick((c) => {
                c.removed++
              })
            ),
          unlinkAll: (dir, names) =>
            Effect.tap(dirs.unlinkAll(dir, names), (outcomes) =>
              tick((c) => {
                c.removed += outcomes.filter((o) => o === undefined).length
              })
            ),
          openFile: (dir, name, options) =>
            Effect.tap(dirs.openFile(dir, name, options), () =>
              tick((c) => {
                c.files++
              })
            ),
          // The batches open files too: each file read or made counts.
          readFiles: (dir, names, maxBytes) =>
            Effect.tap(dirs.readFiles(dir, names, maxBytes), (read) =>
              tick((c) => {
                c.files += read.filter((r) => "bytes" in r).length
              })
            ),
          copyFiles: (from, files) =>
            Effect.tap(dirs.copyFiles(from, files), (r) =>
              tick((c) => {
                c.files += r.done
              })
            )
        })
      )
    })
  )
