/**
 * Reading and decoding the agent's configuration (the agent configuration,
 * a node start, a goal state, download overrides) with errors that point at
 * the field: which file, which field (`localDns.interfaceKind`, `units[1]`)
 * and what was wrong with it, for all the wrong fields one decoding pass finds
 * (a check on a converted value, such as a duration's sign, is reported once
 * the fields around it decode).
 *
 * Boundary: this module turns text or unknown input into a decoded value or
 * a `ConfigError` whose reason says what went wrong (the file is missing,
 * unreadable, not JSON, or has wrong fields). It
 * knows nothing of what the schemas mean; those live with the models.
 * Decoding is strict: a key the schema does not know is an error, so a typo in
 * a configuration file is reported rather than silently ignored.
 *
 * @since 0.1.0
 */
import { Effect, FileSystem, Schema, SchemaIssue } from "effect"
import type { PlatformError } from "effect/PlatformError"

/**
 * One wrong field: its path (`""` for the document itself) and what was wrong with it.
 *
 * @since 0.1.0
 */
export const FieldIssue = Schema.Struct({
  field: Schema.String,
  message: Schema.String
})

/**
 * One wrong field.
 *
 * @since 0.1.0
 */
export type FieldIssue = typeof FieldIssue.Type

/**
 * The configuration file does not exist. A caller may fall back to defaults
 * for a missing file, never for a broken one.
 *
 * @since 0.3.0
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  file: Schema.String
}) {
  override get message(): string {
    return `${this.file} does not exist`
  }
}

/**
 * The configuration file exists but cannot be read (permissions, a directory in its place, an I/O error).
 *
 * @since 0.3.0
 */
export class Unreadable extends Schema.TaggedError<Unreadable>()("Unreadable", {
  file: Schema.String,
  /** What the file system said. */
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.file}: ${this.detail}`
  }
}

/**
 * The document is not JSON at all; the one issue carries the parser's own
 * message (which says where it stopped). `file` is absent when the text did
 * not come from a file.
 *
 * @since 0.3.0
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
 * Why a configuration document could not be used: missing, unreadable, not JSON, or wrong fields.
 *
 * @since 0.3.0
 */
export const ConfigErrorReason = Schema.Union([NotFound, Unreadable, InvalidJson, InvalidValue])

/**
 * Why a configuration document could not be used.
 *
 * @since 0.3.0
 */
export type ConfigErrorReason = typeof ConfigErrorReason.Type

/**
 * A configuration document (`what`: "AgentConfig", "NodeStart", ...) that
 * could not be used; `reason` says why and carries the file and fields
 * involved. Every way {@link read} and the decoders fail.
 *
 * @since 0.3.0
 */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  reason: ConfigErrorReason,
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

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * A field path as a person writes it: `localDns.nodeListener`, `units[1]`,
 * `artifacts["kube-proxy"].url`. The empty path is `""`.
 *
 * @since 0.1.0
 */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`
    else if (typeof key === "string" && identifier.test(key)) out += out === "" ? key : `.${key}`
    else out += `[${JSON.stringify(String(key))}]`
  }
  return out
}

/**
 * The issues for a person: the first five, `field: message`, and how many more.
 *
 * @since 0.1.0
 */
export const formatIssues = (issues: ReadonlyArray<FieldIssue>): string => {
  const shown = issues
    .slice(0, 5)
    .map((i) => (i.field === "" ? i.message : `${i.field}: ${i.message}`))
    .join("; ")
  return issues.length > 5 ? `${shown}; and ${issues.length - 5} more` : shown
}

const standard = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * The wrong fields a `SchemaError` describes, each with its path.
 *
 * @since 0.1.0
 */
export const issuesOf = (error: Schema.SchemaError): Array<FieldIssue> => {
  const issues = standard(error.issue).issues.map((i) => ({
    field: formatPath((i.path ?? []).map((p) => (typeof p === "object" && p !== null && "key" in p ? p.key : p))),
    message: i.message
  }))
  return issues.length > 0 ? issues : [{ field: "", message: error.message }]
}

const parseOptions = { errors: "all", onExcessProperty: "error" } as const

/**
 * Decodes `input` with `schema`, strictly (unknown keys are errors) and
 * reporting every wrong field. `what` names the document in the error
 * ("AgentConfig"), `file` where it came from.
 *
 * @since 0.1.0
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
 * Maps a failed read of `file` to a {@link ConfigError} with reason {@link NotFound} or {@link Unreadable}.
 *
 * @since 0.1.0
 */
export const readFailure = (what: string, file: string, e: PlatformError): ConfigError =>
  new ConfigError({
    what,
    reason: e.reason._tag === "NotFound" ? new NotFound({ file }) : new Unreadable({ file, detail: e.message })
  })

/**
 * Reads the JSON file at `path` and decodes it with `schema`. A missing file,
 * an unreadable one and an invalid one are different reasons of the
 * {@link ConfigError}.
 *
 * @since 0.1.0
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
