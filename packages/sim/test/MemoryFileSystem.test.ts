/**
 * The FileSystem conformance suite against the real file system (Node's, in a
 * scoped temporary directory) and against MemoryHost: both must pass the same
 * tests, which is what lets tests of node agents run on the simulated host.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost } from "@hostnode/sim"
import * as MemoryFileSystem from "@hostnode/sim/internal/memoryFileSystem"
import { FileSystemConformance } from "@hostnode/test/conformance"
import { Effect, FileSystem } from "effect"

FileSystemConformance.suite("NodeFileSystem (real, in a temporary directory)", NodeFileSystem.layer)

FileSystemConformance.suite("MemoryHost", MemoryHost.layer())

describe("MemoryFileSystem.seed", () => {
  it.effect("plants below a mount point on the mounted file system, not on the root's", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      const fs = yield* FileSystem.FileSystem
      yield* host.tmpfs("/m")
      assert.isUndefined(MemoryFileSystem.seed(host.state.fs, { "/m/a/file": "x", "/root-file": "y" }, 0))
      const dev = (path: string) => Effect.map(fs.stat(path), (i) => i.dev)
      assert.strictEqual(yield* dev("/m/a/file"), yield* dev("/m"))
      assert.strictEqual(yield* dev("/root-file"), yield* dev("/"))
      assert.notStrictEqual(yield* dev("/m"), yield* dev("/"))
    }).pipe(Effect.provide(MemoryHost.layer({ files: { "/m/.keep": "" } })))
  )
})
