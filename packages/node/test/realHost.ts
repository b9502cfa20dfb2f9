/**
 * The real host the real-layer suites run on: NodeServices, the directory
 * handles over system calls, a `Mounter` (the in-process one unless another
 * is given) and the real `MountFixture`, in the test process's private mount
 * namespace. One definition for every test file that mounts.
 */
import { NodeServices } from "@effect/platform-node"
import type { Directory, Mounter } from "@hostnode/core"
import { NodeDirectory, NodeHashing, NodeMounter } from "@hostnode/node"
import { MountFixture } from "@hostnode/test"
import { Layer } from "effect"
import type { ChildProcessSpawner } from "effect/process"

type MounterLayer = Layer.Layer<
  Mounter.Mounter,
  unknown,
  NodeServices.NodeServices | Directory.Directories | ChildProcessSpawner.ChildProcessSpawner
>

/** The real host with `mounter` (default `NodeMounter.layer`) and `directories` (default `NodeDirectory.layer`). */
export const realHost = (options?: {
  readonly mounter?: MounterLayer | undefined
  readonly directories?: Layer.Layer<Directory.Directories, unknown> | undefined
}) => {
  const directories = Layer.orDie(options?.directories ?? NodeDirectory.layer)
  const mounter = Layer.orDie(options?.mounter ?? NodeMounter.layer)
  return Layer.mergeAll(mounter, MountFixture.layerReal, NodeHashing.layer).pipe(
    Layer.provideMerge(directories),
    Layer.provideMerge(NodeServices.layer)
  )
}
