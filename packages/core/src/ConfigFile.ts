/**
 * How reading a configuration document (the agent configuration, a node
 * start, a goal state, download overrides) fails: `ConfigError`, naming the
 * file, every wrong field (`localDns.interfaceKind`, `units[1]`) and what was
 * wrong with it. Decoding is strict: a key the schema does not know is an
 * error, so a typo in a configuration file is reported, not ignored. The
 * documents are read by the modules of their models (`AgentConfig.read`, ...).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { FieldIssue, formatIssues } from "./internal/configFile/issues.ts"

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
export class InvalidJson extends Schema.Error<InvalidJson>("@hostnode/core/ConfigFile/InvalidJson")({
  _tag: Schema.tag("InvalidJson"),
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
export class InvalidValue extends Schema.Error<InvalidValue>("@hostnode/core/ConfigFile/InvalidValue")({
  _tag: Schema.tag("InvalidValue"),
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
