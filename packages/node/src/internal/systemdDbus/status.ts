/**
 * A failed job's unit status, read from the unit's properties over D-Bus (the
 * same properties and reading as core's `RestartChanged` uses with `show`).
 */
import type { Systemd } from "@hostnode/core"

/** The properties a `Systemd.UnitStatus` is read from, in systemd's names. */
export const UnitStatusProperties = ["ActiveState", "SubState", "Result", "ExecMainCode", "ExecMainStatus"] as const

/** A `Systemd.UnitStatus` from the values of {@link UnitStatusProperties}. */
export const unitStatusOf = (props: Readonly<Record<string, string>>): Systemd.UnitStatus => ({
  activeState: props.ActiveState ?? "",
  subState: props.SubState ?? "",
  result: props.Result ?? "",
  execMainCode: Number(props.ExecMainCode ?? "0") || 0,
  execMainStatus: Number(props.ExecMainStatus ?? "0") || 0
})
