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
      assert.include(e.reason, "no type suffix")
      assert.include(e.message, "kubelet")
      assert.strictEqual(yield* UnitName.decode("kubelet.service"), "kubelet.service")
    })
  )

  it("the Schema's failure message carries the reason", () => {
    const result = Schema.decodeUnknownExit(UnitName.UnitName)("x.bogus")
    assert.strictEqual(result._tag, "Failure")
    assert.include(String(result), "not a unit type")
  })
})
