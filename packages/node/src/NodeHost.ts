/**
 * The real host in one layer: every service the operations of @hostnode/core
 * need, backed by the machine this process runs on. Production agents provide
 * this; tests provide `MemoryHost.layer` from @hostnode/test instead.
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"

/**
 * Every real service in one layer. Today: FileSystem, Path, ChildProcessSpawner,
 * Stdio and Terminal from @effect/platform-node. Later: the mounter, systemd and
 * DNS layers, each of which is also exported on its own.
 */
export const layer = NodeServices.layer
