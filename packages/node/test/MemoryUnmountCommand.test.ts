/**
 * The command-based `Mounter` (core's `Mounter.layerCommand`, re-exported as
 * `NodeMounter.layerCommand`; `umount -l` through the spawner) against the
 * simulated host: the `umount` interpreter must print what util-linux prints,
 * so the same conformance suites pass as with the in-memory `Mounter` and on
 * the real kernel.
 */
import { assert, describe, it } from "@effect/vitest"
import { Mounter } from "@hostnode/core"
import { NodeMounter } from "@hostnode/node"
import { MemoryHost, MountFixture } from "@hostnode/test"
import { MounterConformance, UnmountConformance } from "@hostnode/test/conformance"
import { Effect, Layer } from "effect"
import { ChildProcessSpawner } from "effect/process"

const umounts: Array<ReadonlyArray<string>> = []

const host = (mounter: ReturnType<typeof Mounter.layerCommand>) => {
  const spawner = Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.map(Effect.service(MemoryHost.MemoryHost), (h) =>
      MemoryHost.mountCommands(h.state, (i) => {
        if (i.command === "umount") umounts.push(i.args)
      })
    )
  ).pipe(Layer.provideMerge(MemoryHost.layer()))
  // The command mounter replaces the in-memory one MemoryHost.layer provides.
  return Layer.mergeAll(mounter, MountFixture.layerMemory).pipe(Layer.provideMerge(spawner))
}

describe("Mounter.layerCommand over MemoryHost's umount", () => {
  MounterConformance.suite("Mounter.layerCommand over MemoryHost", host(Mounter.layerCommand()))
  UnmountConformance.suite("Mounter.layerCommand over MemoryHost", host(Mounter.layerCommand()))
  it("NodeMounter.layerCommand is core's", () => {
    assert.strictEqual(NodeMounter.layerCommand, Mounter.layerCommand)
  })
  it("the suites above ran `umount -l -c` through the simulated command line", () => {
    assert.isAbove(umounts.length, 0)
    assert.isTrue(umounts.every((args) => (args[0] === "-l" && args[1] === "-c") || args[0] === "-c"))
  })
})
