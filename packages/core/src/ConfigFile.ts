/**
 * Reading and decoding the agent's configuration (the agent configuration,
 * a node start, a goal state, download overrides) with errors that point at
 * the field: which file, which field (`localDns.interfaceKind`, `units[1]`)
 * and what was wrong with it, for all the wrong fields one decoding pass finds
 * (a check on a converted value, such as a duration's sign, is reported once
 * the fields around it decode).
 *
 * Boundary: this module turns text or unknown input into a decoded value or
 * one of three typed errors (the file is missing, unreadable, or invalid). It
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
 * Why a configuration document was rejected: not JSON at all, or JSON with wrong fields.
 *
 * @since 0.1.0
 */
export const InvalidConfigReason = Schema.Literals(["InvalidJson", "InvalidValue"])

/**
 * Why a configuration document was rejected.
 *
 * @since 0.1.0
 */
export type InvalidConfigReason = typeof InvalidConfigReason.Type

/**
 * A configuration document that is not what its schema says. `field` is the
 * first wrong field (what a person fixes first), `issues` lists every one.
 * `file` is empty when the document did not come from a file.
 *
 * @since 0.1.0
 */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  reason: InvalidConfigReason,
  what: Schema.String,
  file: Schema.String,
  field: Schema.String,
  issues: Schema.Array(FieldIssue)
}) {
  override get message(): string {
    return `invalid ${this.what}${this.file === "" ? "" : ` in ${this.file}`}: ${formatIssues(this.issues)}`
  }
}

/**
 * A configuration file that does not exist. Distinct from {@link InvalidConfig}: a caller may fall back to defaults for a missing file, never for a broken one.
 *
 * @since 0.1.0
 */
export class ConfigNotFound extends Schema.TaggedError<ConfigNotFound>()("ConfigNotFound", {
  what: Schema.String,
  file: Schema.String
}) {
  override get message(): string {
    return `${this.what} not found: ${this.file} does not exist`
  }
}

/**
 * A configuration file that exists but cannot be read (permissions, a directory in its place, an I/O error).
 *
 * @since 0.1.0
 */
export class ConfigUnreadable extends Schema.TaggedError<ConfigUnreadable>()("ConfigUnreadable", {
  what: Schema.String,
  file: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `cannot read ${this.what} from ${this.file}: ${this.detail}`
  }
}

/**
 * Every error {@link read} can fail with.
 *
 * @since 0.1.0
 */
export type ReadError = InvalidConfig | ConfigNotFound | ConfigUnreadable

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
  (input: unknown): Effect.Effect<A, InvalidConfig, RD> =>
    Schema.decodeUnknownEffect(
      schema,
      parseOptions
    )(input).pipe(
      Effect.mapError((e) => {
        const issues = issuesOf(e)
        return new InvalidConfig({ reason: "InvalidValue", what, file, field: issues[0]?.field ?? "", issues })
      })
    )

/**
 * Parses `text` as JSON and decodes it with `schema`. Text that is not JSON is
 * an {@link InvalidConfig} with reason `InvalidJson` and the parser's own
 * message (which says where it stopped).
 *
 * @since 0.1.0
 */
export const decodeJson =
  <A, RD>(schema: Schema.Decoder<A, RD>, what: string, file = "") =>
  (text: string): Effect.Effect<A, InvalidConfig, RD> =>
    Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (e) =>
        new InvalidConfig({
          reason: "InvalidJson",
          what,
          file,
          field: "",
          issues: [{ field: "", message: `not JSON: ${e instanceof Error ? e.message : String(e)}` }]
        })
    }).pipe(Effect.flatMap(decodeUnknown(schema, what, file)))

/**
 * Maps a failed read of `file` to {@link ConfigNotFound} or {@link ConfigUnreadable}.
 *
 * @since 0.1.0
 */
export const readFailure = (what: string, file: string, e: PlatformError): ConfigNotFound | ConfigUnreadable =>
  e.reason._tag === "NotFound"
    ? new ConfigNotFound({ what, file })
    : new ConfigUnreadable({ what, file, detail: e.message })

/**
 * Reads the JSON file at `path` and decodes it with `schema`. A missing file,
 * an unreadable one and an invalid one are three different errors.
 *
 * @since 0.1.0
 */
export const read =
  <A, RD>(schema: Schema.Decoder<A, RD>, what: string) =>
  (path: string): Effect.Effect<A, ReadError, RD | FileSystem.FileSystem> =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const text = yield* fs.readFileString(path).pipe(Effect.mapError((e) => readFailure(what, path, e)))
      return yield* decodeJson(schema, what, path)(text)
    })
