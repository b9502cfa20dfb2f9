/**
 * Runs the command tree in-process, as `bin.ts` would, and collects what it
 * printed and the exit code `runMain` would use. Shared by the CLI's tests.
 */
import { Cli } from "@hostnode/cli"
import { DnsResolvers, IsolationBackend } from "@hostnode/core"
import { Effect, Exit, Layer, Runtime, Stdio, Terminal } from "effect"
import { TestConsole } from "effect/testing"

/** The parts of the CLI's environment a test supplies: no real stdin, an 80-column terminal. */
export const cliEnvironment = Layer.mergeAll(
  Stdio.layerTest({}),
  Layer.succeed(
    Terminal.Terminal,
    Terminal.make({
      columns: Effect.succeed(80),
      rows: Effect.succeed(24),
      size: Effect.die("unused"),
      readInput: Effect.die("unused"),
      readLine: Effect.die("unused"),
      display: () => Effect.void
    })
  )
)

/** The process exit code `runMain` would use for `exit`. */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  const error = Exit.findErrorOption(exit)
  return error._tag === "Some" ? Runtime.getErrorExitCode(error.value) : 1
}

/** What one run printed (only the lines of this run) and how it ended. */
export interface Outcome {
  readonly code: number
  readonly stdout: ReadonlyArray<string>
  readonly stderr: ReadonlyArray<string>
}

/**
 * Runs `hostnode ARGV` on the services in context. The test's console must be
 * a `TestConsole` (`it.effect` provides one); lines printed before the call
 * are not part of its outcome.
 */
export const runCli = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const outBefore = (yield* TestConsole.logLines).length
    const errBefore = (yield* TestConsole.errorLines).length
    const exit = yield* Effect.exit(Cli.run(argv))
    const stdout = (yield* TestConsole.logLines).slice(outBefore).map(String)
    const stderr = (yield* TestConsole.errorLines).slice(errBefore).map(String)
    return { code: exitCodeOf(exit), stdout, stderr } satisfies Outcome
  })

/** Runs `hostnode --json ARGV` and returns its one JSON document (failing the test unless there is exactly one). */
export const runJson = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const outcome = yield* runCli(["--json", ...argv])
    if (outcome.stdout.length !== 1) {
      return yield* Effect.die(
        new Error(
          `hostnode --json ${argv.join(" ")} printed ${outcome.stdout.length} lines:\n${outcome.stdout.join("\n")}`
        )
      )
    }
    // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON document, inspected field by field by the tests
    const doc: any = JSON.parse(outcome.stdout[0] ?? "")
    return { code: outcome.code, doc, stderr: outcome.stderr }
  })

/** An isolation backend for suites that never ask whether the node runs: asking is a defect. */
export const refusedIsolation = Layer.succeed(
  IsolationBackend.IsolationBackend,
  IsolationBackend.IsolationBackend.of({
    name: "refused",
    running: () => Effect.die(new Error("running is not part of this suite"))
  })
)

/** DNS resolvers for suites that never query DNS: a query is a defect. */
export const refusedDns = Layer.succeed(
  DnsResolvers.DnsResolvers,
  DnsResolvers.DnsResolvers.of({
    forServer: () => Effect.die(new Error("DNS is not part of this suite")),
    classify: () => new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail: "DNS is not part of this suite" })
  })
)
