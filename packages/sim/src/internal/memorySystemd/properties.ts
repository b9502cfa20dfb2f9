/**
 * The properties `systemctl show` prints for a unit of the simulated systemd,
 * in its order and formats.
 */
import { DefaultTimeoutStartUsec } from "./lifecycle.ts"
import { isService, type Stamp, type UnitState } from "./state.ts"
import { formatTimespan, formatTimestamp } from "./time.ts"

const yesNo = (b: boolean) => (b ? "yes" : "no")

export const props = (u: UnitState, needReload: boolean): ReadonlyArray<readonly [string, string]> => {
  const def = u.loaded.def
  const ts = (name: string, t: Stamp | undefined): ReadonlyArray<readonly [string, string]> => [
    [name, t === undefined ? "" : formatTimestamp(t.realtime)],
    [`${name}Monotonic`, String(t?.monotonic ?? 0)]
  ]
  const loaded = u.loaded.loadState === "loaded"
  // The Service interface's properties come first in `systemctl show`, then the Unit interface's.
  const service: ReadonlyArray<readonly [string, string]> = isService(u.id)
    ? [
        ["Type", def.type],
        ["ExitType", "main"],
        ["Restart", def.restart],
        ["NotifyAccess", def.type === "notify" ? "main" : "none"],
        ["RestartUSec", formatTimespan(def.restartUsec)],
        [
          "TimeoutStartUSec",
          formatTimespan(
            def.timeoutStartUsec ?? (def.type === "oneshot" ? Number.POSITIVE_INFINITY : DefaultTimeoutStartUsec)
          )
        ],
        ["RemainAfterExit", yesNo(def.remainAfterExit)],
        ["MainPID", String(u.mainPid)],
        ["ControlPID", "0"],
        ["Result", u.result],
        ["ReloadResult", u.reloadResult],
        ["NRestarts", String(u.nRestarts)],
        ...ts("ExecMainStartTimestamp", u.execMain.start),
        ...ts("ExecMainExitTimestamp", u.execMain.exit),
        ["ExecMainPID", String(u.execMain.pid)],
        ["ExecMainCode", String(u.execMain.code)],
        ["ExecMainStatus", String(u.execMain.status)],
        // systemctl quotes an assignment that holds a space or a quote.
        ["Environment", def.environment.map((e) => (/[\s"'\\]/.test(e) ? JSON.stringify(e) : e)).join(" ")]
      ]
    : []
  const unit: ReadonlyArray<readonly [string, string]> = [
    ["Id", u.id],
    ["Names", u.id],
    ["Description", def.description ?? u.id],
    ["LoadState", u.loaded.loadState],
    ["ActiveState", u.active],
    ["FreezerState", "running"],
    ["SubState", u.sub],
    ["FragmentPath", u.loaded.loadState === "masked" ? "" : u.loaded.fragmentPath],
    ["DropInPaths", u.loaded.dropIns.map((d) => d.path).join(" ")],
    ...ts("StateChangeTimestamp", u.ts.stateChange),
    ...ts("InactiveExitTimestamp", u.ts.inactiveExit),
    ...ts("ActiveEnterTimestamp", u.ts.activeEnter),
    ...ts("ActiveExitTimestamp", u.ts.activeExit),
    ...ts("InactiveEnterTimestamp", u.ts.inactiveEnter),
    ["CanStart", yesNo(loaded)],
    ["CanStop", yesNo(loaded)],
    ["CanReload", yesNo(loaded && def.execReload.length > 0)],
    ["NeedDaemonReload", yesNo(needReload)],
    ["StartLimitIntervalUSec", formatTimespan(def.startLimitIntervalUsec)],
    ["StartLimitBurst", String(def.startLimitBurst)]
  ]
  return [...service, ...unit]
}
