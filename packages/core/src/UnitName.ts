/**
 * systemd unit names as a Schema. Every unit name this library hands to
 * systemctl is decoded here first, so a name that is not a unit (or is an
 * option in disguise) never reaches a command line.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"

// The unit types systemd knows (`systemd.unit(5)`); a name must end in one of them.
const UnitTypes: ReadonlyArray<string> = [
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
]

// systemd's UNIT_NAME_MAX is 256 bytes including the terminating NUL.
const MaxLength = 255

// systemd's VALID_CHARS for unit names (src/basic/unit-name.h): ASCII
// letters and digits and `:-_.\`, plus `@`.
const validChar = /^[A-Za-z0-9:\-_.\\@]$/

/**
 * Why a name is not a unit name, told by its `_tag`: one rule of systemd's
 * `unit_name_is_valid` it breaks.
 * - `Empty`: it is empty;
 * - `TooLong`: longer than systemd's `UNIT_NAME_MAX` allows (`length`);
 * - `NoTypeSuffix`: no `.` and so no type suffix (`kubelet` for `kubelet.service`);
 * - `NothingBeforeSuffix`: only a type suffix (`.service`);
 * - `NotAUnitType`: what follows its last `.` (`suffix`) is not a unit type;
 * - `InvalidCharacter`: it holds a character (`character`, the first) systemd
 *   does not allow in one;
 * - `EmptyTemplateName`: it starts with `@` (`@x.service`).
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/UnitName/Failure")({
  _tag: Schema.Literals([
    "Empty",
    "TooLong",
    "NoTypeSuffix",
    "NothingBeforeSuffix",
    "NotAUnitType",
    "InvalidCharacter",
    "EmptyTemplateName"
  ]),
  /** The name's length, in characters (every valid character is one byte), for `TooLong`. */
  length: Schema.optionalKey(Schema.Number),
  /** What follows the last `.`, for `NotAUnitType`. */
  suffix: Schema.optionalKey(Schema.String),
  /** The first character that is not allowed, for `InvalidCharacter`. */
  character: Schema.optionalKey(Schema.String)
}) {
  override get message(): string {
    switch (this._tag) {
      case "Empty":
        return "is empty"
      case "TooLong":
        return `is ${this.length} characters long, more than systemd's ${MaxLength}`
      case "NoTypeSuffix":
        return `has no type suffix (one of .${UnitTypes.join(", .")})`
      case "NothingBeforeSuffix":
        return "has nothing before its type suffix"
      case "NotAUnitType":
        return `ends in ".${this.suffix}", which is not a unit type (one of .${UnitTypes.join(", .")})`
      case "InvalidCharacter":
        return `contains ${JSON.stringify(this.character)}: only ASCII letters, digits and ":-_.\\@" are allowed`
      default:
        return "has an empty template name before '@'"
    }
  }
}

/** The first rule of systemd's `unit_name_is_valid` that `name` breaks, or `undefined` for a valid name. */
const reasonOf = (name: string): Failure | undefined => {
  if (name.length === 0) return new Failure({ _tag: "Empty" })
  // UNIT_NAME_MAX is 256 including the NUL; every valid character is one byte.
  if (name.length > MaxLength) return new Failure({ _tag: "TooLong", length: name.length })
  const dot = name.lastIndexOf(".")
  if (dot === -1) return new Failure({ _tag: "NoTypeSuffix" })
  if (dot === 0) return new Failure({ _tag: "NothingBeforeSuffix" })
  const suffix = name.slice(dot + 1)
  if (!UnitTypes.includes(suffix)) return new Failure({ _tag: "NotAUnitType", suffix })
  const stem = name.slice(0, dot)
  for (const character of stem) {
    if (!validChar.test(character)) return new Failure({ _tag: "InvalidCharacter", character })
  }
  if (stem.startsWith("@")) return new Failure({ _tag: "EmptyTemplateName" })
  return undefined
}

/**
 * What is wrong with `name` as a unit name, or `undefined` when it is a valid
 * one. These are exactly the rules of systemd's `unit_name_is_valid` with
 * `UNIT_NAME_ANY`: a plain name (`kubelet.service`), an instance
 * (`getty@tty1.service`, `foo@bar@baz.service`: only the first `@` separates,
 * later ones are part of the instance) or a template (`foo@.service`, valid
 * as a name though no restart of it can succeed). A name may start with `-`
 * (`-.mount` is the root mount's unit): it never reaches a command line
 * where it could be read as an option, since `--` always comes before unit
 * names. Exposed so callers can explain a rejection without decoding; the
 * sentence is the message of the {@link Failure} `decode` fails with.
 *
 * @example
 * ```ts
 * import { UnitName } from "@hostnode/core"
 *
 * // A settings form explains each bad name as it is typed, without running an Effect.
 * const hints = ["containerd.service", "kubelet"].flatMap((name) => {
 *   const problem = UnitName.problem(name) // "kubelet": has no type suffix (one of .service, ...)
 *   return problem === undefined ? [] : [`${name} ${problem}`]
 * })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const problem = (name: string): string | undefined => reasonOf(name)?.message

/**
 * A valid systemd unit name (`kubelet.service`, `getty@tty1.service`). Decoding
 * fails with a message that says what was wrong; `Schema.is(UnitName)` is the
 * type guard.
 *
 * @category models
 * @since 0.1.0
 */
export const UnitName = Schema.String.check(
  Schema.makeFilter((name: string) => problem(name), { title: "UnitName" })
).pipe(Schema.brand("UnitName"))

/**
 * A decoded unit name: a string systemd will accept as a unit.
 *
 * @category models
 * @since 0.1.0
 */
export type UnitName = typeof UnitName.Type

/**
 * A unit name that failed {@link UnitName}: which name and why (a
 * {@link Failure}), so the caller can fix the configuration that
 * produced it.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnitNameError extends Schema.TaggedError<UnitNameError>()("UnitNameError", {
  unit: Schema.String,
  reason: Failure
}) {
  override get message(): string {
    return `invalid unit name ${JSON.stringify(this.unit)}: ${this.reason.message}`
  }
}

/**
 * Decodes `name` as a {@link UnitName}, failing with a {@link UnitNameError} that says what was wrong.
 *
 * @example
 * ```ts
 * import { UnitName } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // A unit from configuration, checked before anything runs.
 * const unit = UnitName.decode("kubelet.service").pipe(
 *   Effect.catchReason("UnitNameError", "TooLong", (r) => Effect.die(`unit name too long: ${r.message}`))
 * )
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decode = (name: string): Effect.Effect<UnitName, UnitNameError> => {
  const reason = reasonOf(name)
  return reason === undefined
    ? Effect.succeed(name as UnitName)
    : Effect.fail(new UnitNameError({ unit: name, reason }))
}
