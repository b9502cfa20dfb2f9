/**
 * The conformance suite for `FileSystem` implementations: what
 * `@effect/platform-node`'s NodeFileSystem does on Linux for a root process with
 * umask 022. The real file system and `MemoryHost` pass it; a user's own file
 * system (a wrapper that chroots, one that records, a fake) can run the same
 * tests to show it can stand in for the real one. Everything happens inside one
 * fresh root directory per test; directory sizes, device and inode numbers and
 * times other than those set by `utimes` are not asserted.
 *
 * @since 0.1.0
 */
import { layer } from "@effect/vitest"
import { Effect, FileSystem, type Layer, type PlatformError } from "effect"
import type * as Scope from "effect/Scope"
import { contents } from "./internal/fileSystemConformance/contents.ts"
import { copies } from "./internal/fileSystemConformance/copies.ts"
import { handles } from "./internal/fileSystemConformance/handles.ts"
import type * as Harness from "./internal/fileSystemConformance/harness.ts"
import { lookup } from "./internal/fileSystemConformance/lookup.ts"
import { tree } from "./internal/fileSystemConformance/tree.ts"

/**
 * How the suite gets its per-test root directory.
 *
 * @category conformance
 * @since 0.1.0
 */
export interface Options {
  /**
   * A fresh, empty directory inside the file system under test, removed when
   * the test's scope closes. Default: `fs.makeTempDirectoryScoped()`.
   */
  readonly root?: Effect.Effect<string, PlatformError.PlatformError, FileSystem.FileSystem | Scope.Scope> | undefined
}

/**
 * Registers the suite under `name` against the `FileSystem` that `fsLayer`
 * provides. The layer is built once for the whole suite; every test works in
 * its own fresh root (see `Options.root`).
 *
 * @category conformance
 * @since 0.1.0
 */
export const suite = <E>(name: string, fsLayer: Layer.Layer<FileSystem.FileSystem, E>, options: Options = {}): void =>
  layer(fsLayer)(`FileSystem conformance: ${name}`, (it) => {
    const root: Effect.Effect<string, PlatformError.PlatformError, FileSystem.FileSystem | Scope.Scope> =
      options.root ??
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        return yield* fs.makeTempDirectoryScoped()
      })

    const test: Harness.Test = (title, body) =>
      it.effect(title, () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const r = yield* root
          yield* body(fs, r)
        })
      )

    lookup(test)
    contents(test)
    tree(test)
    copies(test)
    handles(test)
  })
