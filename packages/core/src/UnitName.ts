/**
 * systemd unit names as a Schema. Every unit name this library hands to
 * systemctl is decoded here first, so a name that is not a unit (or is an
 * option in disguise) never reaches a command line.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"

/**
 * The unit types systemd knows (`systemd.unit(5)`); a name must end in one of them.
 *
 * @since 0.1.0
 */
export const UnitTypes = [
  "service",
  "socket",
  "device",
  "mount",
  "automount",
  "swap",
  "target",
  "path",
  "timer",
  "slice",
  "scope"
] as const

/**
 * One of {@link UnitTypes}.
 *
 * @since 0.1.0
 */
export type UnitType = (typeof UnitTypes)[number]

/**
 * systemd's UNIT_NAME_MAX is 256 bytes including the terminating NUL.
 *
 * @since 0.1.0
 */
export const MaxLength = 255

// systemd's VALID_CHARS for unit names (src/basic/unit-name.h): ASCII
// letters and digits and `:-_.\`, plus `@`.
const validChar = /^[A-Za-z0-9:\-_.\\@]$/

/**
 * What is wrong with `name` as a unit name, or `undefined` when it is a valid
 * one. These are exactly the rules of systemd's `unit_name_is_valid` with
 * `UNIT_NAME_ANY`: a plain name (`kubelet.service`), an instance
 * (`getty@tty1.service`, `foo@bar@baz.service`: only the first `@` separates,
 * later ones are part of the instance) or a template (`foo@.service`, valid
 * as a name though no restart of it can succeed). A name may start with `-`
 * (`-.mount` is the root mount's unit): it never reaches a command line
 * where it could be read as an option, since `--` always comes before unit
 * names. Exposed so callers can explain a rejection without decoding.
 *
 * @since 0.1.0
 */
export const problem = (name: string): string | undefined => {
  if (name.length === 0) return "is empty"
  // UNIT_NAME_MAX is 256 including the NUL; every valid character is one byte.
  if (name.length > MaxLength) return `is ${name.length} characters long, more than systemd's ${MaxLength}`
  const dot = name.lastIndexOf(".")
  if (dot === -1) return `has no type suffix (one of .${UnitTypes.join(", .")})`
  if (dot === 0) return "has nothing before its type suffix"
  const suffix = name.slice(dot + 1)
  if (!(UnitTypes as ReadonlyArray<string>).includes(suffix)) {
    return `ends in ".${suffix}", which is not a unit type (one of .${UnitTypes.join(", .")})`
  }
  const stem = name.slice(0, dot)
  for (const ch of stem) {
    if (!validChar.test(ch)) {
      return `contains ${JSON.stringify(ch)}: only ASCII letters, digits and ":-_.\\@" are allowed`
    }
  }
  if (stem.startsWith("@")) return "has an empty template name before '@'"
  return undefined
}

/**
 * A valid systemd unit name (`kubelet.service`, `getty@tty1.service`). Decoding
 * fails with a message that says what was wrong.
 *
 * @since 0.1.0
 */
export const UnitName = Schema.String.check(
  Schema.makeFilter((name: string) => problem(name), { title: "UnitName" })
).pipe(Schema.brand("UnitName"))

/**
 * A decoded unit name: a string systemd will accept as a unit.
 *
 * @since 0.1.0
 */
export type UnitName = typeof UnitName.Type

/**
 * A unit name that failed {@link UnitName}: which name and what was wrong, so
 * the caller can fix the configuration that produced it.
 *
 * @since 0.1.0
 */
export class UnitNameError extends Schema.TaggedError<UnitNameError>()("UnitNameError", {
  unit: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `invalid unit name ${JSON.stringify(this.unit)}: ${this.reason}`
  }
}

/**
 * Decodes `name` as a {@link UnitName}, failing with a {@link UnitNameError} that says what was wrong.
 *
 * @since 0.1.0
 */
export const decode = (name: string): Effect.Effect<UnitName, UnitNameError> => {
  const why = problem(name)
  return why === undefined
    ? Effect.succeed(name as UnitName)
    : Effect.fail(new UnitNameError({ unit: name, reason: why }))
}

/**
 * True when `name` is a valid unit name.
 *
 * @since 0.1.0
 */
export const isUnitName = (name: string): name is UnitName => problem(name) === undefined
