/**
 * `hostnode demo`'s work, loaded only when that subcommand runs: the guided
 * run of `Demo.ts` on its own simulated node (never the host, whatever
 * `--host-root` says). Boundary: running it and printing its report.
 */
import { Console, Effect, Option, References } from "effect"
import { GlobalFlag } from "effect/cli"
import { CliExit } from "../../../CliExit.ts"
import * as Demo from "../../../Demo.ts"
import { errorJson, errorText } from "../errors.ts"
import { Json } from "../flags.ts"

/** The report as the one JSON document of `hostnode demo --json`: `ok`, the command, the steps and the summary. */
const toJson = (report: Demo.DemoReport): Record<string, unknown> => {
  const passed = report.claims.filter((c) => c.ok).length
  return {
    ok: report.ok,
    command: "demo",
    result: {
      durationMs: report.durationMs,
      steps: report.steps,
      summary: { passed, failed: report.claims.length - passed, claims: report.claims }
    }
  }
}

/**
 * Quiet unless `--log-level` is given: only warnings and errors are logged.
 * Exits 1 when a claim does not hold or a step fails.
 */
export const demo = Effect.gen(function* () {
  const json = yield* Json
  const logLevel = yield* GlobalFlag.LogLevel
  const program = Option.isSome(logLevel)
    ? Demo.run
    : Demo.run.pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))
  const result = yield* Effect.result(program)
  if (result._tag === "Failure") {
    yield* json
      ? Console.log(JSON.stringify({ ok: false, command: "demo", error: errorJson(result.failure) }))
      : Console.error(errorText("demo", result.failure))
    return yield* new CliExit({ code: 1 })
  }
  yield* Console.log(json ? JSON.stringify(toJson(result.success)) : Demo.renderText(result.success))
  if (!result.success.ok) return yield* new CliExit({ code: 1 })
})
