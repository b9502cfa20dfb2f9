/**
 * Reading and decoding configuration documents (the agent configuration, a
 * node start, a goal state, download overrides) with errors that name the
 * file, every wrong field (`localDns.interfaceKind`, `units[1]`) and what was
 * wrong with it. Decoding is strict: a key the schema does not know is an
 * error, so a typo in a configuration file is reported, not ignored. What the
 * schemas mean lives with the models.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Schema } from "effect"
import type { PlatformError } from "effect/PlatformError"
import { formatIssues, issuesOf } from "./internal/configFile/issues.ts"

/**
 * One wrong field: its path (`""` for the document itself) and what was wrong with it.
 *
 * @since 0.1.0
 * @category models
 */
export const FieldIssue = Schema.Struct({
  field: Schema.String,
  message: Schema.String
})

/**
 * The type of {@link FieldIssue}.
 *
 * @since 0.1.0
 * @category models
 */
export type FieldIssue = typeof FieldIssue.Type

/**
 * The configuration file is not there to read: `NotFound` (it does not
 * exist; a caller may fall back to defaults for a missing file, never for a
 * broken one) or `Unreadable` (permissions, a directory in its place, an I/O
 * error; `detail` says what the file system said).
 *
 * @since 0.4.0
 * @category errors
 */
export class Unavailable extends Schema.Error<Unavailable>("@hostnode/core/ConfigFile/Unavailable")({
  _tag: Schema.Literals(["NotFound", "Unreadable"]),
  file: Schema.String,
  detail: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    return this.detail === undefined ? `${this.file} does not exist` : `${this.file}: ${this.detail}`
  }
}

/**
 * The document is not JSON at all; the one issue carries the parser's own
 * message (which says where it stopped). `file` is absent when the text did
 * not come from a file.
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidJson extends Schema.TaggedError<InvalidJson>()("InvalidJson", {
  file: Schema.optionalKey(Schema.String),
  issues: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return formatIssues(this.issues)
  }
}

/**
 * The document is JSON with wrong fields. `field` is the first wrong field
 * (what a person fixes first), `issues` lists every one. `file` is absent
 * when the document did not come from a file.
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidValue extends Schema.TaggedError<InvalidValue>()("InvalidValue", {
  file: Schema.optionalKey(Schema.String),
  field: Schema.String,
  issues: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return formatIssues(this.issues)
  }
}

/**
 * A configuration document (`what`: "AgentConfig", "NodeStart", ...) that
 * could not be used; `reason` says why and carries the file and fields
 * involved. Every way {@link read} and the decoders fail.
 *
 * @since 0.3.0
 * @category errors
 */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  reason: Schema.Union([Unavailable, InvalidJson, InvalidValue]),
  /** The document, as the errors call it. */
  what: Schema.String
}) {
  override get message(): string {
    switch (this.reason._tag) {
      case "NotFound":
        return `${this.what} not found: ${this.reason.message}`
      case "Unreadable":
        return `cannot read ${this.what} from ${this.reason.message}`
      default:
        return `invalid ${this.what}${this.reason.file === undefined ? "" : ` in ${this.reason.file}`}: ${this.reason.message}`
    }
  }
}

/** The `file` key of a reason: absent for `""` (no file was involved). */
const fileKey = (file: string): { readonly file?: string } => (file === "" ? {} : { file })

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

/**
 * Decodes `input` with `schema`, strictly (unknown keys are errors) and
 * reporting every wrong field. `what` names the document in the error
 * ("AgentConfig"), `file` where it came from.
 *
 * @since 0.1.0
 * @category operations
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
 *
 * @since 0.1.0
 * @category operations
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
 * Maps a failed read of `file` to a {@link ConfigError} with reason `NotFound` or `Unreadable`.
 */
const readFailure = (what: string, file: string, e: PlatformError): ConfigError =>
  new ConfigError({
    what,
    reason:
      e.reason._tag === "NotFound"
        ? new Unavailable({ _tag: "NotFound", file })
        : new Unavailable({ _tag: "Unreadable", file, detail: e.message })
  })

/**
 * Reads the JSON file at `path` and decodes it with `schema`. A missing file,
 * an unreadable one and an invalid one are different reasons of the
 * {@link ConfigError}.
 *
 * @since 0.1.0
 * @category operations
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
