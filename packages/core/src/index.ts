/**
 * @hostnode/core: every host-side operation of a node agent as an Effect, the
 * services they need as interfaces and keys, Schema models and typed errors.
 * No `node:*` imports: the real host lives in @hostnode/node, the simulated one
 * in @hostnode/test.
 *
 * @since 0.1.0
 */

/** The agent configuration: its directory, the LocalDNS settings, the node's units. */
export * as AgentConfig from "./AgentConfig.ts"
/** Reading configuration documents with errors that name the file and the field. */
export * as ConfigFile from "./ConfigFile.ts"
/** The default list of shared configuration paths a snapshot records, and the extra paths per isolation mode. */
export * as ConfSnap from "./ConfSnap.ts"
/** Work below a root through directory handles: list, stat, open, unlink, create and rename, never by path. */
export * as Directory from "./Directory.ts"
/** Effect's `Dns`, one per name server, and what counts as an answer. */
export * as DnsResolvers from "./DnsResolvers.ts"
/** File names as bytes, and the one lossless string form of them the library uses. */
export * as FileName from "./FileName.ts"
/** Machine goal states per slot, download overrides, and the GoalStateSource. */
export * as GoalState from "./GoalState.ts"
/** A node's seams with the real host and the real phases as defaults. */
export * as Hooks from "./Hooks.ts"
/** Running host commands as argv arrays through the spawner in context. */
export * as HostCommand from "./HostCommand.ts"
/** Joining host paths below a host root with containment. */
export * as HostPath from "./HostPath.ts"
/** Whether a node root's stack is up, in any isolation mode. */
export * as IsolationBackend from "./IsolationBackend.ts"
/** The LocalDNS network phases: setup, cleanup, and the wait for answers. */
export * as LocalDns from "./LocalDns.ts"
/** The unmount primitive: interface and key. */
export * as Mounter from "./Mounter.ts"
/** The kernel's mount table: Schema, parser, renderer and consistent read. */
export * as MountInfo from "./MountInfo.ts"
/** The node start goal state: auth mode, LocalDNS listeners. */
export * as NodeStart from "./NodeStart.ts"
/** Well-known host paths and `orDefault`. */
export * as Paths from "./Paths.ts"
/** What a repave removes: CNI state, the kubelet's client identity, pod volume directories. */
export * as Repave from "./Repave.ts"
/** Restarting, in order, the units whose configuration changed. */
export * as RestartChanged from "./RestartChanged.ts"
/** Removing paths below a host root without following symlinks or crossing mounts. */
export * as SafeRemove from "./SafeRemove.ts"
/** A long-lived `sh` that runs short commands one after another, as a ChildProcessSpawner. */
export * as ShellSession from "./ShellSession.ts"
/** The saved copy of the shared configuration: take, restore, discard, recover, and as a scoped resource. */
export * as Snapshot from "./Snapshot.ts"
/** The service manager: interface, key, errors and `make`. */
export * as Systemd from "./Systemd.ts"
/** Named lifecycle steps, their failure and the condition reason classified from it. */
export * as Task from "./Task.ts"
/** systemd unit names as a Schema. */
export * as UnitName from "./UnitName.ts"
/** Unmounting everything at or below prefixes, deepest first. */
export * as Unmount from "./Unmount.ts"
