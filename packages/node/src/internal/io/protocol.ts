/**
 * The wire between the agent and its helper process: frames of a 4-byte
 * little-endian length and a structured-clone payload (`node:v8`
 * serialization: numbers, bigints, strings, byte arrays and plain objects
 * cross unchanged). The agent sends requests; the helper answers each with
 * one reply, and for a long program with progress frames before it.
 *
 * Internal: shared by `./client.ts` (the agent) and `./server.ts` (the helper).
 *
 * @since 0.4.0
 */
import { deserialize, serialize } from "node:v8"
import type { Failure } from "@hostnode/core/Programs"

/** A request: which operation, its arguments, and descriptors to close first (closes ride on the next request). */
export interface Request {
  readonly id: number
  readonly op: string
  readonly args: ReadonlyArray<unknown>
  readonly closes?: ReadonlyArray<number> | undefined
}

/** What the helper sends back for a request. */
export type Reply =
  | { readonly id: number; readonly ok: unknown }
  | { readonly id: number; readonly err: Failure }
  | { readonly id: number; readonly progress: unknown }

/** One frame for `message`. */
export const frame = (message: Request | Reply): Buffer => {
  const parts = frameParts(message)
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts)
}

/**
 * One frame for `message`, as the buffers to write one after the other: a
 * large body (a batch of files read) after its length, not copied again; a
 * small one joined to it (one write, not two).
 */
export const frameParts = (message: Request | Reply): ReadonlyArray<Buffer> => {
  const body = serialize(message)
  if (body.length < 64 * 1024) {
    const out = Buffer.allocUnsafe(4 + body.length)
    out.writeUInt32LE(body.length, 0)
    body.copy(out, 4)
    return [out]
  }
  const head = Buffer.allocUnsafe(4)
  head.writeUInt32LE(body.length, 0)
  return [head, body]
}

/**
 * Reads whole frames out of the bytes as they come. The chunks of a frame
 * are kept as they came and joined once it is whole: joining at every chunk
 * copied a large reply (a megabyte read) over and over.
 */
export class Frames {
  private chunks: Array<Buffer> = []
  private size = 0
  /** Appends bytes read; returns every whole message now available. */
  push(chunk: Buffer): Array<unknown> {
    this.chunks.push(chunk)
    this.size += chunk.length
    const out: Array<unknown> = []
    for (;;) {
      if (this.size < 4) break
      const head = this.chunks[0] as Buffer
      const n = head.length >= 4 ? head.readUInt32LE(0) : this.join().readUInt32LE(0)
      if (this.size < 4 + n) break
      const buf = this.join()
      out.push(deserialize(buf.subarray(4, 4 + n)))
      const rest = buf.subarray(4 + n)
      this.chunks = rest.length === 0 ? [] : [rest]
      this.size = rest.length
    }
    return out
  }
  /** The chunks as one buffer (kept so). */
  private join(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.size)]
    return this.chunks[0] as Buffer
  }
}
