/**
 * `@hostnode/node`: the real layers behind @hostnode/core's services.
 *
 * @since 0.1.0
 */

/**
 * The container composition: every service, for a node stack in a container whose init is a given process.
 *
 * @since 0.2.0
 */
export * as NodeContainer from "./NodeContainer.ts"
/**
 * The real `Directory.Directories`: directory handles over system calls (openat, statx, getdents64, ...).
 *
 * @since 0.2.0
 */
export * as NodeDirectory from "./NodeDirectory.ts"
/**
 * The real `DnsResolvers`: Effect's `Dns` from @effect/platform-node, one resolver per name server.
 *
 * @since 0.1.0
 */
export * as NodeDns from "./NodeDns.ts"
/**
 * `Hashing` on node:crypto (OpenSSL's SHA-256, with the CPU's SHA instructions).
 *
 * @since 0.2.0
 */
export * as NodeHashing from "./NodeHashing.ts"
/**
 * All real services in one layer.
 *
 * @since 0.1.0
 */
export * as NodeHost from "./NodeHost.ts"
/**
 * The real `Mounter`: in-process umount2, or `umount -l` through the spawner.
 *
 * @since 0.1.0
 */
export * as NodeMounter from "./NodeMounter.ts"
/**
 * The real `Systemd`: D-Bus to systemd's manager, or systemctl through the spawner, here or in another machine.
 *
 * @since 0.1.0
 */
export * as NodeSystemd from "./NodeSystemd.ts"
/**
 * A long-lived `sh` that runs short commands one after another, as a ChildProcessSpawner.
 *
 * @since 0.3.0
 */
export * as ShellSession from "./ShellSession.ts"
