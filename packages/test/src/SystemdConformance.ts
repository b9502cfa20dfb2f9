/**
 * The conformance suite for `Systemd` implementations and the operations on
 * top of it (`restartChanged`, the host backend's `running`): what a real
 * systemd does, which the simulated host's systemd must do the same way. Unit
 * files are written through the FileSystem below a host root and loaded with
 * `daemonReload`, as an agent does after an upgrade.
 *
 * Notes on real systemd that the suite pins down: a manual restart changes the
 * MainPID but not `NRestarts` (which counts only automatic `Restart=` restarts);
 * a `Type=oneshot` unit whose ExecStart fails makes its job fail and leaves the
 * unit `failed`; asking about a unit systemd does not know gives `inactive`;
 * a `Type=simple` unit's start job is done once its program was forked, so a
 * program that exits at once is restarted as far as the job goes and only the
 * settle check (`RestartChanged.awaitSettled`) sees it fail.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { IsolationBackend, RestartChanged, Systemd } from "@hostnode/core"
import { Duration, Effect, FileSystem, type Layer } from "effect"

/**
 * Unit file texts the suite uses. The simulated host understands these ExecStart lines.
 *
 * @since 0.1.0
 */
export const Units = {
  sleeper: (description = "sleeper") =>
    `[Unit]\nDescription=${description}\n\n[Service]\nExecStart=/bin/sleep infinity\n`,
  failingOneshot: "[Unit]\nDescription=fails\n\n[Service]\nType=oneshot\nExecStart=/bin/false\n",
  /** A `Type=simple` unit whose program exits 3 right after it was started. */
  diesAtOnce: '[Unit]\nDescription=dies at once\n\n[Service]\nType=simple\nExecStart=/bin/sh -c "exit 3"\n'
} as const

let counter = 0
// Each test gets its own unit names, so tests sharing one machine never meet.
const fresh = (stem: string) => `hn-${stem}-${process.pid}-${++counter}.service`

/**
 * Registers the suite under `name`. `hostLayer` provides the `Systemd` under
 * test and the `FileSystem` through which its unit files are written;
 * `hostRoot` is where that systemd's root file system is (for the real test
 * machine `/proc/<pid>/root`, for the simulated host `/`).
 *
 * @since 0.1.0
 */
