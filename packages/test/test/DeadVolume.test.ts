/**
 * The dead-volume conformance suite on `MemoryHost`: its `hang` fault makes
 * a mounted file system stop answering, as the real suite's FUSE daemon does.
 */
import { describe } from "@effect/vitest"
import { MemoryHost, MountFixture } from "@hostnode/test"
import { DeadVolumeConformance } from "@hostnode/test/conformance"
import { Effect, FileSystem, Layer } from "effect"

const host = MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryHost.layer()))

describe("dead storage on MemoryHost", () => {
  DeadVolumeConformance.suite<MemoryHost.MemoryHost | FileSystem.FileSystem, never>("MemoryHost.hang", host, {
    deadVolume: (mountPoint) =>
      Effect.gen(function* () {
        const h = yield* MemoryHost.MemoryHost
        const fs = yield* FileSystem.FileSystem
        yield* h.tmpfs(mountPoint).pipe(Effect.orDie)
        yield* fs.makeDirectory(`${mountPoint}/sub`).pipe(Effect.orDie)
        return { stall: h.hang(mountPoint) }
      })
  })
})
