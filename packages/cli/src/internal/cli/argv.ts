/**
 * The command line before and around the parser: parse errors as one line
 * with suggestions, `help` as `--help`, whether a run wants JSON (decided
 * from argv before parsing, so even a usage error is one document), and the
 * presenter of help and version. Boundary: words of argv only; no command
 * runs here.
 */
import * as Console from "effect/Console"
import type * as CliError from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"
import type * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"

/**
 * A parse error on one line: effect/cli puts a suggestion on lines of its
 * own ("Did you mean this?"); here it ends the sentence instead.
 */
const parseErrorLine = (error: CliError.CliError): string => {
  const suggestions = suggestionsFor(error)
  const [first = ""] = error.message.split("\n\n")
  return suggestions.length === 0 ? first : `${first}; did you mean ${suggestions.join(" or ")}?`
}

/** The global flags a person types, for suggestions: effect/cli suggests only the subcommand's own flags. */
const globalFlagNames = [
  "--help",
  "--version",
  "--log-level",
  "--host-root",
  "--container",
  "--allow-own-namespace",
  "--json",
  "--dry-run",
  "--timeout",
  "--log-format",
  "--metrics-file"
]

/** The edit distance between two words (insertions, deletions, substitutions). */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = row
  }
  return previous[b.length] ?? 0
}

/** What a parse error suggests instead: effect/cli's own, else a global flag within two edits of an unknown one. */
const suggestionsFor = (error: CliError.CliError): ReadonlyArray<string> => {
  const own = "suggestions" in error ? error.suggestions : []
  if (own.length > 0 || error._tag !== "UnrecognizedOption") return own
  const [given = ""] = error.option.split("=")
  return globalFlagNames.filter((name) => distance(name, given) <= 2)
}

const parseErrors = (error: CliError.CliError): ReadonlyArray<CliError.CliError> =>
  error._tag === "ShowHelp" ? error.errors : [error]

export const usageText = (error: CliError.CliError): string => parseErrors(error).map(parseErrorLine).join("; ")

/** A parse error's suggestions, for the JSON document. */
export const suggestionsOf = (error: CliError.CliError): ReadonlyArray<string> =>
  parseErrors(error).flatMap(suggestionsFor)

/** The arguments before `--`: the only place a global flag such as `--json` can be. */
const flagWords = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const end = argv.indexOf("--")
  return end === -1 ? argv : argv.slice(0, end)
}

/**
 * `--help` after a subcommand that does not exist (`hostnode bogus --help`,
 * `hostnode help bogus`) would print the parent's help and exit 0, hiding
 * the typo: without `--help`, the parser names the unknown subcommand (and
 * the one meant), exit 2.
 */
export const helpOfKnown = (root: Command.Command.Any, argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const words = flagWords(argv)
  if (!words.some((w) => w === "--help" || w === "-h")) return argv
  let node: Command.Command.Any = root
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? ""
    if (word.startsWith("-")) {
      if (valueFlags.has(word)) i++
      continue
    }
    const children = node.subcommands.flatMap((group) => group.commands)
    // A command without subcommands: the rest are its arguments.
    if (children.length === 0) return argv
    const child = children.find((c) => c.name === word)
    if (child === undefined) {
      return [...words.filter((w) => w !== "--help" && w !== "-h"), ...argv.slice(words.length)]
    }
    node = child
  }
  return argv
}

/** The words effect/cli reads as a boolean flag's value (`--json=on`, `--json false`). */
const trueWords: ReadonlySet<string> = new Set(["true", "1", "y", "yes", "on"])
const falseWords: ReadonlySet<string> = new Set(["false", "0", "n", "no", "off"])

/**
 * Whether `argv` asks for JSON as effect/cli will read it (`--json`,
 * `--json=on`, `--json true`; not `--json=false` or `--json false`), so a
 * usage error, which the parser reports before `--json` reaches the command,
 * is printed the way the command would print its outcome.
 */
export const wantsJson = (argv: ReadonlyArray<string>): boolean => {
  const words = flagWords(argv)
  let json = false
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? ""
    if (word.startsWith("--json=")) json = trueWords.has(word.slice("--json=".length).toLowerCase())
    else if (word === "--json") {
      const next = (words[i + 1] ?? "").toLowerCase()
      json = !falseWords.has(next)
      if (trueWords.has(next) || falseWords.has(next)) i++
    }
  }
  return json
}

/**
 * Help and version go to stdout as effect/cli renders them; an invalid
 * invocation is one line on stderr (what was wrong, and where to read more)
 * instead of the whole help text; with `--json` nothing is presented, since
 * {@link run} prints the one document itself.
 */
export const presenter = (json: boolean): CliOutput.Presenter => ({
  present: (event) => {
    if (json) {
      // Help and the version are a run's result too: one document. An invalid invocation's is printed by `run`.
      if (event._tag === "Version") {
        return Console.log(
          JSON.stringify({ ok: true, command: "version", result: { name: event.name, version: event.version } })
        )
      }
      if (event._tag === "Help" && event.reason === "Requested") {
        const help = CliOutput.defaultFormatter({ colors: false }).formatHelpDoc(event.helpDoc)
        return Console.log(
          JSON.stringify({ ok: true, command: "help", result: { command: event.commandPath.join(" "), help } })
        )
      }
      return Effect.void
    }
    if (event._tag !== "InvalidInvocation") return CliOutput.defaultPresenter.present(event)
    const path = event.commandPath.join(" ")
    return Console.error(`${path}: ${event.errors.map(parseErrorLine).join("; ")} (see \`${path} --help\`)`)
  }
})

/** The global flags that take a value in the next word. */
const valueFlags: ReadonlySet<string> = new Set([
  "--host-root",
  "--container",
  "--log-level",
  "--completions",
  "--timeout",
  "--log-format",
  "--metrics-file"
])

/**
 * `hostnode help [SUBCOMMAND...]` as `hostnode [SUBCOMMAND...] --help`: the
 * word a newcomer tries first. Only `help` in the subcommand's place counts
 * (not the value of a flag, not an argument after a subcommand).
 */
export const helpAsFlag = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? ""
    if (word === "--") return argv
    if (word.startsWith("-")) {
      if (valueFlags.has(word)) i++
      continue
    }
    return word === "help" ? [...argv.slice(0, i), ...argv.slice(i + 1), "--help"] : argv
  }
  return argv
}
