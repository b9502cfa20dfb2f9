/**
 * The dry-run mounter against the shared Mounter conformance suite, on the
 * simulated host. A dry run records unmounts and never changes the real
 * mount table, so the suite checks it through the dry run's own view: the
 * `MountFixture`'s table is the mount table read through the dry run's file
 * system (where detached mounts are gone), and the paths the suite reads
 * after an unmount are read through that file system too. What the suite
 * sets up before an unmount (directories, files, mounts, a swapped link) is
 * the test's own doing on the host, not the program's, so those writes go to
 * the host; that is also the order in a real dry run: the host is as it is,
 * and the dry run pretends from there.
 */
import { Directory, Mounter, MountInfo } from "@hostnode/core"
import { DryRun, MemoryHost } from "@hostnode/sim"
import * as DryRunDirectories from "@hostnode/sim/internal/dryrun/directories"
import * as DryRunFiles from "@hostnode/sim/internal/dryrun/fileSystem"
import * as DryRunMounter from "@hostnode/sim/internal/dryrun/mounter"
import { MountFixture } from "@hostnode/test"
import { MounterConformance } from "@hostnode/test/conformance"
import { Context, Effect, FileSystem, Layer } from "effect"

/** The simulated host: its FileSystem, directory handles and mount fixture. */
const host = MountFixture.layerMemory.pipe(Layer.provideMerge(MemoryHost.layer()))

/**
 * The dry-run `Mounter` over the host, and the suite's `FileSystem` and
 * `MountFixture` that see what it pretended to do (see the module comment).
 */
const dryRun = Layer.effectContext(
  Effect.gen(function* () {
    const real = yield* FileSystem.FileSystem
    const fx = yield* MountFixture.MountFixture
    const viewed = yield* Effect.provide(FileSystem.FileSystem, DryRunFiles.layerFileSystem)
    const dirs = yield* Effect.provide(
      Directory.Directories,
      DryRunDirectories.layerDirectories.pipe(Layer.provide(Layer.succeed(FileSystem.FileSystem, viewed)))
    )
    const mounter = yield* Effect.provide(
      Mounter.Mounter,
      DryRunMounter.layerMounter.pipe(
        Layer.provide(Layer.succeed(FileSystem.FileSystem, viewed)),
        Layer.provide(Layer.succeed(Directory.Directories, dirs))
      )
    )
    const fs = FileSystem.FileSystem.of({
      ...viewed,
      // The suite's own setup: made on the host.
      makeDirectory: real.makeDirectory,
      writeFileString: real.writeFileString,
      rename: real.rename,
      symlink: real.symlink,
      open: real.open
    })
    const fixture = MountFixture.MountFixture.of({
      ...fx,
      table: MountInfo.read(fx.mountInfo).pipe(Effect.provideService(FileSystem.FileSystem, viewed), Effect.orDie)
    })
    return Context.make(Mounter.Mounter, mounter).pipe(
      Context.add(FileSystem.FileSystem, fs),
      Context.add(MountFixture.MountFixture, fixture)
    )
  })
).pipe(Layer.provide(DryRun.DryRunPlan.layer), Layer.provideMerge(host))

/** Why two of the suite's tests cannot apply to a dry run (they are left out, not skipped). */
const omit = {
  "on stacked mounts each target removes the top one, listed top first":
    "after the top mount of a stack is detached the test reads the file of the mount underneath; a dry run cannot " +
    "show what a mount it pretends to detach covers (on the host that mount is still there, hiding the one below), " +
    "so it shows the mount point as an empty directory. The order part (each target takes the top one, listed top " +
    "first) is checked in DryRun.test.ts, 'a pass of many unmounts'",
  "a busy mount fails with EBUSY unless lazy":
    "EBUSY is the kernel's answer to an unmount it attempts while a process holds a file or a working directory on " +
    "the mount; a dry run attempts none and cannot see every process's open files, so a strict unmount it records " +
    "is Unmounted (said in DryRun.layerMounterWith's comment)"
}

MounterConformance.suite("DryRun.layerMounter over MemoryHost", dryRun, { omit })
