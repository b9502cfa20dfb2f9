/**
 * A unit's status as a person reads it, for the messages of `Systemd`'s
 * errors and `RestartChanged`'s settle check, and how it is read from `show`.
 *
 * @since 0.4.0
 */
import type { UnitStatus } from "../../Systemd.ts"

/** A {@link UnitStatus} as a person reads it: `failed (failed), result exit-code, main process exited with status 1`. */
export const describeStatus = (s: UnitStatus): string => {
  const main =
    s.execMainCode === 1
      ? `main process exited with status ${s.execMainStatus}`
      : s.execMainCode === 2
        ? `main process killed by signal ${s.execMainStatus}`
        : s.execMainCode === 3
          ? `main process dumped core on signal ${s.execMainStatus}`
          : "main process has not exited"
  return `${s.activeState} (${s.subState})${s.result === "" ? "" : `, result ${s.result}`}, ${main}`
}

/** The properties a {@link UnitStatus} is read from, in `show`'s names. */
export const UnitStatusProperties = ["ActiveState", "SubState", "Result", "ExecMainCode", "ExecMainStatus"] as const

/** A {@link UnitStatus} from `show`'s answer for {@link UnitStatusProperties}. */
export const unitStatusOf = (props: Readonly<Record<string, string>>): UnitStatus => ({
  activeState: props.ActiveState ?? "",
  subState: props.SubState ?? "",
  result: props.Result ?? "",
  execMainCode: Number(props.ExecMainCode ?? "0") || 0,
  execMainStatus: Number(props.ExecMainStatus ?? "0") || 0
})
