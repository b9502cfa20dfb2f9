/**
 * The README and the pages of docs/ show the example programs and their tests
 * as they are in this folder: the files are compiled and run, so the docs
 * cannot show code that does not work. The README keeps to its 200 lines,
 * its install command names the Node the workspace pins, and every relative
 * link of the repository's docs leads to a file (and heading) that is there.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Path } from "effect"

/** Where each example is shown, relative to the repository's root. */
const shownIn: ReadonlyArray<readonly [file: string, page: string]> = [
  ["repave.ts", "README.md"],
  ["repave.test.ts", "README.md"],
  ["main.ts", "docs/packages.md"],
  ["container.ts", "docs/design/container.md"],
  ["upgrade.ts", "docs/testing.md"],
  ["upgrade.test.ts", "docs/testing.md"],
  ["dryrun.ts", "docs/design/dry-run.md"],
  ["dryrun.test.ts", "docs/design/dry-run.md"],
  ["telemetry.ts", "docs/observability.md"],
  ["telemetry.test.ts", "docs/observability.md"]
]

/** The pages whose links are checked besides those of docs/ (its generated api/ aside). */
const topLevelPages = ["README.md", "CONTRIBUTING.md", "bench/README.md"]

/** The bodies of a page's ```ts blocks. */
const tsBlocks = (markdown: string): ReadonlyArray<string> =>
  [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "")

/** The page without its code (fenced blocks and code spans), where a `[x](y)` is not a link. */
const prose = (markdown: string): string =>
  markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/``[^`\n]*``|`[^`\n]*`/g, "")

/** The relative link targets of a page (no scheme, not only an anchor). */
const relativeLinks = (markdown: string): ReadonlyArray<string> =>
  [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((m) => m[1] ?? "")
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("#"))

/** The anchors of a page's headings, as GitHub makes them. */
const anchors = (markdown: string): ReadonlySet<string> =>
  new Set(
    [...prose(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)].map((m) =>
      (m[1] ?? "")
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-")
    )
  )

const readme = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const here = path.dirname(yield* path.fromFileUrl(new URL(import.meta.url)))
  const root = path.join(here, "..")
  return { fs, path, root, read: (file: string) => fs.readFileString(path.join(root, file)) }
})

describe("README and docs", () => {
  for (const [file, page] of shownIn) {
    it.effect(`${page} shows examples/${file} exactly`, () =>
      Effect.gen(function* () {
        const { read } = yield* readme
        const blocks = tsBlocks(yield* read(page))
        assert.include(
          blocks,
          yield* read(`examples/${file}`),
          `${page} has no \`\`\`ts block equal to examples/${file}`
        )
      }).pipe(Effect.provide(NodeServices.layer))
    )
  }

  it.effect("the README has at most 200 lines", () =>
    Effect.gen(function* () {
      const { read } = yield* readme
      const lines = (yield* read("README.md")).replace(/\n$/, "").split("\n").length
      assert.isAtMost(lines, 200, `README.md has ${lines} lines; move the detail to docs/`)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("the README's install command runs npm on the Node the workspace pins (and .nvmrc names)", () =>
    Effect.gen(function* () {
      const { read } = yield* readme
      const pinned = JSON.parse(yield* read("package.json")).devDependencies.node as string
      const install = /^npx -y -p node@(\S+) -- npm ci\b/m.exec(yield* read("README.md"))
      assert.isNotNull(install, "README.md has no `npx -y -p node@VERSION -- npm ci` line")
      assert.strictEqual(install?.[1], pinned, "the README installs with another Node than the `node` dev dependency")
      assert.strictEqual((yield* read(".nvmrc")).trim(), pinned, ".nvmrc names another Node than the dev dependency")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("every relative link of the docs leads to a file that is there, and to a heading of it", () =>
    Effect.gen(function* () {
      const { fs, path, root, read } = yield* readme
      const docs = (yield* fs.readDirectory(path.join(root, "docs"), { recursive: true }))
        .filter((f) => f.endsWith(".md") && !f.startsWith("api/"))
        .map((f) => `docs/${f}`)
      assert.include(docs, "docs/cli.md")
      const broken: Array<string> = []
      for (const page of [...topLevelPages, ...docs]) {
        for (const target of relativeLinks(yield* read(page))) {
          const [file = "", anchor] = decodeURIComponent(target).split("#")
          const resolved = path.relative(root, path.resolve(path.dirname(path.join(root, page)), file))
          // docs/api/ is built by `npm run docs` (and gitignored): its pages are there once built.
          if (resolved.startsWith("docs/api/")) continue
          if (resolved.startsWith("..") || !(yield* fs.exists(path.join(root, resolved)))) {
            broken.push(`${page}: ${target} (no ${resolved})`)
          } else if (anchor !== undefined && anchor !== "" && resolved.endsWith(".md")) {
            if (!anchors(yield* read(resolved)).has(anchor)) broken.push(`${page}: ${target} (no heading #${anchor})`)
          }
        }
      }
      assert.deepStrictEqual(broken, [])
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
