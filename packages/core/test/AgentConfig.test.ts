import { assert, describe, it } from "@effect/vitest"
import { AgentConfig, type ConfigFile } from "@hostnode/core"
import { Duration, Effect, FileSystem, PlatformError } from "effect"

/** The reason of `e`, which must be `tag`. */
const reasonOf = <T extends ConfigFile.ConfigError["reason"]["_tag"]>(
  e: ConfigFile.ConfigError,
  tag: T
): ConfigFile.ConfigError["reason"] & { readonly _tag: T } => {
  if (e.reason._tag !== tag) return assert.fail(`expected reason ${tag}, got ${e.reason._tag}`)
  return e.reason as ConfigFile.ConfigError["reason"] & { readonly _tag: T }
}

describe("AgentConfig", () => {
  it.effect("{} is a production host: every field defaulted", () =>
    Effect.gen(function* () {
      const c = yield* AgentConfig.decode({})
      assert.strictEqual(c.configDir, "/etc/hostnode")
      assert.deepStrictEqual<ReadonlyArray<string>>(c.units, ["containerd.service", "kubelet.service"])
      assert.strictEqual(c.localDns.interfaceName, "localdns")
      assert.strictEqual(c.localDns.interfaceKind, "dummy")
      assert.strictEqual(Duration.toMillis(c.localDns.readinessTimeout), 120_000)
      assert.strictEqual(Duration.toMillis(c.localDns.probeInterval), 500)
      assert.strictEqual(Duration.toMillis(c.localDns.probeTimeout), 1_000)
    })
  )

  it.effect("given values are kept", () =>
    Effect.gen(function* () {
      const c = yield* AgentConfig.decodeJson(
        JSON.stringify({
          configDir: "/var/lib/agent",
          units: ["kubelet.service"],
          localDns: { interfaceName: "ldns0", interfaceKind: "bridge", readinessTimeout: "30 seconds" }
        })
      )
      assert.strictEqual(c.configDir, "/var/lib/agent")
      assert.deepStrictEqual<ReadonlyArray<string>>(c.units, ["kubelet.service"])
      assert.strictEqual(c.localDns.interfaceKind, "bridge")
      assert.strictEqual(Duration.toMillis(c.localDns.readinessTimeout), 30_000)
    })
  )

  it.effect("errors point at the wrong fields, all of those one pass finds, and name the file", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(
        AgentConfig.decodeJson(
          JSON.stringify({
            configDir: "etc/hostnode",
            units: ["kubelet.service", "kubelet"],
            localDns: { interfaceKind: "tun", interfaceName: "a-name-that-is-too-long" },
            unitz: []
          }),
          "/etc/hostnode/config.json"
        )
      )
      assert.strictEqual(e._tag, "ConfigError")
      const reason = reasonOf(e, "InvalidValue")
      assert.strictEqual(reason.file, "/etc/hostnode/config.json")
      assert.deepStrictEqual(reason.issues.map((i) => i.field).sort(), [
        "configDir",
        "localDns.interfaceKind",
        "localDns.interfaceName",
        "units[1]",
        "unitz"
      ])
      assert.include(e.message, "/etc/hostnode/config.json")
      assert.include(e.message, reason.field)
      const units = reason.issues.find((i) => i.field === "units[1]")
      assert.include(units?.message, "type suffix")
    })
  )

  it.effect("text that is not JSON is InvalidJson with the parser's message", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(AgentConfig.decodeJson('{"configDir": ', "/x.json"))
      const reason = reasonOf(e, "InvalidJson")
      assert.notProperty(reason, "field")
      assert.deepStrictEqual(
        reason.issues.map((i) => i.field),
        [""]
      )
      assert.include(e.message, "/x.json")
      assert.include(e.message, "JSON")
    })
  )

  it.effect("durations must be positive", () =>
    Effect.gen(function* () {
      for (const bad of ["0 millis", "-1 seconds", "soon"]) {
        const e = yield* Effect.flip(AgentConfig.decode({ localDns: { probeInterval: bad } }))
        assert.strictEqual(reasonOf(e, "InvalidValue").field, "localDns.probeInterval", bad)
      }
    })
  )

  it.effect("an empty unit list is rejected", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(AgentConfig.decode({ units: [] }))
      assert.strictEqual(reasonOf(e, "InvalidValue").field, "units")
    })
  )

  it.effect("catchReason reaches each reason of a ConfigError, with its own fields", () =>
    Effect.gen(function* () {
      const issues = yield* AgentConfig.decodeJson('{"configDir": ', "/x.json").pipe(
        Effect.as([]),
        Effect.catchReason("ConfigError", "InvalidJson", (reason) => Effect.succeed(reason.issues))
      )
      assert.include(issues[0]?.message, "not JSON")
      const field = yield* AgentConfig.decode({ units: [] }).pipe(
        Effect.as(""),
        Effect.catchReason("ConfigError", "InvalidValue", (reason) => Effect.succeed(reason.field))
      )
      assert.strictEqual(field, "units")
      // a missing file is its own reason: a caller may fall back to defaults for it
      const noFiles = FileSystem.layerNoop({
        readFileString: (path) =>
          Effect.fail(
            PlatformError.systemError({
              _tag: "NotFound",
              module: "FileSystem",
              method: "readFileString",
              pathOrDescriptor: path
            })
          )
      })
      const missing = yield* AgentConfig.read("/etc/hostnode/config.json").pipe(
        Effect.as(""),
        Effect.catchReason("ConfigError", "NotFound", (reason, error) =>
          Effect.succeed(`${reason.file} | ${error.message}`)
        ),
        Effect.provide(noFiles)
      )
      assert.strictEqual(
        missing,
        "/etc/hostnode/config.json | AgentConfig not found: /etc/hostnode/config.json does not exist"
      )
      const refused = AgentConfig.decode({}).pipe(
        // @ts-expect-error: no reason "ConfigNotFound" (the old class is the reason NotFound)
        Effect.catchReason("ConfigError", "ConfigNotFound", () => Effect.void)
      )
      assert.isTrue(Effect.isEffect(refused))
    })
  )
})
