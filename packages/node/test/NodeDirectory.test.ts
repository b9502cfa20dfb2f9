/**
 * The Directories conformance suite on the real layer, in the private mount
 * namespace on a tmpfs sandbox with real tmpfs and bind mounts: once with
 * `openat2` resolution and once walking handle to handle (the fallback for
 * kernels without `openat2`), a real FIFO, the process's open descriptors
 * counted, and a real concurrent swapper (`fixtures/racer.c`). Then what
 * the simulated host has no counterpart of: a real procfs mounted below the
 * root, whose magic links (`/proc/self/root`, `/proc/1/root`) must not take
 * a resolution out of it.
 */
import { readdirSync } from "node:fs"
import { assert, describe, layer } from "@effect/vitest"
import { Directory, FileName, Hashing, HostCommand, HostPath } from "@hostnode/core"
import * as Programs from "@hostnode/core/Programs"
import { NodeDirectory } from "@hostnode/node"
import { Gate, MountFixture } from "@hostnode/test"
import { DirectoryConformance } from "@hostnode/test/conformance"
import { Effect, FileSystem } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as Racer from "./racer.ts"
import { realHost } from "./realHost.ts"

const gate = Gate.check("directory handles on real mounts", [
  "root",
  "private-mount-namespace",
  { command: "mount" },
  { command: "cc", args: ["--version"] },
  { command: "mkfifo", args: ["--version"] }
])

type R = ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem | Directory.Directories

const options: DirectoryConformance.Options<R> = {
  fifo: (path) => Effect.asVoid(HostCommand.run("mkfifo", ["--", path]).pipe(Effect.orDie)),
  // The descriptors live in the layer's helper process (its pid is what `credentials` says):
  // asking it is one round trip, after every close sent before.
  openDescriptors: Effect.gen(function* () {
    const { pid } = yield* (yield* Directory.Directories).credentials
    return readdirSync(`/proc/${pid}/fd`).length
  }),
  swapper: (a, b) =>
    Effect.gen(function* () {
      const binary = yield* Racer.build
      yield* Racer.start(binary, "exchange", a, b)
    }),
  swapRuns: Gate.loops(20_000)
}

describe.skipIf(gate.skip)("NodeDirectory", () => {
  DirectoryConformance.suite<R>("NodeDirectory.layer (openat2)", realHost(), options)
  DirectoryConformance.suite<R>(
    "NodeDirectory.layerWalk (handle to handle)",
    realHost({ directories: NodeDirectory.layerWalk }),
    options
  )
})

// Resolutions through procfs's magic links, on both resolvers (and HostPath's over the FileSystem).
for (const [name, directories] of [
  ["openat2", NodeDirectory.layer],
  ["walk", NodeDirectory.layerWalk]
] as const) {
  describe.skipIf(gate.skip)(`NodeDirectory.${name === "openat2" ? "layer" : "layerWalk"}: magic links`, () => {
    layer(realHost({ directories }), { excludeTestServices: true })((it) => {
      it.effect("a component that is a procfs magic link to a root leads back to the root, never out of it", () =>
        Effect.gen(function* () {
          const fx = yield* MountFixture.MountFixture
          const fs = yield* FileSystem.FileSystem
          const dirs = yield* Directory.Directories
          const box = yield* fs.realPath(yield* fx.sandbox).pipe(Effect.orDie)
          const rootPath = `${box}/root`
          yield* fs.makeDirectory(`${rootPath}/a`, { recursive: true })
          yield* fs.makeDirectory(`${rootPath}/proc`)
          yield* fs.makeDirectory(`${box}/outside`)
          yield* fs.writeFileString(`${box}/outside/secret`, "must survive")
          // A procfs of this namespace's processes, below the root (gone with the sandbox's mounts).
          yield* HostCommand.run("mount", ["-t", "proc", "proc", `${rootPath}/proc`]).pipe(Effect.orDie)
          const root = yield* dirs.openRoot(rootPath)
          const rootId = Programs.identity(yield* dirs.stat(root))
          const at = (path: string, o?: Parameters<Directory.Directories["resolve"]>[2]) =>
            Effect.gen(function* () {
              const r = yield* Effect.result(dirs.resolve(root, path, o))
              if (r._tag === "Failure") return `!${r.failure.reason._tag}`
              const above = (yield* dirs.ancestors(r.success.parent)).map(Programs.identity)
              assert.include(above, rootId, `${path} ended outside the root`)
              return r.success.name === undefined ? `${r.success.path}/` : r.success.path
            })
          const follow = { followFinal: true }
          assert.deepStrictEqual(
            [
              yield* at("/proc/self/root/a/x"),
              yield* at("/proc/self/root", follow),
              yield* at("/proc/self/root/"),
              yield* at("/proc/thread-self/root/a/x"),
              yield* at(`/proc/${process.pid}/root/a`, follow),
              yield* at("/proc/self/root/../../a/x"),
              // The real cwd, resolved below the root, where it is not.
              yield* at("/proc/self/cwd/x/y"),
              yield* at("/proc/self/root/a", { noSymlinks: true })
            ],
            ["/a/x", "//", "//", "/a/x", "/a", "/a/x", "!NotFound", "!SymbolicLink"]
          )
          const hostRoot = yield* HostPath.decodeRoot(rootPath)
          assert.strictEqual(yield* HostPath.resolve(hostRoot, "/proc/self/root/a/x"), `${rootPath}/a/x`)
          assert.strictEqual(yield* HostPath.resolve(hostRoot, `/proc/${process.pid}/root`), rootPath)
          assert.strictEqual(
            (yield* Effect.flip(HostPath.decodePath(hostRoot, "/proc/self/root/"))).reason._tag,
            "IsHostRoot"
          )
          assert.strictEqual(yield* fs.readFileString(`${box}/outside/secret`), "must survive")
        }).pipe(Effect.scoped)
      )
    })
  })
}

