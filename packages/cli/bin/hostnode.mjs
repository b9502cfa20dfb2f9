#!/usr/bin/env node
// The `hostnode` executable as npm links it. It is plain JavaScript and exists
// before any build, so `npm ci` can link it; the command itself is the bundle
// packages/cli/dist/bundle/bin.js, produced by `npm run build`
// (scripts/bundle-cli.mjs): one ESM entry that loads a command's work, and the
// real host's layers, only when that command runs.
import { existsSync } from "node:fs"
import { enableCompileCache } from "node:module"
import { fileURLToPath } from "node:url"

const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(
    `hostnode needs Node >= 22.19 (this is ${process.versions.node}); run it with \`npx hostnode\` from the project.`
  )
  process.exit(2)
}
const bundle = new URL("../dist/bundle/bin.js", import.meta.url)
if (!existsSync(bundle)) {
  console.error("hostnode is not built yet: run `npm run build` first (or `npm start` to run from source).")
  process.exit(2)
}
// V8's compiled code of the bundle, kept beside it so a later start skips most of the compiling. Beside the
// code and not in the shared temporary directory: this command runs as root, and a cache another user could
// write would be code it runs. Where the package is read-only it runs without one (NODE_COMPILE_CACHE and
// NODE_DISABLE_COMPILE_CACHE decide as for any Node program).
enableCompileCache(fileURLToPath(new URL("../dist/bundle/.compile-cache", import.meta.url)))
await import(bundle.href)
