/**
 * The conformance suite of `GoalStateSource` and the default goal state
 * resolver: which source wins (a given goal state, then a `resolve`
 * override, then the file), reading and decoding the slot's file from the
 * agent configuration directory below a host root, and the errors (a missing
 * file and an invalid one are different errors; a wrong field is named). A
 * function taking a Layer that provides the `FileSystem`, so the real file
 * system and the simulated one run the very same tests; each test works in a
 * scoped temporary directory used as the host root.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { AgentConfig, GoalState, Hooks } from "@hostnode/core"
import { Effect, FileSystem, type Layer, Redacted } from "effect"
import { goalStateDocument, sha, token } from "./internal/goalStateDocument.ts"
import { rootAt } from "./internal/rootAt.ts"

/** A fresh host root with the default agent configuration directory in it. */
const hostRoot = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-goalstate-" })
  const config = yield* Effect.orDie(AgentConfig.decode({}))
  const dir = `${root}${config.configDir}/goalstates`
  yield* fs.makeDirectory(dir, { recursive: true })
  const write = (slot: string, content: unknown) =>
    fs.writeFileString(`${dir}/${slot}.json`, typeof content === "string" ? content : JSON.stringify(content))
  return { fs, root, config, dir, write }
})

/**
 * Registers the suite under `name`. `hostLayer` provides the `FileSystem` (with scoped temporary directories).
 *
 * @category conformance
 * @since 0.1.0
 */
