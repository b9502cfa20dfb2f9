/**
 * How a host root, a host path or a prefix is refused: `HostPathError`,
 * naming the root and the path as they were given, with its reason.
 *
 * A leaf module: `HostPath` re-exports it, and `internal/hostPath` builds its
 * errors from it without importing `HostPath`.
 *
 * @since 0.4.0
 */
import { Schema } from "effect"

/**
 * Why a root or path was refused, `detail` saying how: `InvalidPath` (empty,
 * a NUL byte, longer than the kernel takes), `NotAbsolute` (the library never
 * guesses what a relative path is relative to), `NotFound` and
 * `NotADirectory` (the root, or the mount table's root), `IsHostRoot` (`/`, or
 * a path that resolves to the root, where the caller did not allow it),
 * `OutsideTable` (beyond what the mount table can name), `SymlinkLoop` (a
 * link that leads back to itself), `TooManyLinks` (more than 40), `Unreadable`
 * (a link or directory on the way could not be read).
 *
 * @since 0.4.0
 * @category errors
 */
export class Refused extends Schema.Error<Refused>("@hostnode/core/HostPath/Refused")({
  _tag: Schema.Literals([
    "InvalidPath",
    "NotAbsolute",
    "NotFound",
    "NotADirectory",
    "IsHostRoot",
    "OutsideTable",
    "SymlinkLoop",
    "TooManyLinks",
    "Unreadable"
  ]),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/**
 * The root belongs to a process that has exited (a container's init): its
 * files, mounts and namespaces are no longer that process's, and a pid it
 * had may name another process now, so nothing is done there. Shared by
 * every error of a service that works through such a root (`DirectoryError`,
 * `SystemdError`): one class wherever a caller catches it.
 *
 * @since 0.4.0
 * @category errors
 */
export class Gone extends Schema.Error<Gone>("@hostnode/core/HostPath/Gone")({
  _tag: Schema.tag("Gone"),
  /** The host pid the process had, where one was given. */
  pid: Schema.optionalKey(Schema.Number),
  /** The slot whose container it was, where a resolver named one. */
  slot: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/**
 * A host root, host path or prefix that was refused, naming the root and the
 * path exactly as they were given, and why ({@link Refused} or {@link Gone}).
 *
 * @since 0.1.0
 * @category errors
 */
export class HostPathError extends Schema.TaggedError<HostPathError>()("HostPathError", {
  reason: Schema.Union([Refused, Gone]),
  root: Schema.String,
  path: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    // What (the reason and why) and where (the root, and the path below it when it is not the root itself).
    const where =
      this.path === undefined || this.path === "/"
        ? `host root ${JSON.stringify(this.root)}`
        : `${JSON.stringify(this.path)} below host root ${JSON.stringify(this.root || "/")}`
    return `${where}: ${this.reason.message}`
  }
}
