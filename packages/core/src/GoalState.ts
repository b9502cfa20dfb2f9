/**
 * The machine goal state a node is built from, one per slot, and where it
 * comes from (the Go package's `GoalStateSource`). A goal state names its
 * slot, the Kubernetes version, the artifacts to download and the node start;
 * download overrides replace where artifacts come from (a mirror, a pinned
 * build). `GoalStateSource.for(slot)` picks, in order: a goal state given by
 * the caller (bootstrap has already resolved one, so device discovery happens
 * once), a `resolve` override, or the default resolver, which reads the slot's
 * file from the agent configuration directory below the host root.
 *
 * Boundary: deciding which goal state a slot gets, reading and decoding its
 * file. What a goal state makes the node do is elsewhere.
 *
 * @since 0.1.0
 */
import { Effect, type FileSystem, Schema } from "effect"
import type { AgentConfig } from "./AgentConfig.ts"
import * as ConfigFile from "./ConfigFile.ts"
import * as HostPath from "./HostPath.ts"
import * as ConfigDecode from "./internal/configFile/decode.ts"
import * as Issues from "./internal/configFile/issues.ts"
import * as Lexical from "./internal/hostPath/lexical.ts"
import { rootLabel } from "./internal/hostPath/root.ts"
import { rootFrom } from "./internal/hostPath/rootFrom.ts"
import { NodeStart } from "./NodeStart.ts"

/**
 * A slot name: where one generation of the node lives (`a`, `b`, `blue`).
 * Lowercase letters, digits and inner `-`, at most 63 characters, so a slot
 * is always a safe single path component and a safe unit-name fragment.
 *
 * @category models
 * @since 0.1.0
 */
export const Slot = Schema.String.check(
  Schema.makeFilter(
    (s: string) =>
      s.length === 0
        ? "is empty"
        : s.length > 63
          ? `is ${s.length} characters long, more than 63`
          : /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s)
            ? undefined
            : "may only contain lowercase letters, digits and inner '-'",
    { title: "Slot" }
  )
).pipe(Schema.brand("Slot"))

/**
 * A decoded slot name.
 *
 * @category models
 * @since 0.1.0
 */
export type Slot = typeof Slot.Type

/**
 * A SHA-256 digest in lowercase hex.
 */
const Sha256 = Schema.String.check(
  Schema.makeFilter((s: string) => (/^[0-9a-f]{64}$/.test(s) ? undefined : "is not a lowercase hex SHA-256 digest"), {
    title: "Sha256"
  })
)

/**
 * Where an artifact is downloaded from: an http(s) URL and the digest the download must have.
 */
