/**
 * The helper's driver of `Programs`: each operation a program yields is one
 * system call (or two) of `Sys`, answered at once; every few operations it
 * calls `tick`, which reports progress and may stop the program (the
 * operation's deadline passed: every later operation then fails `Hung`, and
 * the program ends with what it did).
 *
 * Internal: `./server.ts` runs the removal walk and the mount verification with it.
 *
 * @since 0.4.0
 */
import { type Failure, type Op, type Program, runSync } from "@hostnode/core/Programs"
import type { Sys } from "./sys.ts"

/** What the driver asks of its caller between operations. */
export interface Ticker {
  /** Called every few operations: false stops the program (the caller says why with `stopped`). */
  readonly tick: () => boolean
  /** The failure every operation gets once stopped. */
  readonly stopped: () => Failure
  /** A `removed` event. */
  readonly removed?: ((path: string) => void) | undefined
  /** How many names the last operation removed (for progress: the program's own counts are its result). */
  readonly count?: ((n: number) => void) | undefined
}

/** Runs `program` over `sys` (see the module comment). */
export const run = <R>(sys: Sys, program: Program<number, R>, ticker: Ticker): R => {
  let n = 0
  let stop: Failure | undefined
  return runSync(program, (op: Op<number>): unknown => {
    if (op._op === "close") {
      sys.close(op.handle)
      return undefined
    }
    if (op._op === "removed") {
      ticker.removed?.(op.path)
      return undefined
    }
    if (stop === undefined && (++n & 63) === 0 && !ticker.tick()) stop = ticker.stopped()
    if (stop !== undefined) return op._op === "unlinkAll" ? op.names.map(() => stop) : stop
    switch (op._op) {
      case "identify":
        return sys.identify(op.dir, op.name)
      case "openDirectory": {
        const r = sys.openDirectory(op.dir, op.name, op.sameMount)
        return "_tag" in r ? r : { handle: r.fd, identity: r.identity }
      }
      case "openParent": {
        const r = sys.openParent(op.dir)
        return "_tag" in r ? r : { handle: r.fd, identity: r.identity }
      }
      case "openBeneath": {
        const r = sys.openBeneath(op.root, op.components)
        return "_tag" in r ? r : { handle: r.fd, identity: r.identity }
      }
      case "readDirectory":
        return sys.readDirectory(op.dir, op.restart)
      case "unlink": {
        const r = sys.unlink(op.dir, op.name, op.directory)
        if (r === undefined) ticker.count?.(1)
        return r
      }
      case "unlinkAll": {
        const r = sys.unlinkAll(op.dir, op.names)
        let gone = 0
        for (const x of r) if (x === undefined) gone++
        ticker.count?.(gone)
        return r
      }
    }
  })
}
