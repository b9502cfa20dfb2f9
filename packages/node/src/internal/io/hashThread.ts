/**
 * A second thread of the helper process for hashing: `sha256` of a large
 * call (a restore's check of its snapshot's data, about 150 ms for 200 MB at
 * 1.9 GB/s) runs here while the helper's own thread goes on answering the
 * agent's next requests (a restore reads the host's directories meanwhile),
 * and its answer is sent when it is done (see `./server.ts`).
 *
 * The helper's thread stays synchronous: it hands the thread a job, asks
 * whether it is done between requests (`Atomics.load`), and takes the answer
 * off the port without an event loop (`receiveMessageOnPort`); with no
 * request to answer it waits in `poll` for the next one and for the thread's
 * answer together (the thread writes an eventfd when it answers); it can also
 * wait for the answer alone (`Atomics.wait`). The thread reads its own duplicate of the
 * descriptor (`pread` at offsets), so a close the agent sends meanwhile
 * cannot take the file from under it, and a read that blocks on a dead file
 * system blocks it as it would the helper's own thread: the agent gives up on
 * the helper as before. A thread that has not started within seconds of
 * being made is never used: the helper hashes alone.
 *
 * Internal: `./server.ts` uses it; it loads nothing but `node:worker_threads`.
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads"

/** The thread's program (CommonJS, evaluated): says it started, then hashes the ranges of a descriptor per job. */
const program = `
const { workerData } = require("node:worker_threads")
const { readSync, writeSync } = require("node:fs")
const { createHash } = require("node:crypto")
const flag = new Int32Array(workerData.flag)
const port = workerData.port
const buffer = Buffer.allocUnsafe(1024 * 1024)
const one = Buffer.from(new BigUint64Array([1n]).buffer)
const answer = (message) => {
  port.postMessage(message)
  Atomics.store(flag, 0, 1)
  Atomics.notify(flag, 0)
  // Wakes the helper's thread where it waits in poll for a request or this answer (an eventfd: never blocks).
  if (workerData.wake >= 0) {
    try {
      writeSync(workerData.wake, one)
    } catch {}
  }
}
port.on("message", (m) => {
  const hashes = []
  try {
    for (const r of m.ranges) {
      const h = createHash("sha256")
      for (let at = 0; at < r.size; ) {
        const n = readSync(m.fd, buffer, 0, Math.min(buffer.length, r.size - at), r.offset + at)
        if (n === 0) return answer({ endsAt: r.offset + at })
        h.update(buffer.subarray(0, n))
        at += n
      }
      hashes.push(h.digest("hex"))
    }
    answer({ hashes })
  } catch (e) {
    answer({ code: typeof e?.code === "string" ? e.code : "EIO", message: String(e?.message ?? e) })
  }
})
Atomics.store(flag, 1, 1)
Atomics.notify(flag, 1)
`

/** What the thread answers for a call: the hashes, where the file ended, or the error of a read. */
export type Answer =
  | { readonly hashes: ReadonlyArray<string> }
  | { readonly endsAt: number }
  | { readonly code: string; readonly message: string }

/** How long a thread has to start, from when it was made, before the helper hashes alone. */
const StartMillis = 5000

/** The hashing thread (see the module comment): one job at a time. */
export class HashThread {
  /** `[0]`: the job's answer is on the port; `[1]`: the thread started. */
  private readonly flag: Int32Array
  private readonly port: MessagePort
  private readonly madeAt: number
  /** Held for the helper's life (the thread is unref'ed: it never keeps the helper alive). */
  readonly worker: Worker

  private constructor(flag: Int32Array, port: MessagePort, worker: Worker) {
    this.flag = flag
    this.port = port
    this.worker = worker
    this.madeAt = performance.now()
  }

  /**
   * Makes the thread (it starts on its own, a few tens of milliseconds); `undefined` when it cannot be made.
   * `wake`, an eventfd of the helper's (or -1): the thread adds 1 to it with each answer, so that the helper's
   * thread can wait for a request and the answer in one `poll`.
   */
  static make(wake: number): HashThread | undefined {
    const shared = new SharedArrayBuffer(8)
    const { port1, port2 } = new MessageChannel()
    try {
      const worker = new Worker(program, {
        eval: true,
        workerData: { flag: shared, port: port2, wake },
        transferList: [port2]
      })
      worker.unref()
      return new HashThread(new Int32Array(shared), port1, worker)
    } catch {
      return undefined
    }
  }

  /** Hands the thread the job: `ranges` of `fd` (which it must not close before the answer is taken). */
  begin(fd: number, ranges: ReadonlyArray<{ readonly offset: number; readonly size: number }>): void {
    Atomics.store(this.flag, 0, 0)
    this.port.postMessage({ fd, ranges })
  }

  /** True when the job's answer is there to take. */
  done(): boolean {
    return Atomics.load(this.flag, 0) === 1
  }

  /**
   * Milliseconds left for the thread to start (0 once that time is up), or
   * `undefined` once it has started: a wait for its answer ends by then, and
   * {@link finish} says it never started.
   */
  startDueIn(): number | undefined {
    if (Atomics.load(this.flag, 1) === 1) return undefined
    return Math.max(0, StartMillis - (performance.now() - this.madeAt))
  }

  /**
   * The job's answer, waited for; `undefined` when the thread did not start
   * within {@link StartMillis} of being made (it is never asked again).
   */
  finish(): Answer | undefined {
    const left = StartMillis - (performance.now() - this.madeAt)
    if (Atomics.load(this.flag, 1) !== 1 && Atomics.wait(this.flag, 1, 0, Math.max(0, left)) === "timed-out") {
      void this.worker.terminate()
      return undefined
    }
    Atomics.wait(this.flag, 0, 0)
    return receiveMessageOnPort(this.port)?.message as Answer
  }
}