const ArtifactSource = Schema.Struct({
  url: Schema.String.check(
    Schema.makeFilter((s: string) => (/^https?:\/\/[^\s/?#]+(\/\S*)?$/.test(s) ? undefined : "is not an http(s) URL"), {
      title: "Url"
    })
  ),
  sha256: Sha256
})

/**
 * Where an artifact is downloaded from.
 */
type ArtifactSource = typeof ArtifactSource.Type

/**
 * An artifact name (`kubelet`, `containerd`, `cni-plugins`).
 */
const ArtifactName = Schema.String.check(
  Schema.makeFilter((s: string) => (/^[a-z0-9][-a-z0-9._]*$/.test(s) ? undefined : "is not an artifact name"), {
    title: "ArtifactName"
  })
)

/**
 * The Kubernetes version a goal state runs: `1.31.2` or `v1.31.2`, with an optional pre-release.
 */
const KubernetesVersion = Schema.String.check(
  Schema.makeFilter(
    (s: string) => (/^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(s) ? undefined : "is not a Kubernetes version"),
    { title: "KubernetesVersion" }
  )
)

/**
 * The goal state of one slot. `slot` repeats the slot it was resolved for,
 * so a file copied to the wrong place is caught rather than built.
 *
 * @category models
 * @since 0.1.0
 */
export const MachineGoalState = Schema.Struct({
  slot: Slot,
  kubernetesVersion: KubernetesVersion,
  artifacts: Schema.Record(ArtifactName, ArtifactSource).pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  nodeStart: NodeStart
})

/**
 * The goal state of one slot.
 *
 * @category models
 * @since 0.1.0
 */
export type MachineGoalState = typeof MachineGoalState.Type

// Overrides of where artifacts are downloaded from, by artifact name (`SourceOptions["downloads"]`).
const DownloadOverrides = Schema.Struct({
  artifacts: Schema.Record(ArtifactName, ArtifactSource).pipe(Schema.withDecodingDefaultKey(Effect.succeed({})))
})

type DownloadOverrides = typeof DownloadOverrides.Type

/**
 * Decodes download overrides from an already parsed value; `file` is named in errors.
 *
 * @example
 * ```ts
 * import { type AgentConfig, GoalState } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The kubelet from the cluster's own mirror: the URL and its digest replace the goal state's together.
 * const goalStateOfA = (config: AgentConfig.AgentConfig) =>
 *   Effect.gen(function* () {
 *     const downloads = yield* GoalState.decodeDownloadOverrides(
 *       {
 *         artifacts: {
 *           kubelet: {
 *             url: "https://mirror.example.internal/kubernetes/v1.31.2/kubelet",
 *             sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
 *           }
 *         }
 *       },
 *       "/etc/hostnode/downloads.json"
 *     )
 *     return yield* GoalState.makeSource({ config, downloads }).for("a")
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decodeDownloadOverrides = Effect.fn("GoalState.decodeDownloadOverrides")(function* (
  input: unknown,
  file = ""
) {
  return yield* ConfigDecode.decodeUnknown(DownloadOverrides, "DownloadOverrides", file)(input)
})

/**
 * Decodes a machine goal state from an already parsed value; `file` is named in errors.
 *
 * @example
 * ```ts
 * import { type AgentConfig, GoalState } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // Bootstrap got the goal state from the provisioning service: decoded once, then given to the source,
 * // which checks that it is for the slot asked.
 * const fromProvisioning = (config: AgentConfig.AgentConfig, body: unknown) =>
 *   Effect.gen(function* () {
 *     const goalState = yield* GoalState.decodeMachineGoalState(body, "provisioning response")
 *     return yield* GoalState.makeSource({ config, goalState }).for("a")
 *   })
 * ```
 *
 * @category operations
 * @since 0.1.0
 */
export const decodeMachineGoalState = Effect.fn("GoalState.decodeMachineGoalState")(function* (
  input: unknown,
  file = ""
) {
  return yield* ConfigDecode.decodeUnknown(MachineGoalState, "MachineGoalState", file)(input)
})

/**
 * The goal state with `overrides` applied. Overrides for artifacts the goal state does not have are ignored.
 */
const applyDownloads = (goalState: MachineGoalState, overrides: DownloadOverrides): MachineGoalState => {
  const artifacts: Record<string, ArtifactSource> = { ...goalState.artifacts }
  for (const [name, source] of Object.entries(overrides.artifacts)) {
    if (Object.hasOwn(artifacts, name)) artifacts[name] = source
  }
  return { ...goalState, artifacts }
}

/**
 * The overridden artifacts the goal state does not have, which {@link applyDownloads} ignores.
 */
const unusedOverrides = (goalState: MachineGoalState, overrides: DownloadOverrides): ReadonlyArray<string> =>
  Object.keys(overrides.artifacts).filter((name) => !Object.hasOwn(goalState.artifacts, name))

/**
 * Why a goal state was refused, told by its `_tag`; `issues` says what is wrong:
 * - `InvalidSlot`: the slot name is not a slot (see {@link Slot}); no file was read;
 * - `SlotMismatch`: the goal state is for another slot (its `slot` field names
 *   another one): a file copied to the wrong place (`file`), or a given goal
 *   state for another slot (`file` absent).
 *
 * @category errors
 * @since 0.4.0
 */
export class Failure extends Schema.Error<Failure>("@hostnode/core/GoalState/Failure")({
  _tag: Schema.Literals(["InvalidSlot", "SlotMismatch"]),
  file: Schema.optionalKey(Schema.String),
  issues: Schema.Array(Issues.FieldIssue)
}) {
  override get message(): string {
    return Issues.formatIssues(this.issues)
  }
}

/**
 * Why resolving a goal state failed: the file is missing (`NotFound`) or
 * unreadable (`Unreadable`), not JSON (`InvalidJson`) or with wrong fields
 * (`InvalidValue`) — those four are `ConfigFile`'s reasons —, or a
 * {@link Failure} (`InvalidSlot`, `SlotMismatch`).
 */
const GoalStateErrorReason = Schema.Union([
  ConfigFile.Unavailable,
  ConfigFile.InvalidJson,
  ConfigFile.InvalidValue,
  Failure
])

type GoalStateErrorReason = typeof GoalStateErrorReason.Type

/**
 * The goal state of `slot` could not be resolved; `reason` says why and
 * carries the file and fields involved. Every way resolving a goal state
 * fails.
 *
 * @category errors
 * @since 0.3.0
 */
export class GoalStateError extends Schema.TaggedError<GoalStateError>()("GoalStateError", {
  reason: GoalStateErrorReason,
  slot: Schema.String
}) {
  override get message(): string {
    const slot = JSON.stringify(this.slot)
    switch (this.reason._tag) {
      case "NotFound":
        return `no goal state for slot ${slot}: ${this.reason.message}`
      case "Unreadable":
        return `cannot read the goal state for slot ${slot} from ${this.reason.message}`
      default: {
        const file = "file" in this.reason ? this.reason.file : undefined
        const where = file === undefined ? "" : ` in ${file}`
        return `invalid goal state for slot ${slot}${where} (${this.reason._tag}): ${this.reason.message}`
      }
    }
  }
}

const goalStateError = (slot: string, reason: GoalStateErrorReason): GoalStateError =>
  new GoalStateError({ slot, reason })

// A slot name decoded, or the GoalStateError (reason `InvalidSlot`) that says what was wrong.
const decodeSlot = Effect.fn("GoalState.decodeSlot")(function* (slot: string) {
  return yield* Schema.decodeUnknownEffect(Slot)(slot).pipe(
    Effect.mapError((e) =>
      goalStateError(
        slot,
        new Failure({
          _tag: "InvalidSlot",
          issues: Issues.issuesOf(e).map((i) => ({ field: "", message: `slot ${i.message}` }))
        })
      )
    )
  )
})

/**
 * The directory below the agent configuration directory that holds one goal state file per slot.
 */
const GoalStatesDirName = "goalstates"

/**
 * The host path of the slot's goal state file: `<configDir>/goalstates/<slot>.json`.
 */
const goalStatePath = (config: AgentConfig, slot: Slot): string =>
  `${Lexical.clean(config.configDir)}/${GoalStatesDirName}/${slot}.json`

const checkSlot = (goalState: MachineGoalState, slot: Slot, file?: string): Effect.Effect<void, GoalStateError> =>
  goalState.slot === slot
    ? Effect.void
    : Effect.fail(
        goalStateError(
          slot,
          new Failure({
            _tag: "SlotMismatch",
            ...(file === undefined ? {} : { file }),
            issues: [{ field: "slot", message: `is ${JSON.stringify(goalState.slot)}, not ${JSON.stringify(slot)}` }]
          })
        )
      )

/**
 * The default resolver: reads `<configDir>/goalstates/<slot>.json` below the
 * host root (symlinks resolved as though the root were `/`, so the file can
 * never be read from outside it), decodes it strictly, checks it is for this
 * slot and applies the download overrides.
 */
const resolveMachine = Effect.fn("GoalState.resolveMachine")(
  function* (slot: string, options: SourceOptions) {
    const valid = yield* decodeSlot(slot)
    const hostRoot = rootLabel(options.hostRoot)
    const hostFile = goalStatePath(options.config, valid)
    // A string given without types is decoded as a root, never joined raw.
    const file = yield* rootFrom(options.hostRoot).pipe(
      Effect.flatMap((root) => HostPath.resolve(root, hostFile)),
      Effect.mapError((e) =>
        goalStateError(
          slot,
          new ConfigFile.Unavailable(
            // A host root that is not there: the file is not there either.
            e.reason._tag === "NotFound"
              ? { _tag: "NotFound", file: Lexical.join(hostRoot, hostFile) }
              : { _tag: "Unreadable", file: Lexical.join(hostRoot, hostFile), detail: e.message }
          )
        )
      )
    )
    // The file's reasons are the goal state's: NotFound, Unreadable, InvalidJson, InvalidValue.
    const goalState = yield* ConfigDecode.read(
      MachineGoalState,
      "MachineGoalState"
    )(file).pipe(Effect.mapError((e) => goalStateError(slot, e.reason)))
    yield* checkSlot(goalState, valid, file)
    if (options.downloads === undefined) return goalState
    const unused = unusedOverrides(goalState, options.downloads)
    if (unused.length > 0) {
      yield* Effect.logWarning("download overrides name artifacts the goal state does not have; ignored").pipe(
        Effect.annotateLogs({ artifacts: unused })
      )
    }
    return applyDownloads(goalState, options.downloads)
  },
  Effect.annotateLogs({ phase: "resolve-goal-state" })
)

/**
 * What a {@link GoalStateSource} is made from (the fields of the Go struct).
 *
 * @category models
 * @since 0.1.0
 */
export interface SourceOptions {
  /** The agent configuration; its `configDir` holds the goal state files. */
  readonly config: AgentConfig
  /** The host root the configuration directory is below, decoded by `HostPath.decodeRoot` (absent: the real host). */
  readonly hostRoot?: HostPath.HostRoot | undefined
  /**
   * Where artifacts are downloaded from instead, by artifact name (decoded
   * with {@link decodeDownloadOverrides}). An override replaces the URL and
   * the digest together: a different file can never be checked against the
   * old digest, nor left unchecked.
   */
  readonly downloads?: DownloadOverrides | undefined
  /**
   * Used instead of resolving one. Bootstrap passes the goal state it has
   * already resolved so GPU and device discovery happens once.
   */
  readonly goalState?: MachineGoalState | undefined
  /**
   * Overrides resolution: the goal state of a (decoded) slot. Tests and
   * composition roots override the default, which reads
   * `<configDir>/goalstates/<slot>.json` below `hostRoot`, with one.
   */
  readonly resolve?:
    | ((slot: Slot) => Effect.Effect<MachineGoalState, GoalStateError, FileSystem.FileSystem>)
    | undefined
}

/**
 * Resolves the goal state a node is built from.
 *
 * @category models
 * @since 0.1.0
 */
export interface GoalStateSource {
  /**
   * The goal state for `slot`: the given one, else the `resolve` override's,
   * else the default resolver's. Whichever it is, it must be for `slot`.
   */
  readonly for: (slot: string) => Effect.Effect<MachineGoalState, GoalStateError, FileSystem.FileSystem>
}

/**
 * A {@link GoalStateSource} from its options.
 *
 * @example
 * ```ts
 * import { AgentConfig, GoalState } from "@hostnode/core"
 * import { Effect } from "effect"
 *
 * // The goal state of slot "b", read from /etc/hostnode/goalstates/b.json on this host.
 * const goalStateOfB = Effect.gen(function* () {
 *   const config = yield* AgentConfig.read("/etc/hostnode/config.json")
 *   const goalState = yield* GoalState.makeSource({ config }).for("b")
 *   return goalState.kubernetesVersion
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeSource = (options: SourceOptions): GoalStateSource => ({
  for: Effect.fn("GoalState.GoalStateSource.for")(
    function* (slot: string) {
      const valid = yield* decodeSlot(slot)
      if (options.goalState !== undefined) {
        yield* checkSlot(options.goalState, valid)
        yield* Effect.logDebug("using the given goal state")
        return options.goalState
      }
      if (options.resolve !== undefined) {
        const resolved = yield* options.resolve(valid)
        yield* checkSlot(resolved, valid)
        return resolved
      }
      return yield* resolveMachine(valid, options)
    },
    (effect, slot) => Effect.annotateLogs(effect, { slot })
  )
})