// The helper hashes a large call on its hashing thread, answering the calls after it meanwhile.
describe.skipIf(gate.skip)("NodeDirectory.layer: sha256", () => {
  layer(realHost(), { excludeTestServices: true })((it) => {
    it.effect(
      "a call of 48 MiB in many ranges: each range's hash, in order, with the calls made meanwhile answered",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const dirs = yield* Directory.Directories
          const hashing = yield* Hashing.Hashing
          // The system's temporary directory (the sandbox's tmpfs is too small for the file).
          const box = yield* fs
            .realPath(yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-sha256-" }))
            .pipe(Effect.orDie)
          const size = 48 * 1024 * 1024
          const bytes = new Uint8Array(size)
          for (let i = 0; i < size; i += 4096) bytes[i] = (i / 4096) & 0xff
          yield* fs.writeFile(`${box}/data`, bytes).pipe(Effect.orDie)
          const root = yield* dirs.openRoot(box)
          const file = yield* dirs.openFile(root, FileName.encode("data"), { mode: "read" })
          const sha256 = dirs.sha256
          if (sha256 === undefined) return assert.fail("the real layer hashes in its helper")
          // Ranges of every size, an empty one, overlapping ones, and one up to the last byte.
          const ranges: Array<{ offset: number; size: number }> = []
          for (let at = 0, k = 0; at < size; k++) {
            const n = Math.min(size - at, k % 7 === 0 ? 3 * 1024 * 1024 + 17 : (k * 65_537) % (900 * 1024))
            ranges.push({ offset: at, size: n })
            at += n
          }
          ranges.splice(3, 0, { offset: 5, size: 0 }, { offset: 1000, size: 10 * 1024 * 1024 })
          const expected = ranges.map((r) => {
            const h = hashing.sha256()
            h.update(bytes.subarray(r.offset, r.offset + r.size))
            return h.digestHex()
          })
          assert.deepStrictEqual(yield* sha256(file, ranges), expected)
          // Again, with calls made while it hashes (answered before it, by another thread of the helper).
          const [hashes, stat, listed] = yield* Effect.all([sha256(file, ranges), dirs.stat(root), dirs.list(root)], {
            concurrency: 3
          })
          assert.deepStrictEqual(hashes, expected)
          assert.strictEqual(stat.type, "Directory")
          assert.deepStrictEqual(
            listed.map((e) => FileName.decode(e.name)),
            ["data"]
          )
          // A range past the end fails, wherever it is among them.
          for (const late of [ranges.length - 1, 1]) {
            const past = ranges.map((r, i) => (i === late ? { offset: size - 10, size: 20 } : r))
            const failed = yield* Effect.flip(sha256(file, past))
            assert.include(failed.message, `the file ends at ${size}`)
          }
        }).pipe(Effect.scoped)
    )
  })
})
