/**
 * The real host in one layer: every service the operations of @hostnode/core
 * need, backed by the machine this process runs on. Production agents provide
 * this; tests provide `MemoryHost.layer` from @hostnode/sim (or @hostnode/test) instead. Each
 * part is also exported on its own (`NodeMounter`, `NodeSystemd`, `NodeDns`)
 * for agents that need another combination (another machine's systemd, the
 * command-based mounter).
 *
 * @since 0.1.0
 */
import { NodeServices } from "@effect/platform-node"
import { type Directory, type DnsResolvers, IsolationBackend, type Mounter, type Systemd } from "@hostnode/core"
import { Layer } from "effect"
import * as NodeDirectory from "./NodeDirectory.ts"
import * as NodeDns from "./NodeDns.ts"
import * as NodeHashing from "./NodeHashing.ts"
import * as NodeMounter from "./NodeMounter.ts"
import * as NodeSystemd from "./NodeSystemd.ts"

/**
 * Everything {@link layer} provides (and `NodeContainer.layer`).
 *
 * @category models
 * @since 0.1.0
 */
export type Services =
  | NodeServices.NodeServices
  | Directory.Directories
  | Mounter.Mounter
  | Systemd.Systemd
  | DnsResolvers.DnsResolvers
  | IsolationBackend.IsolationBackend

/**
 * Options of {@link layerWith}.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The units whose activity means the node stack is up (the host `IsolationBackend`). */
  readonly units?: ReadonlyArray<string> | undefined
}

/**
 * Every real service: FileSystem, Path, ChildProcessSpawner, Stdio and Terminal
 * from @effect/platform-node; the directory handles (`NodeDirectory`, system
 * calls through koffi: building the layer dies where they cannot load, since
 * nothing below a host root may then be touched safely); the in-process
 * `Mounter` (or `umount -l` where the FFI cannot load); this host's
 * `Systemd` over D-Bus where systemd's private socket or the system bus
 * answers (or `systemctl` where neither does); the `DnsResolvers`; and the
 * host-mode `IsolationBackend`.
 *
 * @category layers
 * @since 0.1.0
 */
export const layerWith = (options?: Options): Layer.Layer<Services> => {
  // Built once and shared: one D-Bus connection serves the service and the backend.
  const systemd = NodeSystemd.layerWithFallback()
  const directories = NodeDirectory.layer.pipe(Layer.orDie)
  return Layer.mergeAll(
    NodeMounter.layerWithFallback().pipe(Layer.provide(directories)),
    directories,
    systemd,
    NodeDns.layer,
    NodeHashing.layer,
    IsolationBackend.layerHost({ units: options?.units }).pipe(Layer.provide(systemd))
  ).pipe(Layer.provideMerge(NodeServices.layer))
}

/**
 * {@link layerWith} with the default options.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Paths, Unmount } from "@hostnode/core"
 * import { NodeHost } from "@hostnode/node"
 * import { Effect } from "effect"
 *
 * // Detach the pod volumes a stopped kubelet left, on this host.
 * const program = Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir]).pipe(
 *   Effect.tap((report) =>
 *     Effect.logInfo("unmounted").pipe(Effect.annotateLogs({ mounts: report.unmounted.length }))
 *   ),
 *   Effect.provide(NodeHost.layer)
 * )
 * export const main = () => NodeRuntime.runMain(program)
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<Services> = layerWith()
