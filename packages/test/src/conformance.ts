/**
 * `@hostnode/test/conformance`: the conformance suites, as functions that take a
 * Layer and register @effect/vitest tests. Kept out of the main entry point so
 * that using `MemoryHost` outside a test runner (the CLI's demo) never loads
 * vitest.
 *
 * @since 0.1.0
 */

/**
 * The conformance suite of dead storage: a file system that stops answering, below a host root.
 *
 * @since 0.4.0
 */
export * as DeadVolumeConformance from "./DeadVolumeConformance.ts"
/**
 * The conformance suite of `Directory.Directories`: handles, names as bytes, mounts, chroot resolution, a swapper.
 *
 * @since 0.2.0
 */
export * as DirectoryConformance from "./DirectoryConformance.ts"
/**
 * The conformance suite every `FileSystem` passes: NodeFileSystem on Linux as root, and `MemoryHost`.
 *
 * @since 0.1.0
 */
export * as FileSystemConformance from "./FileSystemConformance.ts"
/**
 * The conformance suite of GoalStateSource and the default goal state resolver.
 *
 * @since 0.1.0
 */
export * as GoalStateConformance from "./GoalStateConformance.ts"
/**
 * The conformance suite of the host root and the paths callers give: decoded first, nothing changed outside the root.
 *
 * @since 0.2.0
 */
export * as HostRootConformance from "./HostRootConformance.ts"
/**
 * The conformance suite of the LocalDNS phases on a host with links, iptables and a DNS server.
 *
 * @since 0.1.0
 */
export * as LocalDnsConformance from "./LocalDnsConformance.ts"
/**
 * The conformance suite every `Mounter` passes.
 *
 * @since 0.1.0
 */
export * as MounterConformance from "./MounterConformance.ts"
/**
 * The scenarios every composition shares (upgrade rollback, repave, LocalDNS, restarts, running), on any composition.
 *
 * @since 0.2.0
 */
export * as NodeScenarios from "./NodeScenarios.ts"
/**
 * The conformance suites of the repave resets, the kubelet teardown and SafeRemove, with properties.
 *
 * @since 0.1.0
 */
export * as RepaveConformance from "./RepaveConformance.ts"
/**
 * The conformance suite of `Snapshot`: take, restore, discard, recover and the scoped resource, with random trees.
 *
 * @since 0.1.0
 */
export * as SnapshotConformance from "./SnapshotConformance.ts"
/**
 * The conformance suite of `Systemd`, `restartChanged` and `running`.
 *
 * @since 0.1.0
 */
export * as SystemdConformance from "./SystemdConformance.ts"
/**
 * The conformance suite of the unmount operations on a kubelet-like layout.
 *
 * @since 0.1.0
 */
export * as UnmountConformance from "./UnmountConformance.ts"
