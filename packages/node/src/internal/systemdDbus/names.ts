/**
 * The bus names of systemd's manager and its units, and how a unit's object
 * path is made: what every call of `SystemdDbus` addresses.
 */

/** systemd's bus name. */
export const Destination = "org.freedesktop.systemd1"
/** The manager's object. */
export const ManagerPath = "/org/freedesktop/systemd1"
/** The manager's interface: jobs, Reload, Subscribe, the JobRemoved signal. */
export const ManagerInterface = "org.freedesktop.systemd1.Manager"
/** The standard properties interface (Get, GetAll). */
export const PropertiesInterface = "org.freedesktop.DBus.Properties"
/** The interface every unit object has. */
export const UnitInterface = "org.freedesktop.systemd1.Unit"
/** The interface of a `.service` unit's object. */
export const ServiceInterface = "org.freedesktop.systemd1.Service"

/** systemd's object path of a unit: `/org/freedesktop/systemd1/unit/` and the name escaped as a bus label. */
export const unitPath = (unit: string): string => {
  let label = ""
  for (const [i, ch] of [...unit].entries()) {
    const alnum = /^[A-Za-z]$/.test(ch) || (i > 0 && /^[0-9]$/.test(ch))
    label += alnum ? ch : `_${ch.charCodeAt(0).toString(16).padStart(2, "0")}`
  }
  return `${ManagerPath}/unit/${label === "" ? "_" : label}`
}
