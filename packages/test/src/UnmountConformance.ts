/**
 * The conformance suite of the unmount operations (`unmountBelow`,
 * `unmountBelowByPrefix`, `unmountStrictlyBelow`) on a layout with every
 * ugly case a kubelet directory meets: the directory bind-mounted onto itself,
 * tmpfs secrets and projected volumes, a CSI bind mount whose source lies
 * outside, one path mounted five times over, nesting four deep, names with a
 * space, a tab, a newline and a backslash, and a sibling directory whose name
 * only extends the prefix. Runs against any host that provides a `Mounter`
 * and a `MountFixture` in the same mount namespace.
 *
 * @since 0.1.0
 */
import { assert, layer } from "@effect/vitest"
import { type Directory, type Mounter, type MountInfo, Unmount } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { Effect, FileSystem, type Layer } from "effect"
import * as FaultyMounter from "./FaultyMounter.ts"
import { rootAt } from "./internal/rootAt.ts"
import { MountFixture } from "./MountFixture.ts"

/**
 * The paths of the layout built by {@link buildLayout}.
 *
 * @since 0.1.0
 */
interface Layout {
  readonly sandbox: string
  readonly kubelet: string
  readonly csiData: string
  readonly csiMount: string
  readonly stacked: string
  readonly oddNames: ReadonlyArray<string>
  readonly sibling: string
  readonly outside: string
}

/**
 * Builds the layout below a fresh sandbox (see the module comment).
 *
 * @since 0.1.0
 */
const buildLayout = Effect.gen(function* () {
  const fx = yield* MountFixture
  const fs = yield* FileSystem.FileSystem
  const sandbox = yield* fx.sandbox
  const mkdir = (p: string) => fs.makeDirectory(p, { recursive: true }).pipe(Effect.orDie)
  const kubelet = `${sandbox}/kubelet`
  const csiData = `${sandbox}/csi-data`
  yield* mkdir(kubelet)
  yield* fx.bind(kubelet, kubelet)
  yield* mkdir(`${kubelet}/pods/a/volumes/secret`)
  yield* fx.tmpfs(`${kubelet}/pods/a/volumes/secret`)
  yield* fs.writeFileString(`${kubelet}/pods/a/volumes/secret/token`, "s3cr3t").pipe(Effect.orDie)
  yield* mkdir(`${kubelet}/pods/a/volumes/projected`)
  yield* fx.tmpfs(`${kubelet}/pods/a/volumes/projected`)
  yield* mkdir(csiData)
  yield* fs.writeFileString(`${csiData}/db`, "precious").pipe(Effect.orDie)
  const csiMount = `${kubelet}/pods/b/volumes/csi/mount`
  yield* mkdir(csiMount)
  yield* fx.bind(csiData, csiMount)
  const stacked = `${kubelet}/pods/c/volumes/stacked`
  yield* mkdir(stacked)
  for (let i = 0; i < 5; i++) yield* fx.tmpfs(stacked)
  let deep = `${kubelet}/pods/d`
  for (let i = 1; i <= 4; i++) {
    deep = `${deep}/n${i}`
    yield* mkdir(deep)
    yield* fx.tmpfs(deep)
  }
  const oddNames = ["sp ace", "t\tab", "new\nline", "back\\slash"].map((n) => `${kubelet}/pods/e/${n}`)
  for (const p of oddNames) {
    yield* mkdir(p)
    yield* fx.tmpfs(p)
  }
  const sibling = `${sandbox}/kubelet2/vol`
  yield* mkdir(sibling)
  yield* fx.tmpfs(sibling)
  const outside = `${sandbox}/other`
  yield* mkdir(outside)
  yield* fx.tmpfs(outside)
  return { sandbox, kubelet, csiData, csiMount, stacked, oddNames, sibling, outside } satisfies Layout
})

const under = (table: ReadonlyArray<MountInfo.MountEntry>, prefix: string) =>
  table.filter((e) => Lexical.covers(prefix, Lexical.clean(e.mountPoint)))

const ids = (table: ReadonlyArray<MountInfo.MountEntry>) => table.map((e) => e.id).sort((a, b) => a - b)

