/**
 * The command-based `Mounter` (`NodeMounter.layerCommand`, `umount -l`
 * through the spawner) against the simulated host: the `umount` interpreter
 * must print what util-linux prints, so the same conformance suites pass as
 * with the in-memory `Mounter` and on the real kernel.
 */
import { assert, describe, it } from "@effect/vitest"
import { NodeMounter } from "@hostnode/node"
import { MemoryHost, MountFixture } from "@hostnode/test"
import { MounterConformance, UnmountConformance } from "@hostnode/test/conformance"
import { Effect, Layer } from "effect"
import { ChildProcessSpawner } from "effect/process"

const umounts: Array<ReadonlyArray<string>> = []

const host = () => {
  const spawner = Layer.effect(
    ChildProcessSpawner.ChildProcessSpawner,
    Effect.map(Effect.service(MemoryHost.MemoryHost), (h) =>
      MemoryHost.mountCommands(h.state, (i) => {
        if (i.command === "umount") umounts.push(i.args)
      })
    )
  ).pipe(Layer.provideMerge(MemoryHost.layer()))
  // The command mounter replaces the in-memory one MemoryHost.layer provides.
  return Layer.mergeAll(NodeMounter.layerCommand(), MountFixture.layerMemory).pipe(Layer.provideMerge(spawner))
}

describe("NodeMounter.layerCommand over MemoryHost's umount", () => {
  MounterConformance.suite("NodeMounter.layerCommand over MemoryHost", host())
  UnmountConformance.suite("NodeMounter.layerCommand over MemoryHost", host())
  it("the suites above ran `umount -l -c` through the simulated command line", () => {
    assert.isAbove(umounts.length, 0)
    assert.isTrue(umounts.every((args) => (args[0] === "-l" && args[1] === "-c") || args[0] === "-c"))
  })
})
