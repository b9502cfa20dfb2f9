/**
 * @hostnode/node: the real layers behind @hostnode/core's services.
 *
 * @since 0.1.0
 */

/** The container composition: every service, for a node stack in a container whose init is a given process. */
export * as NodeContainer from "./NodeContainer.ts"
/** The real `Directory.Directories`: directory handles over system calls (openat, statx, getdents64, ...). */
export * as NodeDirectory from "./NodeDirectory.ts"
/** The real `DnsResolvers`: Effect's `Dns` from @effect/platform-node, one resolver per name server. */
export * as NodeDns from "./NodeDns.ts"
/** All real services in one layer. */
export * as NodeHost from "./NodeHost.ts"
/** The real `Mounter`: in-process umount2, or `umount -l` through the spawner. */
export * as NodeMounter from "./NodeMounter.ts"
/** The real `Systemd`: D-Bus to systemd's manager, or systemctl through the spawner, here or in another machine. */
export * as NodeSystemd from "./NodeSystemd.ts"
