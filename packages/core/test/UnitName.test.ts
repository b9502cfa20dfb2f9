import { assert, describe, it } from "@effect/vitest"
import { UnitName } from "@hostnode/core"
import { Effect, Schema } from "effect"

const valid = [
  "kubelet.service",
  "containerd.service",
  "getty@tty1.service",
  "getty@.service",
  "var-lib-kubelet.mount",
  "system-systemd\\x2dfsck.slice",
  "a:b_c.target",
  `${"a".repeat(247)}.service`,
  // systemd's own test-unit-name.c, unit_name_is_valid(..., UNIT_NAME_ANY) true:
  "foo.service",
  "foo@bar.service",
  "foo@bar@bar.service",
  "foo@.service",
  ".test.service",
  ".test@.service",
  "_strange::::.service",
  "user@1000.slice",
  "user@.slice",
  // `-.mount` is the root mount's unit; `--` before unit names keeps any of them from being an option.
  "-.mount",
  "-.slice",
  "--now.service"
]

const invalid: ReadonlyArray<readonly [string, string]> = [
  ["", "empty"],
  ["kubelet", "no type suffix"],
  ["kubelet.", "not a unit type"],
  ["kubelet.services", "not a unit type"],
  [".service", "nothing before its type suffix"],
  // systemd's own test-unit-name.c, unit_name_is_valid(..., UNIT_NAME_ANY) false:
  ["foo.waldo", "not a unit type"],
  ["@.service", "empty template name"],
  ["@piep.service", "empty template name"],
  ["foo@%i.service", "contains"],
  ["foo.target.wants/plain.service", "contains"],
  ["foo.target.conf/foo.conf", "not a unit type"],
  ["foo.target.requires/plain.socket", "contains"],
  ["kubelet.service; rm -rf /", "not a unit type"],
  ["a;rm -rf /.service", "contains"],
  ["$(reboot).service", "contains"],
  ["a b.service", "contains"],
  ["a\nb.service", "contains"],
  ["ünit.service", "contains"],
  ["@x.service", "empty template name"],
  [`${"a".repeat(248)}.service`, "more than systemd's 255"]
]

describe("UnitName", () => {
  it("accepts valid unit names", () => {
    for (const name of valid) {
      assert.isUndefined(UnitName.problem(name), name)
      assert.strictEqual(Schema.decodeUnknownSync(UnitName.UnitName)(name), name)
    }
  })

  it("rejects invalid names and says what was wrong", () => {
    for (const [name, why] of invalid) {
      const problem = UnitName.problem(name)
      assert.isDefined(problem, JSON.stringify(name))
      assert.include(problem, why, JSON.stringify(name))
      assert.throws(() => Schema.decodeUnknownSync(UnitName.UnitName)(name))
    }
  })

  it.effect("decode fails with a UnitNameError naming the unit and the reason", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(UnitName.decode("kubelet"))
      assert.strictEqual(e._tag, "UnitNameError")
      assert.strictEqual(e.unit, "kubelet")
      assert.strictEqual(e.reason._tag, "NoTypeSuffix")
      assert.include(e.reason.message, "no type suffix")
      assert.include(e.message, "kubelet")
      assert.strictEqual(yield* UnitName.decode("kubelet.service"), "kubelet.service")
    })
  )

  it.effect("each way a name is invalid is its own reason, with the message problem gives", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [string, UnitName.Failure["_tag"]]> = [
        ["", "Empty"],
        [`${"a".repeat(248)}.service`, "TooLong"],
        ["kubelet", "NoTypeSuffix"],
        [".service", "NothingBeforeSuffix"],
        ["kubelet.services", "NotAUnitType"],
        ["a;b.service", "InvalidCharacter"],
        ["@x.service", "EmptyTemplateName"]
      ]
      for (const [name, tag] of cases) {
        const e = yield* Effect.flip(UnitName.decode(name))
        assert.strictEqual(e.reason._tag, tag, JSON.stringify(name))
        assert.strictEqual(e.reason.message, UnitName.problem(name), JSON.stringify(name))
        assert.strictEqual(e.message, `invalid unit name ${JSON.stringify(name)}: ${UnitName.problem(name)}`)
      }
    })
  )

  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      const suffix = yield* UnitName.decode("kubelet.bogus").pipe(
        Effect.catchReason("UnitNameError", "NotAUnitType", (reason, error) =>
          Effect.succeed(`${error.unit}: .${reason.suffix}`)
        )
      )
      assert.strictEqual(suffix, "kubelet.bogus: .bogus")
      const character = yield* UnitName.decode("a;b.service").pipe(
        Effect.catchReason("UnitNameError", "InvalidCharacter", (reason) => Effect.succeed(reason.character))
      )
      assert.strictEqual(character, ";")
      const length = yield* UnitName.decode(`${"a".repeat(300)}.service`).pipe(
        Effect.catchReason("UnitNameError", "TooLong", (reason) => Effect.succeed(reason.length))
      )
      assert.strictEqual(length, 308)
      // Another reason passes through untouched.
      const other = yield* Effect.flip(
        UnitName.decode("kubelet").pipe(
          Effect.catchReason("UnitNameError", "NotAUnitType", () =>
            Effect.succeed("kubelet.service" as UnitName.UnitName)
          )
        )
      )
      assert.strictEqual(other.reason._tag, "NoTypeSuffix")
      yield* UnitName.decode("kubelet").pipe(
        // @ts-expect-error: UnitNameError has no reason "TooShort"
        Effect.catchReason("UnitNameError", "TooShort", () => Effect.void),
        Effect.ignore
      )
    })
  )

  it("the Schema's failure message carries the reason", () => {
    const result = Schema.decodeUnknownExit(UnitName.UnitName)("x.bogus")
    assert.strictEqual(result._tag, "Failure")
    assert.include(String(result), "not a unit type")
  })
})

