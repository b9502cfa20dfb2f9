/**
 * How reading a mount table fails: `MountInfoError`, with a malformed line's
 * number, field and text, or why no line is to blame. A leaf module (no
 * operations), re-exported by `MountInfo`.
 *
 * @since 0.4.0
 */
import { Schema } from "effect"

/**
 * Why: a line of the table is not a mountinfo line. `line` is 1-based;
 * `field` names the field that was wrong (`mount id`, `device`, `root`,
 * `optional field`, `separator`, ...) and `value`, when the line has that
 * field, holds its text as the table has it (clipped to 256 characters, so a
 * huge line does not make a huge error); `detail` says what was wrong.
 *
 * @since 0.3.0
 * @category errors
 */
export class Malformed extends Schema.Error<Malformed>("@hostnode/core/MountInfo/Malformed")({
  _tag: Schema.tag("Malformed"),
  line: Schema.Int,
  field: Schema.String,
  value: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return `line ${this.line}: ${this.detail}`
  }
}

/**
 * Why, when no line is to blame, with `detail` saying how: `Unreadable` (the
 * table could not be read; what the file system said), `DoesNotCover` (the
 * table does not list the mount the host root is on: an empty table, or one
 * read in another mount namespace).
 *
 * @since 0.4.0
 * @category errors
 */
export class Problem extends Schema.Error<Problem>("@hostnode/core/MountInfo/Problem")({
  _tag: Schema.Literals(["Unreadable", "DoesNotCover"]),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/**
 * A mount table at `path` that could not be read or parsed, or that does not
 * list the mount the host root is on. `reason` says which, with the facts of
 * that case (the line, field and text of a malformed line). Nothing of such
 * a table is used.
 *
 * @since 0.1.0
 * @category errors
 */
export class MountInfoError extends Schema.TaggedError<MountInfoError>()("MountInfoError", {
  reason: Schema.Union([Malformed, Problem]),
  path: Schema.String
}) {
  override get message(): string {
    const r = this.reason
    return r._tag === "Unreadable"
      ? `cannot read mount table ${this.path}: ${r.message}`
      : r._tag === "DoesNotCover"
        ? `mount table ${this.path} does not describe the host root: ${r.message}`
        : `malformed mount table ${this.path}, ${r.message}`
  }
}
