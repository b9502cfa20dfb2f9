/**
 * The lossless correspondence between names as bytes and strings: a
 * bijection for every byte string (checked against random bytes, including
 * the long ones the platform decoder handles), the display form, the order.
 */
import { assert, describe, it } from "@effect/vitest"
import { FileName } from "@hostnode/core"
import { Schema } from "effect"
import * as FileNames from "#internal/fileName.ts"

const bytes = (xs: ReadonlyArray<number>) => new Uint8Array(xs)

describe("FileName", () => {
  it("valid UTF-8 decodes as usual; every other byte becomes U+DC80 + byte", () => {
    assert.strictEqual(FileName.decode(bytes([0x63, 0x61, 0x66, 0xc3, 0xa9])), "café")
    assert.strictEqual(FileName.decode(bytes([0x63, 0x61, 0x66, 0xe9])), "caf\udce9")
    // An overlong encoding and a surrogate encoded in UTF-8 are not valid UTF-8.
    assert.strictEqual(FileName.decode(bytes([0xc0, 0xaf])), "\udcc0\udcaf")
    assert.strictEqual(FileName.decode(bytes([0xed, 0xa0, 0x80])), "\udced\udca0\udc80")
    assert.strictEqual(FileName.decode(bytes([0xf0, 0x9f, 0x98, 0x80])), "😀")
    // A leading byte-order mark is part of the name.
    const bom = [0xef, 0xbb, 0xbf, ...Array.from({ length: 100 }, () => 0x61)]
    assert.deepStrictEqual([...FileName.encode(FileName.decode(bytes(bom)))], bom)
  })

  it.prop(
    "decode then encode gives back the very bytes, short and long (the platform decoder's road too)",
    [Schema.Array(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 255 })))],
    ([xs]) => {
      for (const input of [xs, [...xs, ...xs, ...xs, ...Array.from({ length: 70 }, (_, i) => 0x61 + (i % 26))]]) {
        const b = bytes(input)
        const text = FileName.decode(b)
        assert.deepStrictEqual([...FileName.encode(text)], input)
        assert.strictEqual(FileName.decode(FileName.encode(text)), text)
      }
    },
    { arbitrary: { runs: 1000 } }
  )

  it("display escapes what is not UTF-8 and control characters; compare orders by bytes", () => {
    assert.strictEqual(FileName.display("/pods/caf\udce9.txt"), "/pods/caf\\xe9.txt")
    assert.strictEqual(FileName.display("a\nb"), "a\\x0ab")
    assert.strictEqual(FileName.display("😀"), "😀")
    assert.isTrue(FileNames.hasEscapedBytes("caf\udce9"))
    assert.isFalse(FileNames.hasEscapedBytes("😀"))
    assert.isBelow(FileNames.compare(bytes([0x61]), bytes([0x61, 0x00])), 0)
    assert.isBelow(FileNames.compare(bytes([0x61, 0xff]), bytes([0x62])), 0)
    assert.isTrue(FileNames.isComponent(bytes([0x61])))
    for (const bad of [[], [0x2e], [0x2e, 0x2e], [0x61, 0x2f], [0x00]])
      assert.isFalse(FileNames.isComponent(bytes(bad)))
  })
})
