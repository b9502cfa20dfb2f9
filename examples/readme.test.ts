/**
 * The README shows the example program, its entry point and its test as
 * they are in this folder: the files are compiled and run, so the README
 * cannot show code that does not work.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Path } from "effect"

/** The bodies of the README's ```ts blocks. */
const tsBlocks = (markdown: string): ReadonlyArray<string> =>
  [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "")

describe("README", () => {
  for (const file of [
    "repave.ts",
    "main.ts",
    "container.ts",
    "repave.test.ts",
    "upgrade.ts",
    "upgrade.test.ts",
    "dryrun.ts",
    "dryrun.test.ts",
    "telemetry.ts",
    "telemetry.test.ts"
  ]) {
    it.effect(`shows examples/${file} exactly`, () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const here = path.dirname(yield* path.fromFileUrl(new URL(import.meta.url)))
        const readme = yield* fs.readFileString(path.join(here, "..", "README.md"))
        const source = yield* fs.readFileString(path.join(here, file))
        assert.include(tsBlocks(readme), source, `README.md has no \`\`\`ts block equal to examples/${file}`)
      }).pipe(Effect.provide(NodeServices.layer))
    )
  }
})
