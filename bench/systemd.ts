/**
 * Systemd benchmark (issue: systemd). Boots the real test machine (see
 * SystemdMachine in @hostnode/test), installs 20 trivial units and compares
 * `restartChanged` on all of them with a shell loop running
 * `systemctl restart` for each inside the same machine, in the same run.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostCommand, RestartChanged, Systemd } from "@hostnode/core"
import { NodeSystemd } from "@hostnode/node"
import { SystemdMachine } from "@hostnode/test"
import { Console, Effect, FileSystem, Layer } from "effect"
import { median, table } from "./Bench.ts"

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const machine = yield* SystemdMachine.boot
  yield* Console.log(`test systemd booted in ${machine.bootMillis} ms`)
  const units = Array.from({ length: 20 }, (_, i) => `hn-bench-${i}.service`)
  for (const u of units) {
    yield* fs.writeFileString(
      `${machine.hostRoot}/etc/systemd/system/${u}`,
      "[Unit]\n# many restarts in a few seconds: no start rate limit\nStartLimitIntervalSec=0\n\n[Service]\nExecStart=/bin/sleep infinity\n"
    )
  }
  const systemdLayer = NodeSystemd.layerIn(machine.pid)
  yield* Effect.gen(function* () {
    const systemd = yield* Systemd.Systemd
    yield* systemd.daemonReload
    for (const u of units) yield* systemd.start(u)
  }).pipe(Effect.provide(systemdLayer))
  const runs = 5
  const restartAll = RestartChanged.restartChanged({
    wasRunning: true,
    units: units.map((unit) => ({ unit, changed: true }))
  })
  // A shell loop that failed is an error, not a time.
  const succeeded = <E, R>(run: Effect.Effect<HostCommand.Output, E, R>) =>
    Effect.flatMap(run, (o) => (o.exitCode === 0 ? Effect.succeed(o) : Effect.fail(new Error(o.stderr))))
  const ours = yield* median(runs, Effect.void, () => restartAll.pipe(Effect.provide(systemdLayer)))
  // The session layer as an agent holds it: built once, one shell for every run.
  const session = yield* Layer.build(NodeSystemd.layerSessionIn(machine.pid))
  const viaSession = yield* median(runs, Effect.void, () => restartAll.pipe(Effect.provide(session)))
  const [head, ...rest] = machine.nsenter
  const loop = yield* median(runs, Effect.void, () =>
    HostCommand.run(head ?? "nsenter", [
      ...rest,
      "sh",
      "-c",
      'for u in "$@"; do systemctl restart -- "$u" || exit 1; done',
      "sh",
      ...units
    ]).pipe(succeeded)
  )
  // The same loop run from the host, entering the machine for each restart as
  // our layer does: the like-for-like comparison for a wrapped spawner.
  const hostLoop = yield* median(runs, Effect.void, () =>
    HostCommand.run("sh", [
      "-c",
      'pid="$1"; shift; for u in "$@"; do nsenter -t "$pid" -m -p -- systemctl restart -- "$u" || exit 1; done',
      "sh",
      String(machine.pid),
      ...units
    ]).pipe(succeeded)
  )
  yield* table(
    `restart 20 trivial units in a real systemd (median of ${runs})`,
    [
      { name: "shell loop of systemctl restart (in the machine)", ms: loop },
      { name: "shell loop of nsenter + systemctl restart (from the host)", ms: hostLoop },
      { name: "restartChanged, NodeSystemd.layerIn (nsenter + systemctl per unit)", ms: ours },
      { name: "restartChanged, NodeSystemd.layerSessionIn (one shell, systemctl per unit)", ms: viaSession }
    ],
    "shell loop of systemctl restart (in the machine)"
  )
  yield* Console.log(
    `\nrestartChanged: ${(ours / loop).toFixed(2)}x the in-machine shell loop with a process per call (layerIn), ${(viaSession / loop).toFixed(2)}x with a shell session (layerSessionIn) (target <= 1.2x)`
  )
}).pipe(Effect.scoped)

Main.pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
