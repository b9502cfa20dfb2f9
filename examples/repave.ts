/**
 * A node agent's repave step, composed from hostnode's operations: detach
 * every volume below the kubelet's directory, tear the pods' directories
 * down, and reset CNI state and the kubelet's client identity. Its type names
 * what it touches (the FileSystem, the directory handles every removal goes
 * through, and the Mounter) and every way it can fail.
 */
import {
  type Directory,
  type HostPath,
  type Mounter,
  type MountInfo,
  type NodeStart,
  Paths,
  Repave,
  Unmount
} from "@hostnode/core"
import { Effect, type FileSystem } from "effect"

export interface RepaveReport {
  readonly podPaths: number
  readonly kept: ReadonlyArray<{ readonly path: string; readonly reason: string }>
  readonly removed: ReadonlyArray<string>
}

export const repave: (
  node: NodeStart.NodeStart
) => Effect.Effect<
  RepaveReport,
  Unmount.UnmountError | Repave.ResetError | HostPath.HostPathError | MountInfo.MountInfoError,
  FileSystem.FileSystem | Directory.Directories | Mounter.Mounter
> = Effect.fn("repave")(function* (node: NodeStart.NodeStart) {
  // Strictly below: the kubelet directory may itself be a mount; it stays.
  yield* Unmount.unmountStrictlyBelow([Paths.Node.KubeletDir])
  const pods = yield* Repave.teardownKubeletDir()
  const cni = yield* Repave.resetCniState()
  const identity = yield* Repave.resetKubeletIdentity(node)
  return {
    podPaths: pods.removed.length,
    kept: [...pods.kept, ...cni.kept, ...identity.kept],
    removed: [...cni.removed, ...identity.removed]
  }
})