export const suite = <R>(
  name: string,
  hostLayer: Layer.Layer<Systemd.Systemd | FileSystem.FileSystem | R>,
  hostRoot: Effect.Effect<string, never, R>
): void =>
  layer(hostLayer, { timeout: "60 seconds", excludeTestServices: true })(`Systemd conformance: ${name}`, (it) => {
    const install = (unit: string, text: string) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const root = yield* hostRoot
        const dir = `${root === "/" ? "" : root}/etc/systemd/system`
        yield* fs.makeDirectory(dir, { recursive: true })
        yield* fs.writeFileString(`${dir}/${unit}`, text)
      })
    const installAndLoad = (units: Readonly<Record<string, string>>) =>
      Effect.gen(function* () {
        for (const [unit, text] of Object.entries(units)) yield* install(unit, text)
        yield* (yield* Systemd.Systemd).daemonReload
      })
    const mainPid = (unit: string) =>
      Effect.flatMap(Effect.service(Systemd.Systemd), (s) => s.show(unit, ["MainPID"])).pipe(
        Effect.map((p) => Number(p.MainPID))
      )

    it.effect("start, stop and isActive", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const u = fresh("sleeper")
        yield* installAndLoad({ [u]: Units.sleeper() })
        assert.strictEqual(yield* systemd.isActive(u), "inactive")
        yield* systemd.start(u)
        assert.strictEqual(yield* systemd.isActive(u), "active")
        assert.isAbove(yield* mainPid(u), 0)
        yield* systemd.stop(u)
        assert.strictEqual(yield* systemd.isActive(u), "inactive")
        assert.strictEqual(yield* mainPid(u), 0)
      })
    )

    it.effect("restart gives the unit a new main process; NRestarts counts only automatic restarts", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const u = fresh("restart")
        yield* installAndLoad({ [u]: Units.sleeper() })
        yield* systemd.start(u)
        const before = yield* systemd.show(u, ["MainPID", "NRestarts"])
        yield* systemd.restart(u)
        const after = yield* systemd.show(u, ["MainPID", "NRestarts"])
        assert.notStrictEqual(after.MainPID, before.MainPID)
        assert.isAbove(Number(after.MainPID), 0)
        assert.strictEqual(after.NRestarts, before.NRestarts)
        yield* systemd.stop(u)
      })
    )

    it.effect("daemonReload picks up a changed unit file", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const u = fresh("reload")
        yield* installAndLoad({ [u]: Units.sleeper("first") })
        // A unit that is not running is unloaded when unused and read afresh on
        // the next query; a running one keeps the definition it was loaded with.
        yield* systemd.start(u)
        assert.strictEqual((yield* systemd.show(u, ["Description"])).Description, "first")
        yield* install(u, Units.sleeper("second"))
        assert.deepStrictEqual(yield* systemd.show(u, ["Description", "NeedDaemonReload"]), {
          Description: "first",
          NeedDaemonReload: "yes"
        })
        yield* systemd.daemonReload
        assert.deepStrictEqual(yield* systemd.show(u, ["Description", "NeedDaemonReload"]), {
          Description: "second",
          NeedDaemonReload: "no"
        })
        yield* systemd.stop(u)
      })
    )

    it.effect("a unit whose ExecStart fails gives JobFailed and is then failed", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const u = fresh("failing")
        yield* installAndLoad({ [u]: Units.failingOneshot })
        const e = yield* Effect.flip(systemd.start(u))
        assert.strictEqual(e._tag, "SystemdError")
        if (e._tag !== "SystemdError") return
        assert.strictEqual(e.reason._tag, "JobFailed")
        if (e.reason._tag !== "JobFailed") return
        assert.strictEqual(e.verb, "start")
        assert.strictEqual(e.unit, u)
        assert.strictEqual(e.reason.exitCode, 1)
        assert.include(e.reason.stderr, `Job for ${u} failed`)
        assert.strictEqual(yield* systemd.isActive(u), "failed")
      })
    )

    it.effect("a missing unit gives UnitNotFound with systemctl's own stderr; isActive says inactive", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const u = fresh("missing")
        const e = yield* Effect.flip(systemd.restart(u))
        assert.strictEqual(e._tag, "SystemdError")
        if (e._tag !== "SystemdError") return
        assert.strictEqual(e.reason._tag, "UnitNotFound")
        if (e.reason._tag !== "UnitNotFound") return
        assert.strictEqual(e.reason.exitCode, 5)
        assert.strictEqual(e.reason.stderr.trim(), `Failed to restart ${u}: Unit ${u} not found.`)
        assert.strictEqual(yield* systemd.isActive(u), "inactive")
      })
    )

    it.effect("an invalid unit name fails before anything runs", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const e = yield* Effect.flip(systemd.restart("kubelet; reboot"))
        assert.strictEqual(e._tag, "UnitNameError")
      })
    )

    it.effect("restartChanged restarts exactly the changed units, in order, and nothing when the node was down", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const [a, b, c] = [fresh("rc-a"), fresh("rc-b"), fresh("rc-c")]
        yield* installAndLoad({ [a]: Units.sleeper(), [b]: Units.sleeper(), [c]: Units.sleeper() })
        for (const u of [a, b, c]) yield* systemd.start(u)
        const pids = () => Effect.forEach([a, b, c], mainPid)
        const before = yield* pids()
        const units = [
          { unit: c, changed: true },
          { unit: b, changed: false },
          { unit: a, changed: true }
        ]
        yield* RestartChanged.restartChanged({ wasRunning: false, units })
        assert.deepStrictEqual(yield* pids(), before)
        yield* RestartChanged.restartChanged({ wasRunning: true, units, annotations: { phase: "test" } })
        const after = yield* pids()
        assert.notStrictEqual(after[0], before[0])
        assert.strictEqual(after[1], before[1])
        assert.notStrictEqual(after[2], before[2])
        // in order: c was restarted before a
        const since = (u: string) =>
          Effect.map(systemd.show(u, ["ActiveEnterTimestampMonotonic"]), (p) =>
            BigInt(p.ActiveEnterTimestampMonotonic ?? "0")
          )
        assert.isTrue((yield* since(c)) < (yield* since(a)))
        for (const u of [a, b, c]) yield* systemd.stop(u)
      })
    )

    it.effect("restartChanged stops at the first failure, naming it and what was already restarted", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const [a, bad, c] = [fresh("rf-a"), fresh("rf-bad"), fresh("rf-c")]
        yield* installAndLoad({ [a]: Units.sleeper(), [bad]: Units.failingOneshot, [c]: Units.sleeper() })
        yield* systemd.start(a)
        yield* systemd.start(c)
        const cBefore = yield* mainPid(c)
        const e = yield* Effect.flip(
          RestartChanged.restartChanged({
            wasRunning: true,
            units: [
              { unit: a, changed: true },
              { unit: bad, changed: true },
              { unit: c, changed: true }
            ]
          })
        )
        assert.strictEqual(e._tag, "RestartError")
        if (e._tag !== "RestartError") return
        assert.strictEqual(e.unit, bad)
        assert.deepStrictEqual(e.restarted, [a])
        assert.deepStrictEqual(e.notAttempted, [c])
        assert.include(e.message, bad)
        assert.strictEqual(yield* mainPid(c), cBefore)
        yield* systemd.stop(a)
        yield* systemd.stop(c)
      })
    )

    it.effect("restartChanged decodes every unit name first: one bad name restarts nothing, running or not", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const a = fresh("dn-a")
        yield* installAndLoad({ [a]: Units.sleeper() })
        yield* systemd.start(a)
        const before = yield* mainPid(a)
        for (const [bad, changed] of [
          ["a;rm -rf /.service", true],
          ["no-suffix", false],
          ["@x.service", false]
        ] as const) {
          for (const wasRunning of [true, false]) {
            const e = yield* Effect.flip(
              RestartChanged.restartChanged({
                wasRunning,
                units: [
                  { unit: a, changed: true },
                  { unit: bad, changed }
                ]
              })
            )
            assert.strictEqual(e._tag, "UnitNameError", `${bad} ${wasRunning}`)
            if (e._tag === "UnitNameError") assert.strictEqual(e.unit, bad)
          }
        }
        // The valid unit before the bad one was never restarted.
        assert.strictEqual(yield* mainPid(a), before)
        yield* systemd.stop(a)
      })
    )

    it.effect(
      "a unit that dies right after exec counts as restarted, unless restartChanged waits for it to settle",
      () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const [a, dies, c] = [fresh("st-a"), fresh("st-dies"), fresh("st-c")]
          yield* installAndLoad({ [a]: Units.sleeper(), [dies]: Units.diesAtOnce, [c]: Units.sleeper() })
          const units = [a, dies, c].map((unit) => ({ unit, changed: true }))
          yield* RestartChanged.restartChanged({ wasRunning: true, units: [{ unit: dies, changed: true }] })
          const e = yield* Effect.flip(RestartChanged.restartChanged({ wasRunning: true, units, settle: "1 second" }))
          assert.strictEqual(e._tag, "RestartError")
          if (e._tag !== "RestartError") return
          assert.strictEqual(e.unit, dies)
          assert.deepStrictEqual(e.restarted, [a])
          assert.deepStrictEqual(e.notAttempted, [c])
          assert.strictEqual(e.reason._tag, "NotSettled")
          const cause = e.reason.cause
          assert.strictEqual(cause._tag, "SystemdError")
          if (cause._tag !== "SystemdError") return
          assert.strictEqual(cause.reason._tag, "NotSettled")
          if (cause.reason._tag !== "NotSettled") return
          assert.strictEqual(cause.unit, dies)
          assert.deepStrictEqual(cause.reason.status, {
            activeState: "failed",
            subState: "failed",
            result: "exit-code",
            execMainCode: 1,
            execMainStatus: 3
          })
          assert.include(e.message, "main process exited with status 3")
          // A unit that stays up passes the same check.
          yield* RestartChanged.awaitSettled(a, Duration.millis(300))
          yield* systemd.stop(a)
        })
    )

    it.effect("running(root) is true while the host units are active and false once one stops", () =>
      Effect.gen(function* () {
        const systemd = yield* Systemd.Systemd
        const [k, c] = [fresh("kubelet"), fresh("containerd")]
        yield* installAndLoad({ [k]: Units.sleeper(), [c]: Units.sleeper() })
        yield* systemd.start(c)
        yield* systemd.start(k)
        const running = IsolationBackend.running(IsolationBackend.SlotRef.make("host")).pipe(
          Effect.provide(IsolationBackend.layerHost({ units: [c, k] }))
        )
        assert.isTrue(yield* running)
        yield* systemd.stop(k)
        assert.isFalse(yield* running)
        yield* systemd.stop(c)
      })
    )
  })
