/**
 * A group run without its subcommand (`hostnode snapshot`): bad usage, exit
 * 2, naming the subcommands it takes. Loaded only then, since the typed
 * error it prints is not needed for `--help` or `--version`.
 */
import { Console, Effect } from "effect"
import { CliExit, ExitCodes } from "../../../CliExit.ts"
import { errorJson, inputErrorLine, MissingSubcommand, UsageError } from "../errors.ts"
import { Json } from "../flags.ts"

/** Refuses `group` without one of its `subcommands`. */
export const missingSubcommand = (group: string, subcommands: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const error = new UsageError({
      reason: new MissingSubcommand({ group, subcommands }),
      fix: `see \`hostnode ${group} --help\``
    })
    yield* (yield* Json)
      ? Console.log(JSON.stringify({ ok: false, command: group, error: errorJson(error) }))
      : Console.error(inputErrorLine(group, error))
    return yield* new CliExit({ code: ExitCodes.badInput })
  })
