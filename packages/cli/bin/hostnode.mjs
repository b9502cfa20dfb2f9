#!/usr/bin/env node
// The `hostnode` executable as npm links it. It is plain JavaScript and exists
// before any build, so `npm ci` can link it; the command itself is the bundle
// packages/cli/dist/bundle/bin.js, produced by `npm run build`
// (scripts/bundle-cli.mjs): one ESM entry that loads a command's work, and the
// real host's layers, only when that command runs.
//
// It runs on any Node first, so that an older one is told how to get a newer one: nothing is imported by name from
// Node's modules (an older Node lacks some, `enableCompileCache` among them, and a missing named import fails before
// this file's first line runs).
import * as fs from "node:fs"
import * as nodeModule from "node:module"
import * as url from "node:url"

const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  // The same command again, each argument quoted for a POSIX shell where it needs it.
  const quoted = process.argv.slice(2).map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`))
  const again = ["hostnode", ...quoted].join(" ")
  console.error(
    [
      `hostnode needs Node >= 22.19, but runs on Node ${process.versions.node} (${process.execPath}).`,
      "Get Node 22.19 or newer, then run it again:",
      "  - with nvm: `nvm install 22`, then `nvm use 22` (a global install of hostnode is per Node: install it again);",
      "  - or from https://nodejs.org (the 22 LTS, or newer), or your distribution's nodejs package if it is >= 22.19;",
      `  - or for this run only, Node 22 from npm: \`npx -y -p node@22 -- ${again}\``
    ].join("\n")
  )
  process.exit(2)
}
const bundle = new URL("../dist/bundle/bin.js", import.meta.url)
if (!fs.existsSync(bundle)) {
  console.error("hostnode is not built yet: run `npm run build` first (or `npm start` to run from source).")
  process.exit(2)
}
// V8's compiled code of the bundle, kept beside it so a later start skips most of the compiling. Beside the
// code and not in the shared temporary directory: this command runs as root, and a cache another user could
// write would be code it runs. Where the package is read-only it runs without one (NODE_COMPILE_CACHE and
// NODE_DISABLE_COMPILE_CACHE decide as for any Node program).
nodeModule.enableCompileCache(url.fileURLToPath(new URL("../dist/bundle/.compile-cache", import.meta.url)))
await import(bundle.href)
