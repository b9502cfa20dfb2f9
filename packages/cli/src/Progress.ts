/**
 * Progress of long work (hundreds of unmounts, a snapshot of many files) on a
 * terminal. Like `--dry-run`, it is a layer that wraps the services an
 * operation uses (the Mounter, the FileSystem and the directory handles): it
 * counts unmounts, files opened and paths removed as they
 * happen and shows the counts on one line that it redraws, at most ten times
 * a second. The operations know nothing about it.
 *
 * Boundary: where the line goes is the {@link Progress} service. `bin.ts`
 * provides {@link layerTerminal} only when stdout and stderr are terminals,
 * and the CLI never wraps a `--json` run, so a pipe or a machine reading JSON
 * sees nothing extra.
 *
 * @since 0.1.0
 */
import { Directory, Mounter } from "@hostnode/core"
import { Clock, Context, Effect, FileSystem, Layer, Logger } from "effect"

/**
 * Where progress lines go. `show` replaces the line shown; `clear` removes it
 * before the result is printed; `beforeLog` removes it, synchronously, right
 * before a log line is written to the same terminal, so a warning never lands
 * in the middle of a half-drawn line (loggers are synchronous, hence the
 * plain function).
 *
 * @since 0.1.0
 */
export class Progress extends Context.Service<
  Progress,
  {
    readonly show: (line: string) => Effect.Effect<void>
    readonly clear: Effect.Effect<void>
    readonly beforeLog: () => void
  }
>()("@hostnode/cli/Progress") {}

/**
 * Progress on the terminal behind stderr, one line redrawn in place (carriage return, erase line).
 *
 * @since 0.1.0
 */
export const layerTerminal: Layer.Layer<Progress> = Layer.succeed(
  Progress,
  Progress.of({
    show: (line) =>
      Effect.sync(() => {
        process.stderr.write(`\r\x1b[2K${line}`)
      }),
    clear: Effect.sync(() => {
      process.stderr.write("\r\x1b[2K")
    }),
    beforeLog: () => {
      process.stderr.write("\r\x1b[2K")
    }
  })
)

/**
 * The loggers in context, each made to call `progress.beforeLog` first: the
 * progress line is cleared before every log line. It is drawn again at the
 * next count.
 *
 * @since 0.2.0
 */
export const clearingLoggers = (progress: Progress["Service"]) =>
  Effect.map(Effect.service(Logger.CurrentLoggers), (loggers) => {
    const wrapped = new Set<Logger.Logger<unknown, unknown>>()
    for (const logger of loggers) {
      wrapped.add(
        Logger.make((options) => {
          progress.beforeLog()
          return logger.log(options)
        })
      )
    }
    return wrapped
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
 *
 * @since 0.1.0
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
            )
        })
      )
    })
  )