describe("UnitName against systemd's and go-systemd's vectors", () => {
  const moreValid = [
    // every unit type systemd knows, and only as it spells them
    ...["service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope"].map(
      (t) => `x.${t}`
    ),
    // go-systemd's dbus tests
    "woof@woof.service",
    "systemd-journald.service",
    "account_db.service",
    // names systemd itself makes (unit_name_from_path, unit_name_mangle): `\xNN` escapes
    "wa--ldo@\\x2d\\x2d.mount",
    "waldo@-.mount",
    "dev-sda5.device",
    "home-lennart.mount",
    "foobar-meh...waldi.service",
    "-..-.-dev-...service",
    "_____\\x23\\x23\\x23\\x23----.....service",
    "\\xc3\\xbcxkn\\xc3\\xbcrz.service",
    // every backslash is a valid character, not only one that starts `\x`
    "xxx@@@@-----\\\\\\\\\\yyy.service",
    "foo\\bar.service",
    // only the first `@` separates; the instance may be `@` itself
    "a@@.service",
    // the last `.` starts the type
    "foo.service.service",
    // UNIT_NAME_MAX: 255 characters and the NUL
    `${"a".repeat(246)}@.service`,
    `${"a".repeat(200)}@${"b".repeat(45)}.service`
  ]

  const moreInvalid: ReadonlyArray<readonly [string, string]> = [
    ["foo@%%i.service", "contains"],
    ["foo@%%i%f.service", "contains"],
    ["foo@%F.service", "contains"],
    ["testing-transient-%d.scope", "contains"],
    ["foo*.service", "contains"],
    ["foo.Service", "not a unit type"],
    ["foo.SERVICE", "not a unit type"],
    ["foo.service ", "not a unit type"],
    [" foo.service", "contains"],
    ["foo.service\u0000", "not a unit type"],
    ["fo\u0000o.service", "contains"],
    ["foo.waldi", "not a unit type"],
    ["foo.conf", "not a unit type"],
    ["foo@bar", "no type suffix"],
    ["@", "no type suffix"],
    [".mount", "nothing before its type suffix"],
    ["@@.service", "empty template name"],
    ["@-.mount", "empty template name"],
    ["foo\u00a0.service", "contains"],
    ["foo\u200b.service", "contains"],
    [`${"a".repeat(247)}@.service`, "more than systemd's 255"],
    [`${"a".repeat(300)}.service`, "more than systemd's 255"]
  ]

  it("accepts what unit_name_is_valid(UNIT_NAME_ANY) accepts", () => {
    for (const name of moreValid) {
      assert.isUndefined(UnitName.problem(name), name)
      assert.isTrue(Schema.is(UnitName.UnitName)(name), name)
      assert.strictEqual(Schema.decodeUnknownSync(UnitName.UnitName)(name), name)
    }
  })

  it("rejects what unit_name_is_valid(UNIT_NAME_ANY) rejects, saying why", () => {
    for (const [name, why] of moreInvalid) {
      assert.include(UnitName.problem(name), why, JSON.stringify(name))
      assert.isFalse(Schema.is(UnitName.UnitName)(name), JSON.stringify(name))
      assert.throws(() => Schema.decodeUnknownSync(UnitName.UnitName)(name))
    }
  })

  it("the Schema refuses what is not a string", () => {
    for (const v of [undefined, null, 42, ["a.service"], { name: "a.service" }]) {
      assert.throws(() => Schema.decodeUnknownSync(UnitName.UnitName)(v))
    }
  })
})
