/**
 * @hostnode/node: the real layers behind @hostnode/core's services.
 *
 * @since 0.1.0
 */

/** All real services in one layer. */
export * as NodeHost from "./NodeHost.ts"

/** The real `Mounter`: in-process umount2, or `umount -l` through the spawner. */
export * as NodeMounter from "./NodeMounter.ts"

/** The real `Systemd`: systemctl through the spawner, here or in another machine. */
export * as NodeSystemd from "./NodeSystemd.ts"
