/**
 * `@hostnode/test`: the simulated host behind @hostnode/core's services, with
 * inspection, fault injection, fixtures and the conformance suites that the real
 * and in-memory layers both pass.
 *
 * @since 0.1.0
 */

/**
 * Dry runs as layers: each wraps a real service in context so that reads go to the host and every change is
 * recorded in a plan instead of being made (the CLI's `--dry-run`; an agent can wrap its own program in them).
 *
 * @since 0.3.0
 */
export * as DryRun from "./DryRun.ts"
/**
 * Fault injection for any ChildProcessSpawner: chosen commands fail as a real tool would, without running.
 *
 * @since 0.2.0
 */
export * as FaultyCommands from "./FaultyCommands.ts"
/**
 * Fault injection for any `Mounter`: refuse chosen targets.
 *
 * @since 0.1.0
 */
export * as FaultyMounter from "./FaultyMounter.ts"
/**
 * A FileSystem that refuses to change anything outside chosen directories, for tests that delete.
 *
 * @since 0.1.0
 */
export * as FencedFileSystem from "./FencedFileSystem.ts"
/**
 * Gates for real-host tests: skip with a reason, or fail under CI=true.
 *
 * @since 0.1.0
 */
export * as Gate from "./Gate.ts"
/**
 * Inspecting links and the raw table, planting foreign ones, and running a DNS server, for the LocalDNS suite.
 *
 * @since 0.1.0
 */
export * as LocalDnsFixture from "./LocalDnsFixture.ts"
/**
 * Concurrent writers for the simulated host's adversary seam: swaps, renames, bind mounts between two calls.
 *
 * @since 0.2.0
 */
export * as MemoryAdversary from "./MemoryAdversary.ts"
/**
 * The simulated host: `FileSystem`, `Path` and inspection/fault injection over one in-memory state.
 *
 * @since 0.1.0
 */
export * as MemoryHost from "./MemoryHost.ts"
/**
 * The simulated host's network: links, iptables, DNS servers, the `ip`/`iptables` interpreters and `DnsResolvers`.
 *
 * @since 0.1.0
 */
export * as MemoryNetwork from "./MemoryNetwork.ts"
/**
 * A whole simulated node: MemoryHost, systemd, network, the command line and the library's services over them.
 *
 * @since 0.1.0
 */
export * as MemoryNode from "./MemoryNode.ts"
/**
 * The simulated host's systemd: units, the `systemctl` interpreter, inspection and fault injection.
 *
 * @since 0.1.0
 */
export * as MemorySystemd from "./MemorySystemd.ts"
/**
 * Making real or simulated mounts for tests behind one interface.
 *
 * @since 0.1.0
 */
export * as MountFixture from "./MountFixture.ts"
/**
 * A node for the scenarios every composition shares: its files, mounts, mount table and LocalDNS fixture.
 *
 * @since 0.2.0
 */
export * as NodeFixture from "./NodeFixture.ts"
/**
 * A `Systemd` that records its calls and succeeds, the one `MemoryHost.layer` provides.
 *
 * @since 0.2.0
 */
export * as RecordingSystemd from "./RecordingSystemd.ts"
/**
 * A `Systemd` whose every call is a defect, for code that must never reach systemd.
 *
 * @since 0.1.0
 */
export * as RefusingSystemd from "./RefusingSystemd.ts"

/**
 * A real systemd booted on a throwaway root in its own namespaces, for tests.
 *
 * @since 0.1.0
 */
export * as SystemdMachine from "./SystemdMachine.ts"
/**
 * Walking a directory tree without following links: each path with its lstat, bytes or link target.
 *
 * @since 0.1.0
 */
export * as TreeWalk from "./TreeWalk.ts"
