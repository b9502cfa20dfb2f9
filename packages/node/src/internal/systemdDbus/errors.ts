/**
 * systemd's D-Bus answers as `SystemdError`s carrying what systemctl says for
 * the same answer: its exit code (`translate_bus_error_to_exit_status`) and
 * its sentence, so a caller and the CLI treat D-Bus and `systemctl` alike.
 * The boundary: building errors; when they happen is `SystemdDbus`'s.
 */
import { Systemd } from "@hostnode/core"
import type * as DbusConnection from "../DbusConnection.ts"

// translate_bus_error_to_exit_status in systemctl.
const exitCodeOf = (errorName: string): number => {
  switch (errorName) {
    case "org.freedesktop.DBus.Error.AccessDenied":
    case "org.freedesktop.systemd1.OnlyByDependency":
    case "org.freedesktop.systemd1.NoIsolation":
    case "org.freedesktop.systemd1.TransactionIsDestructive":
      return 4
    case "org.freedesktop.systemd1.NoSuchUnit":
      return 5
    case "org.freedesktop.systemd1.JobTypeNotApplicable":
    case "org.freedesktop.DBus.Error.NotSupported":
      return 3
    case "org.freedesktop.systemd1.LoadFailed":
      return 6
    default:
      return 1
  }
}

/** The manager's method a verb calls (a query: the properties interface's). */
export const methodOf = (verb: Systemd.SystemdError["verb"]): string => {
  switch (verb) {
    case "start":
      return "StartUnit"
    case "stop":
      return "StopUnit"
    case "restart":
      return "RestartUnit"
    case "reload":
      return "ReloadUnit"
    case "daemon-reload":
      return "Reload"
    default:
      return "Get"
  }
}

/**
 * The error of a call on `unit` (none for daemon-reload, or the connection
 * made when the layer is built), naming the D-Bus method (the verb's unless
 * given), the job systemd queued for it and the D-Bus error, where known.
 */
export const systemdError = (
  verb: Systemd.SystemdError["verb"],
  unit: string | undefined,
  reason: Systemd.SystemdError["reason"],
  dbus?: Partial<NonNullable<Systemd.SystemdError["dbus"]>>
) =>
  new Systemd.SystemdError({
    reason,
    verb,
    ...(unit === undefined ? {} : { unit }),
    dbus: {
      method: dbus?.method ?? methodOf(verb),
      ...(dbus?.job === undefined ? {} : { job: dbus.job }),
      ...(dbus?.error === undefined ? {} : { error: dbus.error })
    }
  })

type CallFailure = Extract<DbusConnection.Failure, { readonly _tag: "CallError" }>

/** A call systemd answered with a D-Bus error, as systemctl reports that error. */
export const callFailed = (
  verb: Systemd.SystemdError["verb"],
  unit: string | undefined,
  e: CallFailure
): Systemd.SystemdError => {
  const what = verb === "daemon-reload" ? "reload daemon" : verb === "show" ? "get properties" : `${verb} ${unit}`
  const exitCode = exitCodeOf(e.name)
  return systemdError(verb, unit, Systemd.Failure.classify(exitCode, `Failed to ${what}: ${e.detail}`), {
    method: e.member,
    error: e.name
  })
}

/** A call whose connection closed before systemd answered it, on the first connection and the one after. */
export const disconnected = (
  verb: Systemd.SystemdError["verb"],
  unit: string | undefined,
  e: Extract<DbusConnection.Failure, { readonly _tag: "Disconnected" }>
): Systemd.SystemdError =>
  systemdError(
    verb,
    unit,
    new Systemd.Failure({
      _tag: "Other",
      stderr: `the connection to systemd closed before it answered ${e.member}, twice (${e.detail})`
    })
  )

const serviceExplanations: Readonly<Record<string, string>> = {
  resources: "of unavailable resources or another system error",
  protocol: "the service did not take the steps required by its unit configuration",
  timeout: "a timeout was exceeded",
  "exit-code": "the control process exited with error code",
  signal: "a fatal signal was delivered to the control process",
  "core-dump": "a fatal signal was delivered causing the control process to dump core",
  watchdog: "the service failed to send watchdog ping",
  "start-limit-hit": "start of the service was attempted too often"
}

/** What systemctl prints for a job that finished with `result` (check_wait_response). */
export const jobFailedText = (unit: string, result: string, serviceResult: string): string => {
  switch (result) {
    case "canceled":
      return `Job for ${unit} canceled.`
    case "timeout":
      return `Job for ${unit} timed out.`
    case "dependency":
      return `A dependency job for ${unit} failed. See 'journalctl -xe' for details.`
    case "invalid":
      return `${unit} is not active, cannot reload.`
    case "assert":
      return `Assertion failed on job for ${unit}.`
    case "unsupported":
      return `Operation on or unit type of ${unit} not supported on this system.`
    case "collected":
      return `Queued job for ${unit} was garbage collected.`
    case "once":
      return `Unit ${unit} was started already once and can't be started again.`
    default: {
      if (!unit.endsWith(".service")) return `Job failed. See "journalctl -xe" for details.`
      const see = `See "systemctl status ${unit}" and "journalctl -xeu ${unit}" for details.`
      const why = serviceExplanations[serviceResult]
      return why === undefined ? `Job for ${unit} failed.\n${see}` : `Job for ${unit} failed because ${why}.\n${see}`
    }
  }
}

/** A connection that could not be made, as systemctl reports it. */
export const connectError = (
  verb: Systemd.SystemdError["verb"],
  unit: string | undefined,
  e: Extract<DbusConnection.Failure, { readonly _tag: "ConnectError" }>
): Systemd.SystemdError =>
  systemdError(
    verb,
    unit,
    // The machine is gone (a container that exited): that, not a systemd that never booted.
    e.gone ??
      new Systemd.Failure({
        _tag: "NotBooted",
        exitCode: 1,
        stderr: `Failed to connect to bus: ${e.socket}: ${e.detail}`
      }),
    { method: "connect" }
  )

/** Any failure on the connection, as the one of its kind above. */
export const dbusFailed = (
  verb: Systemd.SystemdError["verb"],
  unit: string | undefined,
  e: DbusConnection.DbusError
) => {
  switch (e.reason._tag) {
    case "ConnectError":
      return connectError(verb, unit, e.reason)
    case "CallError":
      return callFailed(verb, unit, e.reason)
    case "Disconnected":
      return disconnected(verb, unit, e.reason)
  }
}
