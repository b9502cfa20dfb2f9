/**
 * Wrong fields for a person: a field path as it is written, the issues of a
 * `SchemaError`, and their summary in a message.
 *
 * @since 0.4.0
 */
import { Schema, SchemaIssue } from "effect"

/** One wrong field: its path (`""` for the document itself) and what was wrong with it. */
export const FieldIssue = Schema.Struct({
  field: Schema.String,
  message: Schema.String
})

type FieldIssue = typeof FieldIssue.Type

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * A field path as a person writes it: `localDns.nodeListener`, `units[1]`,
 * `artifacts["kube-proxy"].url`. The empty path is `""`.
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
 */
export const issuesOf = (error: Schema.SchemaError): Array<FieldIssue> => {
  const issues = standard(error.issue).issues.map((i) => ({
    field: formatPath((i.path ?? []).map((p) => (typeof p === "object" && p !== null && "key" in p ? p.key : p))),
    message: i.message
  }))
  return issues.length > 0 ? issues : [{ field: "", message: error.message }]
}
