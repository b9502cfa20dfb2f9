/**
 * How a snapshot operation fails: one error, `SnapshotError`, naming the
 * snapshot directory and the host root, whose `reason` says what is wrong with
 * the facts of that case. `Effect.catchReason("SnapshotError", "Busy", ...)`
 * handles one case and sees its fields.
 *
 * A leaf module: `Snapshot` re-exports it and its steps in `internal/snapshot`
 * build it, so each class is written once.
 *
 * @since 0.4.0
 */
import { Schema } from "effect"
import { SystemdError } from "./Systemd.ts"

/**
 * A snapshot problem told by its `_tag`, with the host path concerned where
 * there is one, the errno where a system call refused, and what exactly is
 * wrong:
 * - `Exists`: a take found a snapshot already in the directory (an earlier
 *   process left it; `recover` it first, or it is lost);
 * - `Missing`: there is no snapshot in the directory (discarded, or consumed
 *   by a restore);
 * - `InvalidPath`: a path given is not absolute, the snapshot directory and a
 *   recorded path overlap, or the directory or lock timeout is malformed;
 * - `InvalidManifest`: the manifest is not JSON, truncated, too large, not of
 *   its Schema, or its entries do not form the trees it names;
 * - `UnsupportedVersion`: the manifest is of a format version this code does
 *   not read;
 * - `PathOutsideRoot`: a manifest path is not a clean absolute lossless host
 *   path, so it could resolve outside the host root;
 * - `Corrupt`: a file's bytes do not match their hash, or `data` has the wrong
 *   size or holes;
 * - `Unsafe`: a file of the snapshot is not what a take makes (a link, a FIFO,
 *   another owner, writable by group or others);
 * - `UnsupportedFileType`: a recorded path is a socket, FIFO or device;
 * - `OtherMount`: a directory below a recorded path is another mount, which a
 *   snapshot neither records nor restores across;
 * - `Kept`: a restore had to remove something it may not (a mount); the host
 *   is partly restored and the snapshot kept;
 * - `Unresolvable`: a host path could not be resolved below the root (a
 *   symlink loop, an unreadable link);
 * - `HostRootMismatch`: the snapshot was taken below another host root (a
 *   mistyped `--host-root` would otherwise remove every recorded path missing
 *   there); pass `allowHostRootMismatch` when the same tree has another name;
 * - `NotASnapshot`: what is at the snapshot's directory is not one (`--dir
 *   /etc` typed for `--dir /etc/snap`); nothing is changed;
 * - `Io`: the file system refused an operation.
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/Snapshot/Failure")({
  _tag: Schema.Literals([
    "Exists",
    "Missing",
    "InvalidPath",
    "InvalidManifest",
    "UnsupportedVersion",
    "PathOutsideRoot",
    "Corrupt",
    "Unsafe",
    "UnsupportedFileType",
    "OtherMount",
    "Kept",
    "Unresolvable",
    "HostRootMismatch",
    "NotASnapshot",
    "Io"
  ]),
  path: Schema.optionalKey(Schema.String),
  errno: Schema.optionalKey(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this._tag}${this.path === undefined ? "" : ` at ${JSON.stringify(this.path)}`}: ${this.detail}`
  }
}

/**
 * Another process holds the snapshot's lock past the timeout; `pid` names it when the platform says.
 *
 * @category errors
 * @since 0.3.0
 */
export class Busy extends Schema.Error<Busy>("@hostnode/core/Snapshot/Busy")({
  _tag: Schema.tag("Busy"),
  pid: Schema.optionalKey(Schema.Int),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this._tag}: ${this.detail}`
  }
}

/**
 * An upgrade failed and so did its rollback: the host is partly restored.
 * Carries both, so neither is lost: `upgrade` is the upgrade's cause,
 * `rollback` the restore's error. The snapshot is kept for `Snapshot.recover`.
 *
 * @category errors
 * @since 0.2.0
 */
export class RollbackFailed extends Schema.Error<RollbackFailed>("@hostnode/core/Snapshot/RollbackFailed")({
  _tag: Schema.tag("RollbackFailed"),
  upgrade: Schema.Cause(Schema.Unknown, Schema.Defect()),
  rollback: Schema.Union([Schema.suspend((): Schema.Codec<SnapshotError, unknown> => SnapshotError), SystemdError])
}) {
  override get message(): string {
    return `${this._tag}: the upgrade failed and rolling the configuration back failed too (${this.rollback.message}); the snapshot is kept for Snapshot.recover`
  }
}

/**
 * A snapshot could not be taken, checked, restored or rolled back. It names
 * the snapshot directory and the host root; its `reason` says what exactly
 * is wrong, with the facts of that case (the host path, the errno, the
 * lock holder's pid), so a person can go and look. A restore that fails
 * keeps the snapshot; a corrupt one fails before anything is written.
 *
 * @category errors
 * @since 0.1.0
 */
export class SnapshotError extends Schema.TaggedError<SnapshotError>()("SnapshotError", {
  reason: Schema.Union([Failure, Busy, RollbackFailed]),
  dir: Schema.String,
  hostRoot: Schema.String
}) {
  override get message(): string {
    return `snapshot ${JSON.stringify(this.dir)} (host root ${JSON.stringify(this.hostRoot || "/")}): ${this.reason.message}`
  }
}
