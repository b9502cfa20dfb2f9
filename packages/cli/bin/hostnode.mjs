#!/usr/bin/env node
// The `hostnode` executable as npm links it. It is plain JavaScript and exists
// before any build, so `npm ci` can link it; the command itself is the compiled
// packages/cli/dist/bin.js, produced by `npm run build`.
import { existsSync } from "node:fs"

const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(
    `hostnode needs Node >= 22.19 (this is ${process.versions.node}); run it with \`npx hostnode\` from the project.`
  )
  process.exit(2)
}
if (!existsSync(new URL("../dist/bin.js", import.meta.url))) {
  console.error("hostnode is not built yet: run `npm run build` first (or `npm start` to run from source).")
  process.exit(2)
}
await import("../dist/bin.js")
