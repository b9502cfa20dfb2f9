/**
 * The trees the snapshot benchmarks write: deterministic contents per file
 * and round, sizes from 4 KB to about 76 KB scaled to a total.
 */
import { Effect, FileSystem } from "effect"

/** Deterministic bytes for file `i` in round `round`: differ at byte 0, so a comparison stops at once. */
export const contents = (i: number, round: number, size: number) => {
  const out = new Uint8Array(size)
  for (let k = 0; k < size; k += 97) out[k] = (i + round * 7 + k) & 0xff
  out[0] = (i + round) & 0xff
  return out
}

/** A tree of `files` files, `total` bytes in all (sizes 4 KB to about 76 KB, scaled), in `dirs` directories. */
export const layout = (files: number, total: number, dirs: number) => {
  const sizes = Array.from({ length: files }, (_, i) => 4096 + ((i * 7919) % 73_728))
  const scale = total / sizes.reduce((a, b) => a + b, 0)
  const scaled = sizes.map((s) => Math.floor(s * scale))
  return { scaled, paths: (tree: string) => scaled.map((_, i) => `${tree}/d${i % dirs}/f${i}.conf`), dirs }
}

/** Writes the tree (round `round` of the contents) below `tree`. */
export const writeTree = (tree: string, l: ReturnType<typeof layout>, round: number) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    for (let d = 0; d < l.dirs; d++) yield* fs.makeDirectory(`${tree}/d${d}`, { recursive: true })
    yield* Effect.forEach(l.paths(tree), (p, i) => fs.writeFile(p, contents(i, round, l.scaled[i] ?? 0)), {
      concurrency: 8,
      discard: true
    })
  })
