/**
 * The conformance suite for `Systemd` implementations and the operations on
 * top of it (`restartChanged`, the host backend's `running`): what a real
 * systemd 252 does, which the simulated systemd must do the same way. Unit
 * files are written through the FileSystem below a host root and loaded with
 * `daemonReload`, as an agent does after an upgrade. The process environment a
 * restart gives is the evidence (`Observers.environmentOf`), and the reloads
 * are counted on systemd's side (`Observers.daemonReloads`). What it pins down
 * about real systemd: docs/design/systemd.md and docs/design/simulated-host.md.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { IsolationBackend, RestartChanged, Systemd } from "@hostnode/core"
import { MemorySystemd } from "@hostnode/sim"
import { Duration, Effect, FileSystem, type Layer, Option } from "effect"
import { machineObservers, memoryObservers, Units } from "./internal/systemdObservers.ts"
import { SystemdMachine } from "./SystemdMachine.ts"

/**
 * What the suite reads from the machine besides the `Systemd` under test: the
 * evidence of what a restart really ran and how many reloads systemd made.
 *
 * @category conformance
 * @since 0.4.0
 */
export interface Observers<R> {
  /** The environment process `pid` of the machine runs with, as `NAME=value` entries (its `/proc/<pid>/environ`). */
  readonly environmentOf: (pid: number) => Effect.Effect<ReadonlyArray<string>, never, R>
  /** How many daemon-reloads systemd has made so far, counted on systemd's side (the suite compares two readings). */
  readonly daemonReloads: Effect.Effect<number, never, R>
}

let counter = 0
// Each test gets its own unit names, so tests sharing one machine never meet.
const fresh = (stem: string) => `hn-${stem}-${process.pid}-${++counter}.service`

/**
 * Registers the suite under `name`. `hostLayer` provides the `Systemd` under
 * test and the `FileSystem` through which its unit files are written;
 * `hostRoot` is where that systemd's root file system is (for the real test
 * machine `/proc/<pid>/root`, for the simulated host `/`); `observers` read
 * what the restarts really ran ({@link Observers}; without them, those of a `SystemdMachine`
 * or a `MemorySystemd` in `hostLayer` are used, and with neither, a restart's
 * environment is read from `Environment=` as systemd shows it and the
 * reloads are not counted).
 *
 * @category conformance
 * @since 0.1.0
 */
