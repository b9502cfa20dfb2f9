/**
 * @hostnode/test/conformance: the conformance suites, as functions that take a
 * Layer and register @effect/vitest tests. Kept out of the main entry point so
 * that using `MemoryHost` outside a test runner (the CLI's demo) never loads
 * vitest.
 *
 * @since 0.1.0
 */

/** The conformance suite of `Directory.Directories`: handles, names as bytes, mounts, chroot resolution, a swapper. */
export * as DirectoryConformance from "./DirectoryConformance.ts"
/** The conformance suite every `FileSystem` passes: NodeFileSystem on Linux as root, and `MemoryHost`. */
export * as FileSystemConformance from "./FileSystemConformance.ts"
/** The conformance suite of GoalStateSource and the default goal state resolver. */
export * as GoalStateConformance from "./GoalStateConformance.ts"
/** The conformance suite of the host root and the paths callers give: decoded first, nothing changed outside the root. */
export * as HostRootConformance from "./HostRootConformance.ts"
/** The conformance suite of the LocalDNS phases on a host with links, iptables and a DNS server. */
export * as LocalDnsConformance from "./LocalDnsConformance.ts"
/** The conformance suite every `Mounter` passes. */
export * as MounterConformance from "./MounterConformance.ts"
/** The scenarios every composition shares (upgrade rollback, repave, LocalDNS, restarts, running), on any composition. */
export * as NodeScenarios from "./NodeScenarios.ts"
/** The conformance suites of the repave resets, the kubelet teardown and SafeRemove, with properties. */
export * as RepaveConformance from "./RepaveConformance.ts"
/** The conformance suite of `Snapshot`: take, restore, discard, recover and the scoped resource, with random trees. */
export * as SnapshotConformance from "./SnapshotConformance.ts"
/** The conformance suite of `Systemd`, `restartChanged` and `running`. */
export * as SystemdConformance from "./SystemdConformance.ts"
/** The conformance suite of the unmount operations on a kubelet-like layout. */
export * as UnmountConformance from "./UnmountConformance.ts"
