// The `hostnode` executable as one ESM bundle (run by `npm run build` after
// `tsc -b`): packages/cli/dist/bundle/bin.js, with a chunk per command's work
// that the entry imports only when that command runs (esbuild's code
// splitting follows bin.ts's dynamic imports). `--help`, `--version` and a
// usage error load the entry and its static chunks only: the command tree and
// the part of effect it needs, never @hostnode/node, @effect/platform-node or
// koffi (packages/cli/test/bundle.test.ts checks this).
//
// What is in it, and why:
// - effect, @effect/platform-node, and @hostnode/core, /sim and /node: all of
//   them, so the process holds one copy of effect. Keeping effect outside
//   would load all of effect's files before the first argument is read (about
//   six times a bare `node` start); keeping a @hostnode package outside while
//   bundling effect would run it on a second copy of effect.
// - koffi stays outside (a native addon that loads its binary from its own
//   package); @hostnode/cli depends on it for that reason.
// - @hostnode/node's files are bundled, but each keeps its own location: every
//   `import.meta.url` in them is replaced by the URL of the same file in the
//   installed @hostnode/node package, found at run time with
//   `import.meta.resolve("@hostnode/node/package.json")`. So
//   `new URL("./helper.js", import.meta.url)` still names a file beside that
//   module's code in @hostnode/node, and `createRequire(import.meta.url)` still
//   resolves that package's own dependencies (`@homebridge/dbus-native`).
// - The library packages are unchanged: `import "@hostnode/cli"` is still
//   dist/index.js, on the project's own effect.
//
// Usage: node scripts/bundle-cli.mjs [--from dist|source] [--outdir DIR]
//   --from dist (the default): bundle the compiled packages (dist/, after tsc -b);
//   --from source: bundle the TypeScript sources (the `@hostnode/source` export
//   condition), which needs no build: the tests use it.

import { readFile, rm, writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join, relative, sep } from "node:path"
import { fileURLToPath } from "node:url"
import * as esbuild from "esbuild"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const cli = join(root, "packages", "cli")

/** The directory of the @hostnode/node package esbuild bundles (as resolved from the CLI). */
const nodePackageDir = dirname(createRequire(join(cli, "package.json")).resolve("@hostnode/node/package.json"))

/**
 * Rewrites `import.meta.url` in @hostnode/node's files to the URL of the same
 * file in the installed package (see above).
 */
const nodeFilesKeepTheirUrl = {
  name: "hostnode-node-files-keep-their-url",
  setup(build) {
    build.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
      const inside = relative(nodePackageDir, args.path)
      if (inside.startsWith("..") || inside.split(sep).includes("node_modules")) return undefined
      const source = await readFile(args.path, "utf8")
      if (!source.includes("import.meta.url")) return undefined
      const path = inside.split(sep).join("/")
      const url = `new URL(${JSON.stringify(path)}, import.meta.resolve("@hostnode/node/package.json")).href`
      return {
        contents: source.replaceAll("import.meta.url", url),
        loader: args.path.endsWith(".ts") ? "ts" : "js"
      }
    })
  }
}

/** Bundles the executable into `outdir`; returns esbuild's metafile (inputs and outputs of each chunk). */
export const bundleCli = async ({ from = "dist", outdir = join(cli, "dist", "bundle") } = {}) => {
  // esbuild leaves the files of earlier builds (chunks are named by their hash): start empty, so only this build
  // ships (the compile cache beside it goes too; it would not match the new chunks).
  await rm(outdir, { recursive: true, force: true })
  const result = await esbuild.build({
    entryPoints: { bin: join(cli, from === "source" ? "src/bin.ts" : "dist/bin.js") },
    outdir,
    // The metafile names inputs and outputs relative to the workspace.
    absWorkingDir: root,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22",
    conditions: from === "source" ? ["@hostnode/source"] : [],
    external: ["koffi"],
    chunkNames: "chunks/[name]-[hash]",
    minify: true,
    // Names are not kept: nothing reads a class or function name at run time, and keeping them costs start time.
    keepNames: false,
    legalComments: "none",
    // Bundled CommonJS (undici, under @effect/platform-node) calls `require`: give each chunk one.
    banner: {
      js: 'import { createRequire as __hostnodeCreateRequire } from "node:module"; const require = __hostnodeCreateRequire(import.meta.url);'
    },
    plugins: [nodeFilesKeepTheirUrl],
    metafile: true,
    logLevel: "warning"
  })
  return result.metafile
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const option = (name) => {
    const i = args.indexOf(name)
    return i === -1 ? undefined : args[i + 1]
  }
  const from = option("--from") ?? "dist"
  if (from !== "dist" && from !== "source") {
    console.error(`bundle-cli: --from takes dist or source, not ${from}`)
    process.exit(2)
  }
  const outdir = option("--outdir")
  const metafile = await bundleCli({ from, ...(outdir === undefined ? {} : { outdir }) })
  const out = outdir ?? join(cli, "dist", "bundle")
  await writeFile(join(out, "meta.json"), JSON.stringify(metafile))
}