export const suite = (name: string, hostLayer: Layer.Layer<FileSystem.FileSystem>): void =>
  layer(hostLayer)(`GoalStateSource conformance: ${name}`, (it) => {
    it.effect("the default resolver reads and decodes the slot's file below the host root, defaults applied", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        yield* write("a", goalStateDocument("a"))
        const gs = yield* GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for("a")
        assert.strictEqual(gs.slot, "a")
        assert.strictEqual(gs.kubernetesVersion, "1.31.2")
        assert.deepStrictEqual(gs.nodeStart.localDns, {
          nodeListener: "169.254.10.10",
          clusterListener: "169.254.10.11"
        })
        assert.strictEqual(gs.nodeStart.auth._tag, "BootstrapToken")
        if (gs.nodeStart.auth._tag === "BootstrapToken") {
          assert.strictEqual(Redacted.value(gs.nodeStart.auth.token), token)
          assert.notInclude(String(gs.nodeStart.auth.token), "0123456789abcdef", "the token is redacted")
          assert.strictEqual(gs.nodeStart.auth.bootstrapKubeconfig, "/var/lib/kubelet/bootstrap-kubeconfig")
        }
      })
    )

    it.effect("a given goal state wins over the resolve override and the file", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        yield* write("a", goalStateDocument("a", { kubernetesVersion: "1.30.0" }))
        const given = yield* GoalState.decodeMachineGoalState(goalStateDocument("a", { kubernetesVersion: "1.33.1" }))
        const gs = yield* GoalState.makeSource({
          config,
          hostRoot: yield* rootAt(root),
          goalState: given,
          resolve: () => Effect.die("resolve must not be called when a goal state is given")
        }).for("a")
        assert.strictEqual(gs, given)
      })
    )

    it.effect("a resolve override wins over the file, and is asked for the slot", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        yield* write("a", goalStateDocument("a", { kubernetesVersion: "1.30.0" }))
        const asked: Array<string> = []
        const gs = yield* GoalState.makeSource({
          config,
          hostRoot: yield* rootAt(root),
          resolve: (slot) =>
            Effect.sync(() => asked.push(slot)).pipe(
              Effect.andThen(
                GoalState.decodeMachineGoalState(goalStateDocument(slot, { kubernetesVersion: "1.32.0" }))
              ),
              Effect.orDie
            )
        }).for("a")
        assert.strictEqual(gs.kubernetesVersion, "1.32.0")
        assert.deepStrictEqual(asked, ["a"])
      })
    )

    it.effect("a missing file is a GoalStateError (NotFound) naming the slot and the file", () =>
      Effect.gen(function* () {
        const { root, config, dir } = yield* hostRoot
        const e = yield* Effect.flip(GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for("b"))
        assert.strictEqual(e.reason._tag, "NotFound")
        if (e.reason._tag !== "NotFound") return
        assert.strictEqual(e.slot, "b")
        assert.strictEqual(e.reason.file, `${dir}/b.json`)
        assert.include(e.message, `${dir}/b.json`)
      })
    )

    it.effect("a file that is not JSON is a GoalStateError (InvalidJson), a different reason from a missing one", () =>
      Effect.gen(function* () {
        const { root, config, dir, write } = yield* hostRoot
        yield* write("a", '{"slot": "a", ')
        const e = yield* Effect.flip(GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for("a"))
        assert.strictEqual(e.reason._tag, "InvalidJson")
        if (e.reason._tag !== "InvalidJson") return
        assert.strictEqual(e.reason.file, `${dir}/a.json`)
      })
    )

    it.effect("wrong fields are named, every one of them, and the token is never printed", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        const leaked = "NOT-A-TOKEN-secret"
        const doc = goalStateDocument("a", { kubernetesVersion: "latest" })
        const nodeStart = doc.nodeStart as Record<string, unknown>
        yield* write("a", {
          ...doc,
          nodeStart: {
            ...nodeStart,
            auth: { _tag: "BootstrapToken", token: leaked },
            localDns: { nodeListener: "169.254.10.300" },
            extra: true
          }
        })
        const e = yield* Effect.flip(GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for("a"))
        assert.strictEqual(e.reason._tag, "InvalidValue")
        if (e.reason._tag !== "InvalidValue") return
        assert.strictEqual(e.reason.field, "kubernetesVersion")
        // every wrong field, each once (the order among them is the decoder's)
        assert.deepStrictEqual(e.reason.issues.map((i) => i.field).sort(), [
          "kubernetesVersion",
          "nodeStart.auth.token",
          "nodeStart.extra",
          "nodeStart.localDns.nodeListener"
        ])
        assert.notInclude(e.message, leaked)
      })
    )

    it.effect("a goal state for another slot is a GoalStateError (SlotMismatch), from the file or given", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        yield* write("a", goalStateDocument("b"))
        const e = yield* Effect.flip(GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for("a"))
        assert.strictEqual(e.reason._tag, "SlotMismatch")
        const given = yield* GoalState.decodeMachineGoalState(goalStateDocument("b"))
        const e2 = yield* Effect.flip(GoalState.makeSource({ config, goalState: given }).for("a"))
        assert.strictEqual(e2.reason._tag, "SlotMismatch")
        assert.deepStrictEqual(e2.reason._tag === "SlotMismatch" ? e2.reason.issues.map((i) => i.field) : [], ["slot"])
      })
    )

    it.effect("a slot that is not a slot name is rejected before any file is read", () =>
      Effect.gen(function* () {
        const { root, config, fs } = yield* hostRoot
        // what "../x" would reach if it were joined
        yield* fs.writeFileString(`${root}${config.configDir}/x.json`, JSON.stringify(goalStateDocument("x")))
        for (const slot of ["../x", "", "A", "a/b"]) {
          const e = yield* Effect.flip(GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for(slot))
          assert.strictEqual(e.reason._tag, "InvalidSlot", slot)
        }
      })
    )

    it.effect("download overrides replace the artifacts they name; others are ignored", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        yield* write("a", goalStateDocument("a"))
        const downloads = yield* GoalState.decodeDownloadOverrides({
          artifacts: {
            kubelet: { url: "https://mirror.example/kubelet", sha256: sha("c") },
            "not-in-goal-state": { url: "https://mirror.example/x", sha256: sha("d") }
          }
        })
        const gs = yield* GoalState.makeSource({ config, hostRoot: yield* rootAt(root), downloads }).for("a")
        assert.deepStrictEqual(gs.artifacts, {
          kubelet: { url: "https://mirror.example/kubelet", sha256: sha("c") },
          containerd: { url: "https://artifacts.example/containerd", sha256: sha("b") }
        })
      })
    )

    it.effect("an absolute symlink in the configuration directory resolves below the host root", () =>
      Effect.gen(function* () {
        const { fs, root, config, dir } = yield* hostRoot
        yield* fs.remove(dir, { recursive: true })
        yield* fs.makeDirectory(`${root}/elsewhere`)
        yield* fs.writeFileString(`${root}/elsewhere/a.json`, JSON.stringify(goalStateDocument("a")))
        yield* fs.symlink("/elsewhere", dir)
        const gs = yield* GoalState.makeSource({ config, hostRoot: yield* rootAt(root) }).for("a")
        assert.strictEqual(gs.slot, "a")
      })
    )

    it.effect("Hooks: the goal state source reads below the hooks' host root; a resolve override replaces it", () =>
      Effect.gen(function* () {
        const { root, config, write } = yield* hostRoot
        yield* write("a", goalStateDocument("a"))
        const hooks = Hooks.make(config, { hostRoot: yield* rootAt(root) })
        assert.strictEqual((yield* hooks.goalStateSource().for("a")).kubernetesVersion, "1.31.2")
        assert.strictEqual((yield* hooks.resolve(GoalState.Slot.make("a"))).kubernetesVersion, "1.31.2")
        const overridden = Hooks.make(config, {
          hostRoot: yield* rootAt(root),
          resolve: (slot) =>
            GoalState.decodeMachineGoalState(goalStateDocument(slot, { kubernetesVersion: "1.29.9" })).pipe(
              Effect.orDie
            )
        })
        assert.strictEqual((yield* overridden.goalStateSource().for("a")).kubernetesVersion, "1.29.9")
      })
    )
  })
