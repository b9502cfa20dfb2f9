/**
 * Reading and decoding configuration documents strictly, every wrong field
 * reported (`ConfigFile`'s errors): what `AgentConfig`, `NodeStart` and
 * `GoalState` read their documents with.
 *
 * @since 0.4.0
 */
import { Effect, FileSystem, Schema } from "effect"
import type { PlatformError } from "effect/PlatformError"
import { ConfigError, InvalidJson, InvalidValue, Unavailable } from "../../ConfigFile.ts"
import { issuesOf } from "./issues.ts"

/** The `file` key of a reason: absent for `""` (no file was involved). */
const fileKey = (file: string): { readonly file?: string } => (file === "" ? {} : { file })

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

/**
 * Decodes `input` with `schema`, strictly (unknown keys are errors) and
 * reporting every wrong field. `what` names the document in the error
 * ("AgentConfig"), `file` where it came from.
 */
export const decodeUnknown =
  <A, RD>(schema: Schema.Decoder<A, RD>, what: string, file = "") =>
  (input: unknown): Effect.Effect<A, ConfigError, RD> =>
    Schema.decodeUnknownEffect(
      schema,
      parseOptions
    )(input).pipe(
      Effect.mapError((e) => {
        const issues = issuesOf(e)
        return new ConfigError({
          what,
          reason: new InvalidValue({ ...fileKey(file), field: issues[0]?.field ?? "", issues })
        })
      })
    )

/**
 * Parses `text` as JSON and decodes it with `schema`. Text that is not JSON is
 * a {@link ConfigError} with reason {@link InvalidJson} and the parser's own
 * message (which says where it stopped).
 */
export const decodeJson =
  <A, RD>(schema: Schema.Decoder<A, RD>, what: string, file = "") =>
  (text: string): Effect.Effect<A, ConfigError, RD> =>
    Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (e) =>
        new ConfigError({
          what,
          reason: new InvalidJson({
            ...fileKey(file),
            issues: [{ field: "", message: `not JSON: ${e instanceof Error ? e.message : String(e)}` }]
          })
        })
    }).pipe(Effect.flatMap(decodeUnknown(schema, what, file)))

/**
 * Reads the JSON file at `path` and decodes it with `schema`. A missing file,
 * an unreadable one and an invalid one are different reasons of the
 * {@link ConfigError}.
 */
export const read = <A, RD>(
  schema: Schema.Decoder<A, RD>,
  what: string
): ((path: string) => Effect.Effect<A, ConfigError, RD | FileSystem.FileSystem>) =>
  Effect.fn("ConfigFile.read")(function* (path: string) {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(Effect.mapError((e) => readFailure(what, path, e)))
    return yield* decodeJson(schema, what, path)(text)
  })

/**
 * Maps a failed read of `file` to a `ConfigError` with reason `NotFound` or `Unreadable`.
 */
export const readFailure = (what: string, file: string, e: PlatformError): ConfigError =>
  new ConfigError({
    what,
    reason:
      e.reason._tag === "NotFound"
        ? new Unavailable({ _tag: "NotFound", file })
        : new Unavailable({ _tag: "Unreadable", file, detail: e.message })
  })
