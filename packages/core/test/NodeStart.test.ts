import { assert, describe, it } from "@effect/vitest"
import { type ConfigFile, NodeStart } from "@hostnode/core"
import { Effect, Redacted } from "effect"
import * as Internal from "../src/internal/nodeStart.ts"

/** The InvalidValue reason of `e`: the wrong fields. */
const invalidValue = (e: ConfigFile.ConfigError): ConfigFile.InvalidValue => {
  if (e.reason._tag !== "InvalidValue") return assert.fail(`expected reason InvalidValue, got ${e.reason._tag}`)
  return e.reason
}

const base = { nodeName: "node-a", apiServer: "https://10.0.0.1:6443" }

describe("NodeStart", () => {
  it.effect("the auth mode is a tagged union: bootstrap token, kubeconfig, exec credential", () =>
    Effect.gen(function* () {
      const token = yield* NodeStart.decode({
        ...base,
        auth: { _tag: "BootstrapToken", token: "abcdef.0123456789abcdef" }
      })
      assert.isTrue(Internal.usesBootstrapToken(token))
      if (token.auth._tag === "BootstrapToken") {
        assert.strictEqual(Redacted.value(token.auth.token), "abcdef.0123456789abcdef")
        assert.notInclude(JSON.stringify(token), "0123456789abcdef")
        assert.notInclude(String(token.auth.token), "0123456789abcdef")
      }
      const kubeconfig = yield* NodeStart.decode({ ...base, auth: { _tag: "Kubeconfig", path: "/etc/kubeconfig" } })
      assert.isFalse(Internal.usesBootstrapToken(kubeconfig))
      const exec = yield* NodeStart.decode({ ...base, auth: { _tag: "ExecCredential", command: "/usr/bin/cred" } })
      assert.isFalse(Internal.usesBootstrapToken(exec))
      assert.deepStrictEqual(exec.auth, {
        _tag: "ExecCredential",
        command: "/usr/bin/cred",
        args: [],
        apiVersion: "client.authentication.k8s.io/v1",
        env: {}
      })
    })
  )

  it.effect("LocalDNS listeners default to the AKS addresses; absent means no LocalDNS", () =>
    Effect.gen(function* () {
      const auth = { _tag: "Kubeconfig", path: "/k" }
      const withDns = yield* NodeStart.decode({ ...base, auth, localDns: {} })
      assert.deepStrictEqual(Internal.listeners(withDns), [
        { name: "node", address: "169.254.10.10" },
        { name: "cluster", address: "169.254.10.11" }
      ])
      const without = yield* NodeStart.decode({ ...base, auth })
      assert.deepStrictEqual(Internal.listeners(without), [])
    })
  )

  it.effect("errors point at the field: an unknown auth mode, a bad token, a bad or repeated listener", () =>
    Effect.gen(function* () {
      const unknown = yield* Effect.flip(NodeStart.decode({ ...base, auth: { _tag: "Password", password: "x" } }))
      assert.strictEqual(invalidValue(unknown).field, "auth")
      const badToken = yield* Effect.flip(
        NodeStart.decode({ ...base, auth: { _tag: "BootstrapToken", token: "secret-value" } }, "/gs.json")
      )
      assert.strictEqual(invalidValue(badToken).field, "auth.token")
      assert.notInclude(badToken.message, "secret-value")
      const badAddress = yield* Effect.flip(
        NodeStart.decode({
          ...base,
          auth: { _tag: "Kubeconfig", path: "/k" },
          localDns: { clusterListener: "169.254.010.11" }
        })
      )
      assert.strictEqual(invalidValue(badAddress).field, "localDns.clusterListener")
      const same = yield* Effect.flip(
        NodeStart.decode({
          ...base,
          auth: { _tag: "Kubeconfig", path: "/k" },
          localDns: { clusterListener: "169.254.10.10" }
        })
      )
      assert.strictEqual(invalidValue(same).field, "localDns.clusterListener")
      const name = yield* Effect.flip(
        NodeStart.decode({ ...base, nodeName: "Node_A", auth: { _tag: "Kubeconfig", path: "k" } })
      )
      assert.deepStrictEqual(
        invalidValue(name)
          .issues.map((i) => i.field)
          .sort(),
        ["auth.path", "nodeName"]
      )
    })
  )
})
