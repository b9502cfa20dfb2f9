/**
 * The repave reset suite on the simulated host. MemoryHost has no mounts yet,
 * so its MountFixture here is a stand-in: `sandbox` is a scoped temporary
 * directory, `mountInfo` a fixed table with the root file system only, and
 * `tmpfs`/`bind` die. The mount and property suites wait for MemoryHost's
 * mounts (see RepaveConformance's module comment for what they need).
 */
import { MountInfo } from "@hostnode/core"
import { MemoryHost, MountFixture } from "@hostnode/test"
import { RepaveConformance } from "@hostnode/test/conformance"
import { Effect, FileSystem, Layer } from "effect"

const mountInfo = "/proc/self/mountinfo"

const noMounts = Layer.effect(
  MountFixture.MountFixture,
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const unsupported = (what: string) =>
      Effect.die(new MountFixture.MountFixtureError(`MemoryHost has no ${what} yet`))
    return MountFixture.MountFixture.of({
      sandbox: fs.makeTempDirectoryScoped({ prefix: "hostnode-mounts-" }).pipe(Effect.orDie),
      tmpfs: () => unsupported("tmpfs mounts"),
      bind: () => unsupported("bind mounts"),
      mountInfo,
      table: MountInfo.read(mountInfo).pipe(Effect.provideService(FileSystem.FileSystem, fs), Effect.orDie)
    })
  })
)

const host = noMounts.pipe(
  Layer.provideMerge(MemoryHost.layer({ files: { [mountInfo]: "1 0 8:1 / / rw,relatime - ext4 /dev/root rw\n" } }))
)

RepaveConformance.resets("MemoryHost (no mounts yet)", host)