/**
 * Registers the suite under `name`. `hostLayer` provides the `Mounter` under
 * test, a `MountFixture` in the same mount namespace, and the `FileSystem`.
 *
 * @category conformance
 * @since 0.1.0
 */
export const suite = (
  name: string,
  hostLayer: Layer.Layer<Mounter.Mounter | MountFixture | FileSystem.FileSystem | Directory.Directories>
): void =>
  layer(hostLayer)(`unmount operations: ${name}`, (it) => {
    it.effect("the layout is what the tests assume", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const l = yield* buildLayout
        const t = yield* fx.table
        // self-bind 1 + secret, projected 2 + csi 1 + stacked 5 + deep 4 + odd names 4
        assert.strictEqual(under(t, l.kubelet).length, 17)
        for (const p of l.oddNames) assert.strictEqual(under(t, p).length, 1, JSON.stringify(p))
      })
    )

    it.effect("unmountBelow leaves nothing at or below the prefix and touches nothing else", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildLayout
        const before = yield* fx.table
        const others = before.filter((e) => !Lexical.covers(l.kubelet, Lexical.clean(e.mountPoint)))
        yield* Unmount.unmountBelow([l.kubelet], { mountInfo: fx.mountInfo })
        const after = yield* fx.table
        assert.deepStrictEqual(under(after, l.kubelet), [])
        assert.deepStrictEqual(ids(after), ids(others))
        assert.strictEqual(yield* fs.readFileString(`${l.csiData}/db`), "precious")
      })
    )

    it.effect("prefixes match on path boundaries and trailing slashes are normalised", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const l = yield* buildLayout
        // `${sandbox}/kubelet` must not cover `${sandbox}/kubelet2/vol`
        yield* Unmount.unmountBelow([`${l.kubelet}//`], { mountInfo: fx.mountInfo })
        const after = yield* fx.table
        assert.deepStrictEqual(under(after, l.kubelet), [])
        assert.strictEqual(under(after, l.sibling).length, 1)
      })
    )

    it.effect("unmountStrictlyBelow keeps the prefix's own mount and removes everything below it", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const l = yield* buildLayout
        const before = yield* fx.table
        const own = before.filter((e) => Lexical.clean(e.mountPoint) === l.kubelet)
        assert.strictEqual(own.length, 1)
        yield* Unmount.unmountStrictlyBelow([`${l.kubelet}/`], { mountInfo: fx.mountInfo })
        const after = yield* fx.table
        assert.deepStrictEqual(ids(under(after, l.kubelet)), ids(own))
        assert.strictEqual(under(after, l.sibling).length, 1)
        assert.strictEqual(under(after, l.outside).length, 1)
      })
    )

    it.effect("unmountBelowByPrefix reports exactly the prefixes whose mounts could not be unmounted", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildLayout
        const pods = ["a", "b", "c", "d"].map((p) => `${l.kubelet}/pods/${p}`)
        const result = yield* Unmount.unmountBelowByPrefix(pods, { mountInfo: fx.mountInfo }).pipe(
          Effect.provide(FaultyMounter.layer((t) => t === l.csiMount))
        )
        assert.deepStrictEqual([...result.failures.keys()], [`${l.kubelet}/pods/b`])
        const error = result.failures.get(`${l.kubelet}/pods/b`)
        assert.strictEqual(error?._tag, "UnmountError")
        assert.deepStrictEqual(
          (error?.reason._tag === "MountsRemain" ? error.reason.remaining : []).map((m) => [m.mountPoint, m.errno]),
          [[l.csiMount, "EBUSY"]]
        )
        const after = yield* fx.table
        for (const p of pods) {
          assert.strictEqual(under(after, p).length, p.endsWith("/b") ? 1 : 0, p)
        }
        assert.strictEqual(yield* fs.readFileString(`${l.csiMount}/db`), "precious")
      })
    )

    it.effect("unmountBelow fails with the mounts that remain, naming mount point, fs type and errno", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const l = yield* buildLayout
        const prefix = `${l.kubelet}/pods/b`
        const error = yield* Effect.flip(
          Unmount.unmountBelow([prefix], { mountInfo: fx.mountInfo }).pipe(
            Effect.provide(FaultyMounter.layer((t) => t === l.csiMount, "EPERM"))
          )
        )
        assert.strictEqual(error._tag, "UnmountError")
        if (error._tag !== "UnmountError") return
        assert.deepStrictEqual(error.prefixes, [prefix])
        assert.deepStrictEqual(
          (error.reason._tag === "MountsRemain" ? error.reason.remaining : []).map((m) => [m.mountPoint, m.errno]),
          [[l.csiMount, "EPERM"]]
        )
        assert.include(error.message, l.csiMount)
      })
    )

    it.effect("a refused child goes with its parent's lazy unmount when the parent is in scope too", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildLayout
        // The self-bind at the kubelet dir is the csi bind's parent mount: its
        // MNT_DETACH takes the whole subtree, the refused child included.
        yield* Unmount.unmountBelow([l.kubelet], { mountInfo: fx.mountInfo }).pipe(
          Effect.provide(FaultyMounter.layer((t) => t === l.csiMount))
        )
        assert.deepStrictEqual(under(yield* fx.table, l.kubelet), [])
        assert.strictEqual(yield* fs.readFileString(`${l.csiData}/db`), "precious")
      })
    )

    it.effect("a stack whose top has a lower mount id than the mounts below it is peeled from its top", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const unmount = fx.unmount
        if (unmount === undefined) return yield* Effect.logWarning("skipped: the MountFixture cannot unmount")
        const sandbox = yield* fx.sandbox
        const kubelet = `${sandbox}/kubelet`
        const stack = `${kubelet}/pods/s/volumes/v`
        const filler = `${sandbox}/filler`
        yield* fs.makeDirectory(stack, { recursive: true }).pipe(Effect.orDie)
        yield* fs.makeDirectory(filler).pipe(Effect.orDie)
        const stacked = Effect.map(fx.table, (t) => t.filter((e) => Lexical.clean(e.mountPoint) === stack))
        // The kernel gives a new mount the lowest free id: the filler's, freed, goes to the top of the
        // stack. On a real host another process may take it first; then the stack is cleared and made again.
        let lower = false
        for (let attempt = 0; attempt < 5 && !lower; attempt++) {
          yield* fx.tmpfs(filler)
          yield* fx.tmpfs(stack)
          yield* fx.tmpfs(stack)
          yield* unmount(filler)
          yield* fx.tmpfs(stack)
          const s = yield* stacked
          const top = s.find((e) => !s.some((x) => x.parentId === e.id))
          const below = s.find((e) => e.id === top?.parentId)
          lower = top !== undefined && below !== undefined && top.id < below.id
          if (!lower) for (let i = 0; i < s.length; i++) yield* unmount(stack)
        }
        assert.isTrue(lower, "the top of the stack has a lower id than the mount below it")
        assert.strictEqual((yield* stacked).length, 3)
        const report = yield* Unmount.unmountBelow([kubelet], { mountInfo: fx.mountInfo })
        assert.deepStrictEqual(yield* stacked, [])
        assert.strictEqual(report.unmounted.length, 3)
      })
    )

    it.effect("mounts the kernel detaches by propagation are reported; peersOutsideRoot: refuse refuses first", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const sandbox = yield* fx.sandbox
        const mkdir = (p: string) => fs.makeDirectory(p, { recursive: true }).pipe(Effect.orDie)
        // The host root's kubelet directory is a bind of a shared disk mounted outside the root.
        const root = `${sandbox}/root`
        const disk = `${sandbox}/disk`
        yield* mkdir(`${disk}`)
        yield* fx.tmpfs(disk)
        yield* fx.propagation(disk, "shared")
        yield* mkdir(`${disk}/kubelet/pods/p/volumes/secret`)
        yield* mkdir(`${disk}/kubelet/pods/p/volumes/cfg`)
        yield* fs.writeFileString(`${disk}/kubelet/pods/p/volumes/cfg/app.conf`, "k: v").pipe(Effect.orDie)
        yield* fs.writeFileString(`${disk}/kubelet/pods/p/sub`, "").pipe(Effect.orDie)
        yield* mkdir(`${root}/var/lib/kubelet`)
        yield* fx.bind(`${disk}/kubelet`, `${root}/var/lib/kubelet`)
        const pod = `${root}/var/lib/kubelet/pods/p`
        yield* fx.tmpfs(`${pod}/volumes/secret`)
        yield* fx.bind(`${pod}/volumes/cfg/app.conf`, `${pod}/sub`)
        const before = yield* fx.table
        const options = { hostRoot: yield* rootAt(root), mountInfo: fx.mountInfo }
        const copies = [`${disk}/kubelet/pods/p/sub`, `${disk}/kubelet/pods/p/volumes/secret`]
        // Refused, before anything is unmounted, naming each copy outside the root and what it is a copy of.
        const refused = yield* Effect.flip(
          Unmount.unmountBelow(["/var/lib/kubelet/pods"], { ...options, peersOutsideRoot: "refuse" })
        )
        assert.strictEqual(refused._tag === "UnmountError" && refused.reason._tag, "PeersOutsideRoot")
        if (refused._tag !== "UnmountError" || refused.reason._tag !== "PeersOutsideRoot") return
        assert.deepStrictEqual(refused.reason.mounts.map((m) => m.mountPoint).sort(), copies)
        const of = (mp: string) => before.find((e) => e.mountPoint === mp)?.id
        for (const m of refused.reason.mounts) {
          assert.isTrue(m.outsideRoot)
          assert.strictEqual(m.cognateOf, of(m.mountPoint.replace(`${disk}/kubelet`, `${root}/var/lib/kubelet`)))
        }
        assert.deepStrictEqual(ids(yield* fx.table), ids(before))
        // By default detached, and reported: the table before and after says which went.
        const report = yield* Unmount.unmountBelow(["/var/lib/kubelet/pods"], options)
        assert.deepStrictEqual(report.unmounted.map((m) => m.mountPoint).sort(), [
          `${pod}/sub`,
          `${pod}/volumes/secret`
        ])
        assert.deepStrictEqual(report.propagated.map((m) => m.mountPoint).sort(), copies)
        assert.isTrue(report.propagated.every((m) => m.outsideRoot))
        assert.deepStrictEqual(under(yield* fx.table, `${disk}/kubelet`), [])
        assert.deepStrictEqual(report.missing, [])
      })
    )

    it.effect("a prefix that names nothing is said in the report's missing, as given", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const l = yield* buildLayout
        const report = yield* Unmount.unmountBelowByPrefix([l.kubelet, `${l.kubelet}t`, `${l.kubelet}/pods/zz/`], {
          mountInfo: fx.mountInfo
        })
        assert.deepStrictEqual(report.missing, [`${l.kubelet}t`, `${l.kubelet}/pods/zz/`])
        assert.deepStrictEqual(report.propagated, [])
      })
    )

    it.effect("a malformed table fails the whole call and nothing is unmounted", () =>
      Effect.gen(function* () {
        const fx = yield* MountFixture
        const fs = yield* FileSystem.FileSystem
        const l = yield* buildLayout
        const before = yield* fx.table
        const bad = `${l.sandbox}/bad-mountinfo`
        yield* fs.writeFileString(bad, "22 1 0:21 / /proc rw - proc proc rw\nthis is not a mount\n")
        const e = yield* Effect.flip(Unmount.unmountBelowByPrefix([l.kubelet], { mountInfo: bad }))
        assert.strictEqual(e._tag, "MountInfoError")
        if (e._tag !== "MountInfoError") return
        assert.strictEqual(e.reason._tag === "Malformed" && e.reason.line, 2)
        const missing = yield* Effect.flip(Unmount.unmountBelow([l.kubelet], { mountInfo: `${l.sandbox}/nope` }))
        assert.strictEqual(missing._tag, "MountInfoError")
        assert.deepStrictEqual(ids(yield* fx.table), ids(before))
      })
    )
  })
