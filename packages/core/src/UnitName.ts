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
 * Why a name is not a unit name: it is empty.
 *
 * @since 0.3.0
 */
export class Empty extends Schema.TaggedError<Empty>()("Empty", {}) {
  override get message(): string {
    return "is empty"
  }
}

/**
 * Why a name is not a unit name: it is longer than systemd's `UNIT_NAME_MAX` allows ({@link MaxLength}).
 *
 * @since 0.3.0
 */
export class TooLong extends Schema.TaggedError<TooLong>()("TooLong", {
  /** The name's length, in characters (every valid character is one byte). */
  length: Schema.Number
}) {
  override get message(): string {
    return `is ${this.length} characters long, more than systemd's ${MaxLength}`
  }
}

/**
 * Why a name is not a unit name: it has no `.` and so no type suffix (`kubelet` for `kubelet.service`).
 *
 * @since 0.3.0
 */
export class NoTypeSuffix extends Schema.TaggedError<NoTypeSuffix>()("NoTypeSuffix", {}) {
  override get message(): string {
    return `has no type suffix (one of .${UnitTypes.join(", .")})`
  }
}

/**
 * Why a name is not a unit name: it is only a type suffix (`.service`).
 *
 * @since 0.3.0
 */
export class NothingBeforeSuffix extends Schema.TaggedError<NothingBeforeSuffix>()("NothingBeforeSuffix", {}) {
  override get message(): string {
    return "has nothing before its type suffix"
  }
}

/**
 * Why a name is not a unit name: what follows its last `.` is not one of {@link UnitTypes}.
 *
 * @since 0.3.0
 */
export class NotAUnitType extends Schema.TaggedError<NotAUnitType>()("NotAUnitType", {
  /** What follows the last `.`. */
  suffix: Schema.String
}) {
  override get message(): string {
    return `ends in ".${this.suffix}", which is not a unit type (one of .${UnitTypes.join(", .")})`
  }
}

/**
 * Why a name is not a unit name: it holds a character systemd does not allow in one.
 *
 * @since 0.3.0
 */
export class InvalidCharacter extends Schema.TaggedError<InvalidCharacter>()("InvalidCharacter", {
  /** The first character that is not allowed. */
  character: Schema.String
}) {
  override get message(): string {
    return `contains ${JSON.stringify(this.character)}: only ASCII letters, digits and ":-_.\\@" are allowed`
  }
}

/**
 * Why a name is not a unit name: it starts with `@`, so the template it names has no name (`@x.service`).
 *
 * @since 0.3.0
 */
export class EmptyTemplateName extends Schema.TaggedError<EmptyTemplateName>()("EmptyTemplateName", {}) {
  override get message(): string {
    return "has an empty template name before '@'"
  }
}

/**
 * Why a name is not a unit name: one class per rule of systemd's `unit_name_is_valid` it breaks.
 *
 * @since 0.3.0
 */
export const UnitNameErrorReason = Schema.Union([
  Empty,
  TooLong,
  NoTypeSuffix,
  NothingBeforeSuffix,
  NotAUnitType,
  InvalidCharacter,
  EmptyTemplateName
])

/**
 * Why a name is not a unit name.
 *
 * @since 0.3.0
 */
export type UnitNameErrorReason = typeof UnitNameErrorReason.Type

/** The first rule of systemd's `unit_name_is_valid` that `name` breaks, or `undefined` for a valid name. */
const reasonOf = (name: string): UnitNameErrorReason | undefined => {
  if (name.length === 0) return new Empty()
  // UNIT_NAME_MAX is 256 including the NUL; every valid character is one byte.
  if (name.length > MaxLength) return new TooLong({ length: name.length })
  const dot = name.lastIndexOf(".")
  if (dot === -1) return new NoTypeSuffix()
  if (dot === 0) return new NothingBeforeSuffix()
  const suffix = name.slice(dot + 1)
  if (!(UnitTypes as ReadonlyArray<string>).includes(suffix)) return new NotAUnitType({ suffix })
  const stem = name.slice(0, dot)
  for (const character of stem) {
    if (!validChar.test(character)) return new InvalidCharacter({ character })
  }
  if (stem.startsWith("@")) return new EmptyTemplateName()
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
 * sentence is the message of the {@link UnitNameErrorReason} `decode` fails with.
 *
 * @since 0.1.0
 */
export const problem = (name: string): string | undefined => reasonOf(name)?.message

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
 * A unit name that failed {@link UnitName}: which name and why (a
 * {@link UnitNameErrorReason}), so the caller can fix the configuration that
 * produced it.
 *
 * @since 0.1.0
 */
export class UnitNameError extends Schema.TaggedError<UnitNameError>()("UnitNameError", {
  unit: Schema.String,
  reason: UnitNameErrorReason
}) {
  override get message(): string {
    return `invalid unit name ${JSON.stringify(this.unit)}: ${this.reason.message}`
  }
}

/**
 * Decodes `name` as a {@link UnitName}, failing with a {@link UnitNameError} that says what was wrong.
 *
 * @since 0.1.0
 */
export const decode = (name: string): Effect.Effect<UnitName, UnitNameError> => {
  const reason = reasonOf(name)
  return reason === undefined
    ? Effect.succeed(name as UnitName)
    : Effect.fail(new UnitNameError({ unit: name, reason }))
}

/**
 * True when `name` is a valid unit name.
 *
 * @since 0.1.0
 */
export const isUnitName = (name: string): name is UnitName => reasonOf(name) === undefined
