import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { FileName, MountInfo } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, Logger, Schema } from "effect"

const sample = [
  "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
  "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
  "40 22 0:40 / /var/lib/kubelet/pods/a\\040b/volumes/x\\011y\\012z\\134w rw shared:3 master:7 propagate_from:2 - tmpfs tmpfs rw,size=1024k",
  "41 40 0:41 /sub\\040dir /mnt/bind rw - ext4  rw",
  ""
].join("\n")

describe("MountInfo.parse", () => {
  it.effect("decodes fields, optional fields and octal escapes", () =>
    Effect.gen(function* () {
      const t = yield* MountInfo.parse(sample)
      assert.strictEqual(t.length, 4)
      assert.deepStrictEqual(t[1], {
        id: 36,
        parentId: 35,
        major: 98,
        minor: 0,
        root: "/mnt1",
        mountPoint: "/mnt2",
        mountOptions: "rw,noatime",
        optionalFields: ["master:1"],
        fsType: "ext3",
        source: "/dev/root",
        superOptions: "rw,errors=continue"
      })
      assert.strictEqual(t[2]?.mountPoint, "/var/lib/kubelet/pods/a b/volumes/x\ty\nz\\w")
      assert.deepStrictEqual(t[2]?.optionalFields, ["shared:3", "master:7", "propagate_from:2"])
      assert.strictEqual(t[3]?.root, "/sub dir")
      assert.strictEqual(t[3]?.source, "")
      assert.deepStrictEqual(t[3]?.optionalFields, [])
    })
  )

  it.effect("render writes the kernel's format back", () =>
    Effect.gen(function* () {
      const t = yield* MountInfo.parse(sample)
      assert.strictEqual(MountInfo.render(t), sample)
    })
  )

  const malformed: ReadonlyArray<readonly [string, string]> = [
    ["22 1 0:21 / /proc rw shared:12 proc proc rw", "no '-' separator"],
    ["22 1 0:21 / /proc rw - proc proc", "has 2 fields after"],
    ["22 1 0:21 / /proc", "at least 10"],
    ["22 1 0:21 / /proc rw x - proc proc rw extra", "expected 3"],
    ["x 1 0:21 / /proc rw - proc proc rw", "mount id"],
    ["22 -1 0:21 / /proc rw - proc proc rw", "parent id"],
    ["22 1 021 / /proc rw - proc proc rw", "major:minor"],
    ["22 1 0:21 / /pr\\oc rw - proc proc rw", "invalid escape"],
    ["22 1 0:21 / /proc\\04 rw - proc proc rw", "invalid escape"],
    ["22 1 0:21 / /proc rw  - proc proc rw", "empty optional field"],
    ["22 1 0:21 /  rw - proc proc rw", "mount point is empty"]
  ]
  for (const [line, why] of malformed) {
    it.effect(`a malformed line is a MountInfoError with its number: ${why}`, () =>
      Effect.gen(function* () {
        const text = `22 1 0:21 / /proc rw - proc proc rw\n${line}\n23 1 0:22 / /sys rw - sysfs sysfs rw\n`
        const e = yield* Effect.flip(MountInfo.parse(text, "/proc/7/mountinfo"))
        assert.strictEqual(e._tag, "MountInfoError")
        assert.strictEqual(e.reason, "Malformed")
        assert.strictEqual(e.line, 2)
        assert.strictEqual(e.path, "/proc/7/mountinfo")
        assert.include(e.detail, why)
        assert.include(e.message, "line 2")
      })
    )
  }

  it.effect("parses this process's real table", () =>
    Effect.gen(function* () {
      const t = yield* MountInfo.read().pipe(Effect.provide(NodeServices.layer))
      assert.isTrue(t.some((e) => e.mountPoint === "/"))
      assert.isTrue(t.every((e) => e.mountPoint.startsWith("/")))
    })
  )
})

// Strings built from an alphabet rich in what the kernel escapes, and in what
// looks like an escape without being one, so the round trip meets every case.
const Chars = Schema.Array(Schema.Literals(["a", "/", " ", "\t", "\n", "\\", "0", "4", "1", "-", "é", "\u0001", ":"]))
const NonEmptyChars = Chars.check(Schema.isMinLength(1))
const EntryInput = Schema.Struct({
  id: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })),
  parentId: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_000_000 })),
  major: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 4095 })),
  minor: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1_048_575 })),
  root: NonEmptyChars,
  mountPoint: NonEmptyChars,
  mountOptions: Schema.Literals(["rw", "ro,nosuid", "rw,relatime,size=10k"]),
  optionalFields: Schema.Array(Schema.Literals(["shared:1", "master:3", "propagate_from:2", "unbindable", "-x"])),
  fsType: NonEmptyChars,
  source: Chars,
  superOptions: Chars
})

