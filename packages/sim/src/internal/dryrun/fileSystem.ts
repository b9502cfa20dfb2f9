/**
 * The dry-run `FileSystem`: the primitives of `view.ts`, `writes.ts` and
 * `copy.ts` assembled with `FileSystem.make`, so the methods Effect derives
 * see the overlay too. Boundary: assembly only.
 */

import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, Layer } from "effect"
import { makeCopy } from "./copy.ts"
import { DryRunPlan } from "./plan.ts"
import { makeView, withView } from "./view.ts"
import { makeWrites } from "./writes.ts"

/**
 * FileSystem whose reads see the host plus what the dry run pretended to do,
 * and whose changes are recorded in order and kept in an in-memory overlay.
 *
 * Built with `FileSystem.make` from primitives over the overlay, so that the
 * methods Effect derives from them (`exists`, `readFileString`, `stream`,
 * `sink`, `writeFileString`, `glob`) see the overlay too; nothing of the real
 * service is passed through unwrapped. Its failures are Node's layer's (the
 * same reason for each errno, the same syscall names), and the shared
 * FileSystem conformance suite runs over it. Boundaries: `utimes` of a
 * host path is only recorded (the overlay keeps times of its own files),
 * a hard link to a host file copies it into the overlay, and `watch` sees
 * the host's events only.
 */
export const layerFileSystem: Layer.Layer<FileSystem.FileSystem, never, FileSystem.FileSystem | DryRunPlan> =
  Layer.effect(
    FileSystem.FileSystem,
    Effect.gen(function* () {
      const view = makeView(yield* FileSystem.FileSystem, yield* DryRunPlan)
      const writes = makeWrites(view)
      const { copy } = makeCopy(view, writes)
      return withView(
        FileSystem.make({
          access: view.access,
          lstat: view.lstat,
          stat: view.stat,
          readDirectory: view.readDirectory,
          readDirectoryEntries: view.readDirectoryEntries,
          readFile: view.readBytes,
          readLink: view.readLink,
          realPath: view.realPath,
          open: writes.open,
          writeFile: writes.writeFile,
          remove: writes.remove,
          makeDirectory: writes.makeDirectory,
          rename: writes.rename,
          symlink: writes.symlink,
          chmod: writes.chmod,
          chown: writes.chown,
          makeTempDirectory: writes.makeTempDirectoryAs("makeTempDirectory"),
          makeTempDirectoryScoped: (options) =>
            Effect.acquireRelease(writes.makeTempDirectoryAs("makeTempDirectoryScoped")(options), writes.removeScoped),
          makeTempFile: writes.makeTempFileAs("makeTempFile"),
          makeTempFileScoped: (options) =>
            Effect.acquireRelease(writes.makeTempFileAs("makeTempFileScoped")(options), (file) =>
              writes.removeScoped(Lexical.dirname(file))
            ),
          truncate: writes.truncate,
          copyFile: writes.copyFile,
          copy,
          link: writes.link,
          utimes: writes.utimes,
          // Events of the host only: nothing happens on the overlay's own files.
          watch: (path, options) => view.real.watch(path, options)
        }),
        view
      )
    })
  )
