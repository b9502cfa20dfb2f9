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

// The simulated host, re-exported from `@hostnode/sim` (its home since 0.4.0): the same namespaces, so a test
// imports everything from here.
export {
  /**
   * The dry-run layers: real reads, every change recorded in a plan. From `@hostnode/sim`.
   *
   * @since 0.3.0
   */
  DryRun,
  /**
   * What the LocalDNS suite needs from a host: links, the raw table, a DNS server. From `@hostnode/sim`.
   *
   * @since 0.1.0
   */
  LocalDnsFixture,
  /**
   * Concurrent writers acting on the simulated host between two calls. From `@hostnode/sim`.
   *
   * @since 0.2.0
   */
  MemoryAdversary,
  /**
   * The simulated host: files, mounts, inspection, fault injection, crashes. From `@hostnode/sim`.
   *
   * @since 0.1.0
   */
  MemoryHost,
  /**
   * The simulated host's network: links, iptables, DNS servers. From `@hostnode/sim`.
   *
   * @since 0.1.0
   */
  MemoryNetwork,
  /**
   * A whole simulated node: MemoryHost, systemd, network and the command line. From `@hostnode/sim`.
   *
   * @since 0.1.0
   */
  MemoryNode,
  /**
   * The simulated host's systemd: units, the `systemctl` interpreter, faults. From `@hostnode/sim`.
   *
   * @since 0.1.0
   */
  MemorySystemd,
  /**
   * A `Systemd` that records its calls, the one `MemoryHost.layer` provides. From `@hostnode/sim`.
   *
   * @since 0.2.0
   */
  RecordingSystemd,
  /**
   * A directory tree without following links, as a test compares it. From `@hostnode/sim`.
   *
   * @since 0.1.0
   */
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
