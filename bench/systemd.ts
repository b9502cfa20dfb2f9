/**
 * Systemd benchmark (issues: systemd, D-Bus). Boots the real test machine
 * (see SystemdMachine in @hostnode/test), installs 100 trivial units and
 * compares `restartChanged` on 20 and on all 100 of them with a shell loop
 * running `systemctl restart` for each inside the same machine, in the same
 * run: through `systemctl` spawned per unit, through one shell session, and
 * over D-Bus (`NodeSystemd.layerDbusIn`, one connection, each restart a
 * `RestartUnit` and its `JobRemoved`).
 *
 * `restartChanged` logs a line per restarted unit at Info; here the minimum
 * log level is Warn, so the rows time systemd and the layers rather than this
 * process's console (2,000 lines for the 100-unit runs). One row of the
 * 100-unit table keeps the lines on, for what an agent that prints them pays.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { HostCommand, RestartChanged, Systemd } from "@hostnode/core"
import { NodeSystemd } from "@hostnode/node"
import { SystemdMachine } from "@hostnode/test"
import { Console, Effect, FileSystem, Layer, References } from "effect"
import { median, table } from "./Bench.ts"

const Main = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const machine = yield* SystemdMachine.bootWith()
  yield* Console.log(`test systemd booted in ${machine.bootMillis} ms`)
  const all = Array.from({ length: 100 }, (_, i) => `hn-bench-${i}.service`)
  for (const u of all) {
    yield* fs.writeFileString(
      `${machine.hostRoot}/etc/systemd/system/${u}`,
      "[Unit]\n# many restarts in a few seconds: no start rate limit\nStartLimitIntervalSec=0\n\n[Service]\nExecStart=/bin/sleep infinity\n"
    )
  }
  const systemdLayer = NodeSystemd.layer({ pid: machine.pid })
  yield* Effect.gen(function* () {
    const systemd = yield* Systemd.Systemd
    yield* systemd.daemonReload
    for (const u of all) yield* systemd.start(u)
  }).pipe(Effect.provide(systemdLayer))
  const runs = 5
  const restartAll = (units: ReadonlyArray<string>) =>
    RestartChanged.restartChanged({ wasRunning: true, units: units.map((unit) => ({ unit, changed: true })) })
  // A shell loop that failed is an error, not a time.
  const succeeded = <E, R>(run: Effect.Effect<HostCommand.Output, E, R>) =>
    Effect.flatMap(run, (o) => (o.exitCode === 0 ? Effect.succeed(o) : Effect.fail(new Error(o.stderr))))
  const [head, ...rest] = machine.nsenter
  const loopIn = (units: ReadonlyArray<string>) =>
    HostCommand.run(head ?? "nsenter", [
      ...rest,
      "sh",
      "-c",
      'for u in "$@"; do systemctl restart -- "$u" || exit 1; done',
      "sh",
      ...units
    ]).pipe(succeeded)
  // The session and D-Bus layers as an agent holds them: built once, one
  // shell or one connection for every run.
  const session = yield* Layer.build(NodeSystemd.layer({ pid: machine.pid, session: true }))
  const dbus = yield* Layer.build(NodeSystemd.layerDbusIn(machine.pid))

  const twenty = all.slice(0, 20)
  const loop = yield* median(runs, Effect.void, () => loopIn(twenty))
  // The same loop run from the host, entering the machine for each restart as
  // the command layers do: the like-for-like comparison for a wrapped spawner.
  const hostLoop = yield* median(runs, Effect.void, () =>
    HostCommand.run("sh", [
      "-c",
      'pid="$1"; shift; for u in "$@"; do nsenter -t "$pid" -m -p -- systemctl restart -- "$u" || exit 1; done',
      "sh",
      String(machine.pid),
      ...twenty
    ]).pipe(succeeded)
  )
  const perProcess = yield* median(runs, Effect.void, () => restartAll(twenty).pipe(Effect.provide(systemdLayer)))
  const viaSession = yield* median(runs, Effect.void, () => restartAll(twenty).pipe(Effect.provide(session)))
  const viaDbus = yield* median(runs, Effect.void, () => restartAll(twenty).pipe(Effect.provide(dbus)))
  yield* table(
    `restart 20 trivial units in a real systemd (median of ${runs})`,
    [
      { name: "shell loop of systemctl restart (in the machine)", ms: loop },
      { name: "shell loop of nsenter + systemctl restart (from the host)", ms: hostLoop },
      { name: "restartChanged, NodeSystemd.layer({ pid }) (nsenter + systemctl per unit)", ms: perProcess },
      { name: "restartChanged, NodeSystemd.layer({ pid, session }) (one shell, systemctl per unit)", ms: viaSession },
      { name: "restartChanged, NodeSystemd.layerDbusIn (one D-Bus connection)", ms: viaDbus }
    ],
    "shell loop of systemctl restart (in the machine)"
  )

  const loop100 = yield* median(runs, Effect.void, () => loopIn(all))
  const viaSession100 = yield* median(runs, Effect.void, () => restartAll(all).pipe(Effect.provide(session)))
  const viaDbus100 = yield* median(runs, Effect.void, () => restartAll(all).pipe(Effect.provide(dbus)))
  const viaDbus100Logged = yield* median(runs, Effect.void, () =>
    restartAll(all).pipe(Effect.provide(dbus), Effect.provideService(References.MinimumLogLevel, "Info"))
  )
  yield* table(
    `restart 100 trivial units in a real systemd (median of ${runs})`,
    [
      { name: "shell loop of systemctl restart (in the machine)", ms: loop100 },
      {
        name: "restartChanged, NodeSystemd.layer({ pid, session }) (one shell, systemctl per unit)",
        ms: viaSession100
      },
      { name: "restartChanged, NodeSystemd.layerDbusIn (one D-Bus connection)", ms: viaDbus100 },
      {
        name: "restartChanged, NodeSystemd.layerDbusIn, its Info line per unit printed",
        ms: viaDbus100Logged
      }
    ],
    "shell loop of systemctl restart (in the machine)"
  )
  yield* Console.log(
    `\nrestartChanged against the in-machine shell loop: 20 units ${(perProcess / loop).toFixed(2)}x with a process per call (layer({ pid })), ${(viaSession / loop).toFixed(2)}x with a shell session (layer({ pid, session }); target <= 1.2x), ${(viaDbus / loop).toFixed(2)}x over D-Bus (layerDbusIn; target <= 0.8x); 100 units ${(viaSession100 / loop100).toFixed(2)}x with the shell session, ${(viaDbus100 / loop100).toFixed(2)}x over D-Bus (target <= 0.5x)`
  )
}).pipe(Effect.scoped)

Main.pipe(
  Effect.provide(NodeServices.layer),
  Effect.provideService(References.MinimumLogLevel, "Warn"),
  NodeRuntime.runMain
)
