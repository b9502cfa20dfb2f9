/**
 * A unit's status as a person reads it, for the messages of `Systemd`'s
 * errors and `RestartChanged`'s settle check.
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
