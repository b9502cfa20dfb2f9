/**
 * Running a command tree over `argv`: `help` as `--help`, usage errors as one
 * line (or one JSON document), defects as internal errors, logs to stderr.
 * Boundary: the run around the tree; `Cli.run` runs the library's tree (the
 * host's services left to the caller), the executable one whose commands load
 * the real host's as they run.
 */
import * as Console from "effect/Console"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as Path from "effect/Path"
import { CliExit, ExitCodes } from "../../CliExit.ts"
import { helpAsFlag, helpOfKnown, presenter, suggestionsOf, usageText, wantsJson } from "./argv.ts"
import { observedOf } from "./flags.ts"

/** `tree` run over `argv` as `Cli.run` runs the library's tree and `bin.ts` the executable's (see the module header). */
export const runTree =
  <Name extends string, I, R>(
    tree: Command.Command<Name, I, {}, CliExit, R>,
    version: string,
    options?: {
      /**
       * Where `--metrics-file` is written: the executable's real file system (its
       * commands get theirs as they run); the library's run uses the one in context.
       */
      readonly observeWith?: Layer.Layer<FileSystem.FileSystem | Path.Path> | undefined
    }
  ) =>
  (given: ReadonlyArray<string>): Effect.Effect<void, CliExit, R | Command.Environment> => {
    const argv = helpOfKnown(tree, helpAsFlag(given))
    const json = wantsJson(argv)
    const observed = observedOf(argv)
    const run = Command.runWith(tree, { version })(argv).pipe(
      Effect.catch((error) =>
        error instanceof CliExit
          ? Effect.fail(error)
          : error._tag === "ShowHelp" && error.errors.length === 0
            ? Effect.void
            : (json
                ? Console.log(
                    JSON.stringify({
                      ok: false,
                      command: null,
                      error: {
                        _tag: "UsageError",
                        cause: error._tag === "ShowHelp" ? (error.errors[0]?._tag ?? error._tag) : error._tag,
                        message: usageText(error),
                        ...(suggestionsOf(error).length === 0 ? {} : { suggestions: suggestionsOf(error) }),
                        hint: `see \`${error._tag === "ShowHelp" ? error.commandPath.join(" ") : "hostnode"} --help\``
                      }
                    })
                  )
                : Effect.void
              ).pipe(Effect.andThen(Effect.fail(new CliExit({ code: ExitCodes.badInput }))))
      ),
      Effect.catchDefect((defect) => {
        const message = defect instanceof Error ? defect.message : String(defect)
        return (
          json
            ? Console.log(
                JSON.stringify({
                  ok: false,
                  command: null,
                  error: {
                    _tag: "InternalError",
                    message,
                    hint: "this is a bug in hostnode; please report it with the command line"
                  }
                })
              )
            : Console.error(`hostnode: internal error (a bug in hostnode; please report it): ${message}`)
        ).pipe(Effect.andThen(Effect.fail(new CliExit({ code: ExitCodes.failed }))))
      }),
      Effect.provide(CliOutput.layerPresenter(presenter(json))),
      Effect.provideService(Logger.LogToStderr, true)
    )
    // JSON log lines and the metrics file wrap the whole run (a usage error is a JSON line too);
    // loaded only when asked for, so `--help` stays light.
    return observed.logFormat === "json" || observed.metricsFile !== undefined
      ? Effect.flatMap(
          Effect.promise(() => import("./observe.ts")),
          (m) =>
            options?.observeWith === undefined
              ? m.observe(argv)(run)
              : Effect.provide(m.observe(argv)(run), options.observeWith)
        )
      : run
  }
