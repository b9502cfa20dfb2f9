/**
 * The boundary between core and the platform layers, read from core's
 * sources: core imports no `node:*` module and classifies no platform code
 * (Node's `error.code`, errno or c-ares names read off an error); the node
 * layers turn those into the typed outcomes core declares.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem } from "effect"

const coreSrc = fileURLToPath(new URL("../../core/src", import.meta.url))

// What reading a platform code looks like: any `.code` (core has no field of
// that name) and the c-ares answers Node's resolver fails with.
const platformReads = [
  /\.code\b/,
  /\b(?:ENOTFOUND|ECONNREFUSED|ETIMEOUT|ENODATA|ESERVFAIL|EREFUSED|ENOTIMP)\b/,
  /from "node:/
]

describe("core's boundary", () => {
  it.effect("no core source imports node:* or reads a platform error code", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const files = (yield* fs.readDirectory(coreSrc, { recursive: true })).filter((f) => f.endsWith(".ts"))
      assert.isAbove(files.length, 30)
      const found: Array<string> = []
      for (const file of files) {
        const lines = (yield* fs.readFileString(`${coreSrc}/${file}`)).split("\n")
        lines.forEach((line, i) => {
          // Doc comments may name the codes they speak of.
          if (/^\s*(\*|\/\/|\/\*\*)/.test(line)) return
          if (platformReads.some((re) => re.test(line))) found.push(`${file}:${i + 1}: ${line.trim()}`)
        })
      }
      assert.deepStrictEqual(found, [])
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
