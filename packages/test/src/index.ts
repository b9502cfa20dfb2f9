/**
 * `@hostnode/test`: what a test of a program built on @hostnode/core needs
 * besides the simulated host: fixtures, fault injection, gates for real-host
 * tests and (in `@hostnode/test/conformance`) the suites the real and
 * simulated layers both pass. The simulated host itself (`MemoryHost`,
 * `MemoryNode`, `DryRun`, ...) lives in `@hostnode/sim` and is re-exported
 * here, so a test imports everything from one place.
 *
 * @since 0.1.0
 */

/**
 * The simulated host, re-exported from `@hostnode/sim` (its home since 0.4.0):
 * `MemoryHost`, `MemoryNode`, `MemorySystemd`, `MemoryNetwork`, `MemoryAdversary`,
 * `RecordingSystemd`, `LocalDnsFixture`, `TreeWalk` and the `DryRun` layers.
 *
 * @since 0.4.0
 */
export {
  DryRun,
  LocalDnsFixture,
  MemoryAdversary,
  MemoryHost,
  MemoryNetwork,
  MemoryNode,
  MemorySystemd,
  RecordingSystemd,
  TreeWalk
} from "@hostnode/sim"
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
