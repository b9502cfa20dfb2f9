/**
 * `@hostnode/sim`: the simulated Linux host behind @hostnode/core's services
 * (files, mounts, systemd, network, DNS, crashes and faults) and the dry-run
 * layers the `hostnode` CLI's `--dry-run` is made of. It depends on
 * @hostnode/core only; `@hostnode/test` re-exports it next to its fixtures and
 * conformance suites.
 *
 * @since 0.4.0
 */

/**
 * Dry runs as layers: each wraps a real service in context so that reads go to the host and every change is
 * recorded in a plan instead of being made (the CLI's `--dry-run`; an agent can wrap its own program in them).
 *
 * @since 0.3.0
 */
export * as DryRun from "./DryRun.ts"
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
 * A `Systemd` that records its calls and succeeds, the one `MemoryHost.layer` provides.
 *
 * @since 0.2.0
 */
export * as RecordingSystemd from "./RecordingSystemd.ts"
/**
 * Walking a directory tree without following links: each path with its lstat, bytes or link target.
 *
 * @since 0.1.0
 */
export * as TreeWalk from "./TreeWalk.ts"
