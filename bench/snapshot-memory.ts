/**
 * The peak-memory half of the snapshot benchmark, in processes of their own
 * so that a peak resident set is one operation's alone: `take BOX` takes a
 * snapshot of the 5,000-file / 200 MB tree the benchmark wrote below BOX
 * (`root/etc/tree`) into `BOX/snap`; `restore BOX` restores it (the
 * benchmark changes every file in between). Each prints one JSON line: its
 * resident set before the operation and its peak resident set (`maxRSS`)
 * after it, in KiB.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostPath, Snapshot, Systemd } from "@hostnode/core"
import { NodeDirectory, NodeHashing } from "@hostnode/node"
import { RefusingSystemd } from "@hostnode/test"
import { Console, Effect, Layer } from "effect"

const [mode, box = ""] = process.argv.slice(2)
const root = `${box}/root`
const dir = `${box}/snap`

const Main = Effect.gen(function* () {
  // Settle what loading the modules left, so the baseline is the process at rest.
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().rss / 1024
  if (mode === "take")
    yield* Snapshot.takeOf({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie), paths: ["/etc/tree"] })
  else
    yield* Effect.flatMap(
      Snapshot.open({ dir, hostRoot: yield* HostPath.decodeRoot(root).pipe(Effect.orDie) }),
      (s) => s.restore
    )
  yield* Console.log(JSON.stringify({ mode, before, peak: process.resourceUsage().maxRSS }))
})

Main.pipe(
  Effect.provideService(Systemd.Systemd, RefusingSystemd.make("below a temporary host root")),
  Effect.provide(Layer.mergeAll(NodeServices.layer, NodeDirectory.layer.pipe(Layer.orDie), NodeHashing.layer)),
  NodeRuntime.runMain
)
