/**
 * `@hostnode/core`: every host-side operation of a node agent as an Effect, the
 * services they need as interfaces and keys, Schema models and typed errors.
 * No `node:*` imports: the real host lives in @hostnode/node, the simulated one
 * in @hostnode/sim.
 *
 * @since 0.1.0
 */

/**
 * The agent configuration: its directory, the LocalDNS settings, the node's units.
 *
 * @since 0.1.0
 */
export * as AgentConfig from "./AgentConfig.ts"
/**
 * Reading configuration documents with errors that name the file and the field.
 *
 * @since 0.1.0
 */
export * as ConfigFile from "./ConfigFile.ts"
/**
 * The default list of shared configuration paths a snapshot records, and the extra paths per isolation mode.
 *
 * @since 0.1.0
 */
export * as ConfSnap from "./ConfSnap.ts"
/**
 * When the calls of an operation must be over: every call ends by its timeout or the operation's deadline.
 *
 * @since 0.4.0
 */
export * as Deadline from "./Deadline.ts"
/**
 * Work below a root through directory handles: list, stat, open, unlink, create and rename, never by path.
 *
 * @since 0.2.0
 */
export * as Directory from "./Directory.ts"
/**
 * Effect's `Dns`, one per name server, and what counts as an answer.
 *
 * @since 0.1.0
 */
export * as DnsResolvers from "./DnsResolvers.ts"
/**
 * File names as bytes, and the one lossless string form of them the library uses.
 *
 * @since 0.2.0
 */
export * as FileName from "./FileName.ts"
/**
 * Machine goal states per slot, download overrides, and the GoalStateSource.
 *
 * @since 0.1.0
 */
export * as GoalState from "./GoalState.ts"
/**
 * Incremental SHA-256 for snapshots: a portable default, a platform one from the node layer.
 *
 * @since 0.2.0
 */
export * as Hashing from "./Hashing.ts"
/**
 * A node's seams with the real host and the real phases as defaults.
 *
 * @since 0.1.0
 */
export * as Hooks from "./Hooks.ts"
/**
 * Running host commands as argv arrays through the spawner in context.
 *
 * @since 0.1.0
 */
export * as HostCommand from "./HostCommand.ts"
/**
 * Joining host paths below a host root with containment.
 *
 * @since 0.1.0
 */
export * as HostPath from "./HostPath.ts"
/**
 * Whether a node root's stack is up, in any isolation mode.
 *
 * @since 0.1.0
 */
export * as IsolationBackend from "./IsolationBackend.ts"
/**
 * The LocalDNS network phases: setup, cleanup, and the wait for answers.
 *
 * @since 0.1.0
 */
export * as LocalDns from "./LocalDns.ts"
/**
 * The Effect `Metric`s every operation updates: durations, mounts detached, paths removed and kept, restarts, snapshots.
 *
 * @since 0.4.0
 */
export * as Metrics from "./Metrics.ts"
/**
 * The unmount primitive: interface and key.
 *
 * @since 0.1.0
 */
export * as Mounter from "./Mounter.ts"
/**
 * The kernel's mount table: Schema, parser, renderer and consistent read.
 *
 * @since 0.1.0
 */
export * as MountInfo from "./MountInfo.ts"
/**
 * The node start goal state: auth mode, LocalDNS listeners.
 *
 * @since 0.1.0
 */
export * as NodeStart from "./NodeStart.ts"
/**
 * Well-known host paths and `orDefault`.
 *
 * @since 0.1.0
 */
export * as Paths from "./Paths.ts"
/**
 * What a repave removes: CNI state, the kubelet's client identity, pod volume directories.
 *
 * @since 0.1.0
 */
export * as Repave from "./Repave.ts"
/**
 * Restarting, in order, the units whose configuration changed.
 *
 * @since 0.1.0
 */
export * as RestartChanged from "./RestartChanged.ts"
/**
 * Removing paths below a host root without following symlinks or crossing mounts.
 *
 * @since 0.1.0
 */
export * as SafeRemove from "./SafeRemove.ts"
/**
 * The saved copy of the shared configuration: take, restore, discard, recover, and as a scoped resource.
 *
 * @since 0.1.0
 */
export * as Snapshot from "./Snapshot.ts"
/**
 * The service manager: interface, key, errors and `make`.
 *
 * @since 0.1.0
 */
export * as Systemd from "./Systemd.ts"
/**
 * Named lifecycle steps, their failure and the condition reason classified from it.
 *
 * @since 0.1.0
 */
export * as Task from "./Task.ts"
/**
 * systemd unit names as a Schema.
 *
 * @since 0.1.0
 */
export * as UnitName from "./UnitName.ts"
/**
 * Unmounting everything at or below prefixes, deepest first.
 *
 * @since 0.1.0
 */
export * as Unmount from "./Unmount.ts"