export const suite = <R>(
  name: string,
  hostLayer: Layer.Layer<Systemd.Systemd | FileSystem.FileSystem | R>,
  hostRoot: Effect.Effect<string, never, R>,
  observers?: Observers<R | FileSystem.FileSystem>
): void =>
  layer(hostLayer, { timeout: "60 seconds", excludeTestServices: true })(`Systemd conformance: ${name}`, (it) => {
    const install = (unit: string, text: string, under = "/etc/systemd/system") =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const root = yield* hostRoot
        const dir = `${root === "/" ? "" : root}${under}`
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
        assert.strictEqual(e.reason.stderr?.trim(), `Failed to restart ${u}: Unit ${u} not found.`)
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

    // The observers given, else those of the machine or simulated systemd in the layer, else none.
    const detected = <A>(
      given: Effect.Effect<A, never, R | FileSystem.FileSystem> | undefined,
      machine: Effect.Effect<A, never, SystemdMachine | FileSystem.FileSystem>,
      memory: Effect.Effect<A, never, MemorySystemd.MemorySystemd>
    ): Effect.Effect<Option.Option<A>, never, R | FileSystem.FileSystem> =>
      given !== undefined
        ? Effect.map(given, Option.some)
        : Effect.gen(function* () {
            const m = yield* Effect.serviceOption(SystemdMachine)
            if (Option.isSome(m)) return Option.some(yield* Effect.provideService(machine, SystemdMachine, m.value))
            const s = yield* Effect.serviceOption(MemorySystemd.MemorySystemd)
            if (Option.isSome(s))
              return Option.some(yield* Effect.provideService(memory, MemorySystemd.MemorySystemd, s.value))
            return Option.none()
          })
    const daemonReloads = detected(
      observers?.daemonReloads,
      machineObservers.daemonReloads,
      memoryObservers.daemonReloads
    )
    // Reloads since `before` (a reading of daemonReloads), where they can be counted.
    const assertReloads = (before: Option.Option<number>, made: number, message?: string) =>
      Effect.gen(function* () {
        const after = yield* daemonReloads
        if (Option.isSome(before) && Option.isSome(after)) assert.strictEqual(after.value, before.value + made, message)
      })

    // The HN_ variables of the unit's main process now, and what systemd shows as its Environment=.
    const ranWith = (unit: string) =>
      Effect.gen(function* () {
        const props = yield* (yield* Systemd.Systemd).show(unit, ["MainPID", "Environment"])
        const pid = Number(props.MainPID)
        const env = yield* detected(
          observers?.environmentOf(pid),
          machineObservers.environmentOf(pid),
          memoryObservers.environmentOf(pid)
        )
        const shown = (props.Environment ?? "")
          .split(" ")
          .filter((e) => e.startsWith("HN_"))
          .sort()
        return { process: Option.isSome(env) ? env.value.filter((e) => e.startsWith("HN_")).sort() : shown, shown }
      })
    const needsReload = (unit: string) =>
      Effect.map(
        Effect.flatMap(Effect.service(Systemd.Systemd), (s) => s.show(unit, ["NeedDaemonReload"])),
        (p) => p.NeedDaemonReload
      )
    const dropIn = (unit: string, name: string, text: string) => install(name, text, `/etc/systemd/system/${unit}.d`)

    it.effect(
      "a restart runs the loaded definition: reload never keeps the old Environment=, the default reloads once and the new one runs",
      () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          // A drop-in into a .d directory systemd knows, one into a .d directory made now, a changed unit file.
          const [known, made, file] = [fresh("rl-known"), fresh("rl-made"), fresh("rl-file")]
          yield* dropIn(known, "10-base.conf", "[Service]\nEnvironment=HN_BASE=1\n")
          yield* installAndLoad({
            [known]: Units.withFlag("old"),
            [made]: Units.withFlag("old"),
            [file]: Units.withFlag("old")
          })
          for (const u of [known, made, file]) yield* systemd.start(u)
          assert.deepStrictEqual((yield* ranWith(known)).process, ["HN_BASE=1", "HN_FLAG=old"])
          const units = [known, made, file].map((unit) => ({ unit, changed: true }))

          yield* dropIn(known, "20-upgrade.conf", "[Service]\nEnvironment=HN_FLAG=new\n")
          yield* dropIn(made, "20-upgrade.conf", "[Service]\nEnvironment=HN_FLAG=new\n")
          yield* install(file, Units.withFlag("new"))
          // What reload "auto" would go by: the new directory's drop-in is not reported.
          assert.deepStrictEqual(
            [yield* needsReload(known), yield* needsReload(made), yield* needsReload(file)],
            ["yes", "no", "yes"]
          )

          const pids = () => Effect.forEach([known, made, file], mainPid)
          const first = yield* pids()
          const reloads = yield* daemonReloads
          yield* RestartChanged.restartChanged({ wasRunning: true, units, reload: "never" })
          const second = yield* pids()
          for (const [i, u] of [known, made, file].entries()) {
            assert.notStrictEqual(second[i], first[i], `${u} was restarted`)
            const ran = yield* ranWith(u)
            assert.include(ran.process, "HN_FLAG=old", `${u} restarted without a reload runs the old environment`)
            assert.include(ran.shown, "HN_FLAG=old", u)
          }
          yield* assertReloads(reloads, 0)

          // The default: one daemon-reload for the three units, before the first restart.
          yield* RestartChanged.restartChanged({ wasRunning: true, units })
          yield* assertReloads(reloads, 1)
          const third = yield* pids()
          for (const [i, u] of [known, made, file].entries()) {
            assert.notStrictEqual(third[i], second[i], `${u} was restarted`)
            const ran = yield* ranWith(u)
            assert.include(ran.process, "HN_FLAG=new", `${u} runs the new environment`)
            assert.notInclude(ran.process, "HN_FLAG=old", u)
            assert.include(ran.shown, "HN_FLAG=new", u)
            assert.strictEqual(yield* needsReload(u), "no", `${u} needs no reload after it`)
          }
          assert.include((yield* ranWith(known)).process, "HN_BASE=1")
          for (const u of [known, made, file]) yield* systemd.stop(u)
        })
    )

    it.effect(
      "reload auto misses a drop-in in a .d directory made after systemd last read its unit directories, until a unit is loaded afresh",
      () =>
        Effect.gen(function* () {
          const systemd = yield* Systemd.Systemd
          const u = fresh("auto")
          yield* installAndLoad({ [u]: Units.withFlag("old") })
          yield* systemd.start(u)
          yield* dropIn(u, "20-upgrade.conf", "[Service]\nEnvironment=HN_FLAG=new\n")
          assert.strictEqual(yield* needsReload(u), "no")
          const reloads = yield* daemonReloads
          yield* RestartChanged.restartChanged({
            wasRunning: true,
            units: [{ unit: u, changed: true }],
            reload: "auto"
          })
          yield* assertReloads(reloads, 0, "auto saw no reason to reload")
          assert.include((yield* ranWith(u)).process, "HN_FLAG=old", "so the restart ran the old definition")

          // Loading a unit systemd does not hold has it read its unit directories again: now it reports the change.
          assert.strictEqual(yield* systemd.isActive(fresh("never-loaded")), "inactive")
          assert.strictEqual(yield* needsReload(u), "yes")
          yield* RestartChanged.restartChanged({
            wasRunning: true,
            units: [{ unit: u, changed: true }],
            reload: "auto"
          })
          yield* assertReloads(reloads, 1)
          assert.include((yield* ranWith(u)).process, "HN_FLAG=new")
          assert.strictEqual(yield* needsReload(u), "no")
          yield* systemd.stop(u)
        })
    )

    it.effect(
      "NeedDaemonReload is no for a file whose time was set back and for a unit file of higher precedence; a reload reads both",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const root = yield* hostRoot
          const systemd = yield* Systemd.Systemd
          const [restored, shadowed] = [fresh("restored"), fresh("shadowed")]
          yield* dropIn(restored, "20-flag.conf", "[Service]\nEnvironment=HN_FLAG=old\n")
          yield* install(restored, Units.withFlag("unit"))
          // The vendor's unit in a directory below /etc/systemd/system in precedence.
          yield* install(shadowed, Units.withFlag("old"), "/run/systemd/system")
          yield* systemd.daemonReload
          for (const u of [restored, shadowed]) yield* systemd.start(u)

          // A rollback writes the recorded content back with the recorded (older) time.
          const path = `${root === "/" ? "" : root}/etc/systemd/system/${restored}.d/20-flag.conf`
          yield* fs.writeFileString(path, "[Service]\nEnvironment=HN_FLAG=new\n")
          yield* fs.utimes(path, new Date("2020-01-01T00:00:00Z"), new Date("2020-01-01T00:00:00Z"))
          // The administrator's copy in /etc/systemd/system takes precedence at the next reload.
          yield* install(shadowed, Units.withFlag("new"))
          assert.deepStrictEqual([yield* needsReload(restored), yield* needsReload(shadowed)], ["no", "no"])

          yield* RestartChanged.restartChanged({
            wasRunning: true,
            units: [restored, shadowed].map((unit) => ({ unit, changed: true }))
          })
          for (const u of [restored, shadowed]) {
            assert.include((yield* ranWith(u)).process, "HN_FLAG=new", u)
            assert.strictEqual(yield* needsReload(u), "no", u)
          }
          assert.strictEqual(
            (yield* systemd.show(shadowed, ["FragmentPath"])).FragmentPath,
            `/etc/systemd/system/${shadowed}`
          )
          for (const u of [restored, shadowed]) yield* systemd.stop(u)
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
