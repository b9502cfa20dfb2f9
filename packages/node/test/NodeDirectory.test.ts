/**
 * The Directories conformance suite on the real layer, in the private mount
 * namespace on a tmpfs sandbox with real tmpfs and bind mounts: once with
 * `openat2` resolution and once walking handle to handle (the fallback for
 * kernels without `openat2`), a real FIFO, the process's open descriptors
 * counted, and a real concurrent swapper (`fixtures/racer.c`).
 */
import { readdirSync } from "node:fs"
import { describe } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { NodeDirectory } from "@hostnode/node"
import { Gate } from "@hostnode/test"
import { DirectoryConformance } from "@hostnode/test/conformance"
import { Effect, type FileSystem } from "effect"
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

const options: DirectoryConformance.Options<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem> = {
  fifo: (path) => Effect.asVoid(HostCommand.run("mkfifo", ["--", path]).pipe(Effect.orDie)),
  openDescriptors: Effect.sync(() => readdirSync("/proc/self/fd").length),
  swapper: (a, b) =>
    Effect.gen(function* () {
      const binary = yield* Racer.build
      yield* Racer.start(binary, "exchange", a, b)
    }),
  swapRuns: Gate.loops(20_000)
}

describe.skipIf(gate.skip)("NodeDirectory", () => {
  DirectoryConformance.suite<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>(
    "NodeDirectory.layer (openat2)",
    realHost(),
    options
  )
  DirectoryConformance.suite<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>(
    "NodeDirectory.layerWalk (handle to handle)",
    realHost({ directories: NodeDirectory.layerWalk }),
    options
  )
})
