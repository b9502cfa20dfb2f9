/**
 * What the `hostnode` executable runs its command tree on before a command
 * is chosen, without loading any platform package: the process's main fiber
 * (`runMain`) and the services effect/cli's parser is typed to need.
 * Boundary: the process around the tree; the services a command works with
 * are given to it when it runs (`host.ts`).
 */
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Runtime from "effect/Runtime"
import * as Stdio from "effect/Stdio"
import * as Terminal from "effect/Terminal"

/**
 * The program as the process's main fiber: SIGINT and SIGTERM interrupt it,
 * and the process exits with the code of its failure (`CliExit`). The same
 * as `@effect/platform-node`'s `NodeRuntime.runMain`, built here on effect's
 * `Runtime.makeRunMain` so that `--help` and `--version` load no platform
 * package.
 */
export const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  let receivedSignal = false
  const onSignal = () => {
    receivedSignal = true
    fiber.interruptUnsafe(fiber.id)
  }
  fiber.addObserver((exit) => {
    process.removeListener("SIGINT", onSignal)
    process.removeListener("SIGTERM", onSignal)
    teardown(exit, (code) => {
      if (receivedSignal || code !== 0) process.exit(code)
    })
  })
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
})

/**
 * A stand-in for a service the parser is typed to need but does not use:
 * reading any of its members throws (a defect, which the CLI reports as an
 * internal error), so a use is a bug that cannot pass unnoticed. A proxy
 * rather than an implementation, so that the entry does not load the code
 * of effect's streams, sinks and processes the real services are made of.
 */
const standIn = <S extends object>(service: string): S =>
  new Proxy({} as S, {
    get: (_, member) => {
      if (typeof member !== "string") return undefined
      throw new Error(`${service}.${member} was used before a command was chosen (a command gets the host's own)`)
    }
  })

/**
 * The services effect/cli's parser is typed to need (`Command.Environment`)
 * while it parses, shows help or the version, or reports a usage error: a
 * real `Path` (effect's POSIX one), and stand-ins for the rest, which it does
 * not touch then (only its wizard does: see {@link wantsWizard}). A command
 * gets the real ones with the host when it runs (`host.ts`), and they take
 * precedence over these.
 */
export const layerParsing = Layer.mergeAll(
  Path.layer,
  Layer.succeed(FileSystem.FileSystem, standIn<FileSystem.FileSystem>("FileSystem")),
  Layer.succeed(Stdio.Stdio, standIn<Stdio.Stdio>("Stdio")),
  Layer.succeed(Terminal.Terminal, standIn<Terminal.Terminal>("Terminal")),
  Layer.succeed(
    ChildProcessSpawner.ChildProcessSpawner,
    standIn<ChildProcessSpawner.ChildProcessSpawner["Service"]>("ChildProcessSpawner")
  )
)

/**
 * Whether `argv` asks for effect/cli's wizard (`--wizard`), the one built-in
 * that prompts on the terminal while parsing: it needs the platform's
 * services from the start.
 */
export const wantsWizard = (argv: ReadonlyArray<string>): boolean => {
  const end = argv.indexOf("--")
  return (end === -1 ? argv : argv.slice(0, end)).some((w) => w === "--wizard" || w.startsWith("--wizard="))
}
