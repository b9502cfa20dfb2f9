/**
 * The dry-run `FileSystem`: the primitives of `view.ts`, `writes.ts` and
 * `copy.ts` assembled with `FileSystem.make`, so the methods Effect derives
 * see the overlay too. Boundary: assembly only.
 */
import { HostPath } from "@hostnode/core"
import { Effect, FileSystem, Layer } from "effect"
import { makeCopy } from "./copy.ts"
import { DryRunPlan } from "./plan.ts"
import { makeView } from "./view.ts"
import { makeWrites } from "./writes.ts"

/** Documented where `DryRun.ts` exports it. */
export const layerFileSystem: Layer.Layer<FileSystem.FileSystem, never, FileSystem.FileSystem | DryRunPlan> =
  Layer.effect(
    FileSystem.FileSystem,
    Effect.gen(function* () {
      const view = makeView(yield* FileSystem.FileSystem, yield* DryRunPlan)
      const writes = makeWrites(view)
      const { copy } = makeCopy(view, writes)
      const { real, access, lstat, stat, readDirectory, readDirectoryEntries, readBytes, readLink, realPath } = view
      const {
        open,
        writeFile,
        remove,
        makeDirectory,
        rename,
        symlink,
        link,
        makeTempDirectoryAs,
        makeTempFileAs,
        removeScoped,
        truncate,
        copyFile,
        chmod,
        chown,
        utimes
      } = writes
      return FileSystem.make({
        access,
        lstat,
        stat,
        readDirectory,
        readDirectoryEntries,
        readFile: readBytes,
        readLink,
        realPath,
        open,
        writeFile,
        remove,
        makeDirectory,
        rename,
        symlink,
        chmod,
        chown,
        makeTempDirectory: makeTempDirectoryAs("makeTempDirectory"),
        makeTempDirectoryScoped: (options) =>
          Effect.acquireRelease(makeTempDirectoryAs("makeTempDirectoryScoped")(options), removeScoped),
        makeTempFile: makeTempFileAs("makeTempFile"),
        makeTempFileScoped: (options) =>
          Effect.acquireRelease(makeTempFileAs("makeTempFileScoped")(options), (file) =>
            removeScoped(HostPath.dirname(file))
          ),
        truncate,
        copyFile,
        copy,
        link,
        utimes,
        // Events of the host only: nothing happens on the overlay's own files.
        watch: (path, options) => real.watch(path, options)
      })
    })
  )
