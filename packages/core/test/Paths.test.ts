import { assert, describe, it } from "@effect/vitest"
import { Paths } from "@hostnode/core"

describe("Paths", () => {
  it("orDefault keeps a value and replaces an empty one", () => {
    assert.strictEqual(Paths.orDefault("/x", "/y"), "/x")
    assert.strictEqual(Paths.orDefault("", "/y"), "/y")
    assert.strictEqual(Paths.orDefault(undefined, "/y"), "/y")
  })
  it("the client PKI dir is below the kubelet dir", () => {
    assert.isTrue(Paths.Node.KubeletClientPkiDir.startsWith(`${Paths.Node.KubeletDir}/`))
  })
})