describe("MountInfo round trip", () => {
  it.effect.prop(
    "parse(render(t)) equals t",
    { table: Schema.Array(EntryInput).check(Schema.isMaxLength(12)) },
    ({ table }) =>
      Effect.gen(function* () {
        const entries: MountInfo.MountTable = table.map((e) => ({
          ...e,
          root: e.root.join(""),
          mountPoint: e.mountPoint.join(""),
          fsType: e.fsType.join(""),
          source: e.source.join(""),
          superOptions: e.superOptions.join("")
        }))
        const parsed = yield* MountInfo.parse(MountInfo.render(entries))
        assert.deepStrictEqual(parsed, entries)
      }),
    { arbitrary: { runs: 500 } }
  )
})

// A table that changes under the reader: each read returns the next text.
const changing = (texts: ReadonlyArray<string>) => {
  let reads = 0
  const layer = FileSystem.layerNoop({
    readFile: () => Effect.sync(() => new TextEncoder().encode(texts[Math.min(reads++, texts.length - 1)] as string))
  })
  return { layer, reads: () => reads }
}

const line = (id: number) => `${id} 1 0:${id} / /m${id} rw - tmpfs tmpfs rw\n`

describe("MountInfo.read", () => {
  it.effect("a mount point that is not UTF-8 is read losslessly: its bytes come back from FileName.encode", () =>
    Effect.gen(function* () {
      const bytes = new Uint8Array([
        ...new TextEncoder().encode("1 0 0:1 / /caf"),
        0xe9,
        ...new TextEncoder().encode(" rw - tmpfs t rw\n")
      ])
      const t = yield* MountInfo.read("/x").pipe(
        Effect.provide(FileSystem.layerNoop({ readFile: () => Effect.succeed(bytes) }))
      )
      assert.strictEqual(t[0]?.mountPoint, "/caf\udce9")
      assert.deepStrictEqual([...FileName.encode(t[0]?.mountPoint ?? "")], [...new TextEncoder().encode("/caf"), 0xe9])
    })
  )

  it.effect("reads until two consecutive reads agree", () =>
    Effect.gen(function* () {
      const fs = changing([line(1), line(2), line(2), line(3)])
      const t = yield* MountInfo.read("/proc/self/mountinfo").pipe(Effect.provide(fs.layer))
      assert.deepStrictEqual(
        t.map((e) => e.id),
        [2]
      )
      assert.strictEqual(fs.reads(), 3)
    })
  )

  it.effect("after the last attempt it uses the last read and logs a warning", () =>
    Effect.gen(function* () {
      const fs = changing([line(1), line(2), line(3), line(4)])
      const logged: Array<unknown> = []
      const t = yield* MountInfo.read("/proc/self/mountinfo", { attempts: 3 }).pipe(
        Effect.provide([fs.layer, Logger.layer([Logger.map(Logger.formatStructured, (e) => void logged.push(e))])])
      )
      assert.deepStrictEqual(
        t.map((e) => e.id),
        [3]
      )
      assert.strictEqual(fs.reads(), 3)
      assert.include(JSON.stringify(logged), "mount table changed on every read")
    })
  )

  it.effect("an unreadable table is a MountInfoError naming the path", () =>
    Effect.gen(function* () {
      const e = yield* Effect.flip(MountInfo.read("/nope").pipe(Effect.provide(FileSystem.layerNoop({}))))
      assert.strictEqual(e.reason, "Unreadable")
      assert.strictEqual(e.path, "/nope")
    })
  )
})

describe("MountInfo.read with an empty path", () => {
  it.effect("reads the process's own table, as the Go contract's empty mountInfo means", () =>
    Effect.gen(function* () {
      const host = yield* MemoryHost.MemoryHost
      yield* Effect.orDie(host.tmpfs("/k"))
      const own = yield* MountInfo.read()
      const empty = yield* MountInfo.read("")
      assert.deepStrictEqual(empty, own)
      assert.isTrue(empty.some((e) => e.mountPoint === "/k"))
    }).pipe(Effect.provide(MemoryHost.layer({ files: { "/k/.keep": "" } })))
  )
})
