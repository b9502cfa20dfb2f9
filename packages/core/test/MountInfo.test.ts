import { inspect } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { FileName, MountInfo } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem, Logger, Schema } from "effect"
import * as Escape from "#internal/mountinfo/escape.ts"
import { propagatedUnmounts } from "#internal/mountinfo/propagation.ts"

/** The reason of a malformed table's error, with its line, field and text. */
const malformedReason = (e: MountInfo.MountInfoError): MountInfo.Malformed => {
  if (e.reason._tag !== "Malformed") throw new Error(`expected a malformed table: ${e.message}`)
  return e.reason
}

const sample = [
  "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw",
  "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
  "40 22 0:40 / /var/lib/kubelet/pods/a\\040b/volumes/x\\011y\\012z\\134w rw shared:3 master:7 propagate_from:2 - tmpfs tmpfs rw,size=1024k",
  "41 40 0:41 /sub\\040dir /mnt/bind rw - ext4  rw",
  ""
].join("\n")

describe("Layers.parseMountInfo", () => {
  it.effect("decodes fields, optional fields and octal escapes", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(sample)
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
      const t = yield* Layers.parseMountInfo(sample)
      assert.strictEqual(Layers.renderMountInfo(t), sample)
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
        const e = yield* Effect.flip(Layers.parseMountInfo(text, "/proc/7/mountinfo"))
        assert.strictEqual(e._tag, "MountInfoError")
        assert.strictEqual(e.reason._tag, "Malformed")
        const m = malformedReason(e)
        assert.strictEqual(m.line, 2)
        assert.strictEqual(e.path, "/proc/7/mountinfo")
        assert.include(m.detail, why)
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
const Chars = Schema.Array(
  Schema.Literals(["a", "/", " ", "\t", "\n", "\r", "\\", "0", "4", "1", "-", "é", "\udce9", "\u0001", ":"])
)
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
        const entries: ReadonlyArray<MountInfo.MountEntry> = table.map((e) => ({
          ...e,
          root: e.root.join(""),
          mountPoint: e.mountPoint.join(""),
          fsType: e.fsType.join(""),
          source: e.source.join(""),
          superOptions: e.superOptions.join("")
        }))
        const parsed = yield* Layers.parseMountInfo(Layers.renderMountInfo(entries))
        assert.deepStrictEqual(parsed, entries)
      }),
    { arbitrary: { runs: 500 } }
  )
  // Every field of any entry the MountEntry Schema accepts: options and
  // optional fields with spaces, a "-" optional field, a CR at the end of the
  // super options, ids up to the largest safe integer.
  const Id = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }))
  const AnyEntry = Schema.Struct({
    id: Id,
    parentId: Id,
    major: Id,
    minor: Id,
    root: NonEmptyChars,
    mountPoint: NonEmptyChars,
    mountOptions: NonEmptyChars,
    optionalFields: Schema.Array(NonEmptyChars).check(Schema.isMaxLength(4)),
    fsType: NonEmptyChars,
    source: Chars,
    superOptions: Chars
  })
  it.effect.prop(
    "parse(render(t)) equals t for every entry the MountEntry Schema accepts",
    { table: Schema.Array(AnyEntry).check(Schema.isMaxLength(8)) },
    ({ table }) =>
      Effect.gen(function* () {
        const entries: ReadonlyArray<MountInfo.MountEntry> = table.map((e) => ({
          ...e,
          root: e.root.join(""),
          mountPoint: e.mountPoint.join(""),
          mountOptions: e.mountOptions.join(""),
          optionalFields: e.optionalFields.map((o) => o.join("")),
          fsType: e.fsType.join(""),
          source: e.source.join(""),
          superOptions: e.superOptions.join("")
        }))
        for (const e of entries) assert.isTrue(Schema.is(MountInfo.MountEntry)(e))
        const parsed = yield* Layers.parseMountInfo(Layers.renderMountInfo(entries))
        assert.deepStrictEqual(parsed, entries)
      }),
    { arbitrary: { runs: 500 } }
  )

  it.effect("render escapes what would otherwise break the line", () =>
    Effect.gen(function* () {
      const e: MountInfo.MountEntry = {
        id: 1,
        parentId: 1,
        major: 0,
        minor: 1,
        root: "/",
        mountPoint: "/m",
        mountOptions: "rw,x=a b",
        optionalFields: ["-", "a b", "shared:1"],
        fsType: "t",
        source: "s",
        superOptions: "o\r"
      }
      const text = Layers.renderMountInfo([e])
      assert.strictEqual(text, "1 1 0:1 / /m rw,x=a\\040b \\055 a\\040b shared:1 - t s o\\015\n")
      assert.deepStrictEqual(yield* Layers.parseMountInfo(text), [e])
    })
  )

  it("the MountEntry Schema is render's domain: what no line can hold is no entry", () => {
    const ok: MountInfo.MountEntry = {
      id: 1,
      parentId: 1,
      major: 0,
      minor: 1,
      root: "/",
      mountPoint: "/m",
      mountOptions: "rw",
      optionalFields: [],
      fsType: "t",
      source: "",
      superOptions: ""
    }
    const is = Schema.is(MountInfo.MountEntry)
    assert.isTrue(is(ok))
    assert.isTrue(is({ ...ok, id: Number.MAX_SAFE_INTEGER }))
    assert.isFalse(is({ ...ok, id: -1 }))
    assert.isFalse(is({ ...ok, major: 1.5 }))
    assert.isFalse(is({ ...ok, minor: 2 ** 53 }))
    assert.isFalse(is({ ...ok, root: "" }))
    assert.isFalse(is({ ...ok, mountPoint: "" }))
    assert.isFalse(is({ ...ok, mountOptions: "" }))
    assert.isFalse(is({ ...ok, optionalFields: [""] }))
    assert.isFalse(is({ ...ok, fsType: "" }))
  })
})

// A table that changes under the reader: each read returns the next text;
// `release`, when given, is what /proc/sys/kernel/osrelease says.
const changing = (texts: ReadonlyArray<string>, release?: string) => {
  let reads = 0
  const layer = FileSystem.layerNoop({
    readFile: () => Effect.sync(() => new TextEncoder().encode(texts[Math.min(reads++, texts.length - 1)] as string)),
    ...(release === undefined
      ? {}
      : {
          readFileString: (path: string) =>
            path === "/proc/sys/kernel/osrelease"
              ? Effect.succeed(`${release}\n`)
              : Effect.die(new Error(`unexpected readFileString ${path}`))
        })
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

  it.effect("reads once on a kernel whose reads are consistent (Linux 5.8 and later)", () =>
    Effect.gen(function* () {
      for (const release of ["5.8.0", "5.15.0-105-generic", "6.18.44-fc-v857", "10.0"]) {
        const fs = changing([line(1), line(2), line(2)], release)
        const t = yield* MountInfo.read("/proc/self/mountinfo").pipe(Effect.provide(fs.layer))
        assert.deepStrictEqual(
          t.map((e) => e.id),
          [1],
          release
        )
        assert.strictEqual(fs.reads(), 1, release)
      }
    })
  )

  it.effect("reads until two agree on an older kernel, or one that does not say what it is", () =>
    Effect.gen(function* () {
      for (const release of ["5.7.19", "4.18.0-553.el8_10.x86_64", "3.10.0", "garbage"]) {
        const fs = changing([line(1), line(2), line(2)], release)
        const t = yield* MountInfo.read("/proc/self/mountinfo").pipe(Effect.provide(fs.layer))
        assert.deepStrictEqual(
          t.map((e) => e.id),
          [2],
          release
        )
        assert.strictEqual(fs.reads(), 3, release)
      }
    })
  )

  it.effect("attempts overrides what the kernel says", () =>
    Effect.gen(function* () {
      const older = changing([line(1), line(2), line(2)], "4.18.0")
      assert.deepStrictEqual(
        (yield* MountInfo.read("/m", { attempts: 1 }).pipe(Effect.provide(older.layer))).map((e) => e.id),
        [1]
      )
      const newer = changing([line(1), line(2), line(2)], "6.8.0")
      assert.deepStrictEqual(
        (yield* MountInfo.read("/m", { attempts: 3 }).pipe(Effect.provide(newer.layer))).map((e) => e.id),
        [2]
      )
      assert.strictEqual(newer.reads(), 3)
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
      assert.strictEqual(e.reason._tag, "Unreadable")
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

// Cases from the kernel's format (proc(5)) and from peers' suites (moby/sys
// mountinfo, util-linux libmount, kubernetes mount-utils), written anew.
const entry = (text: string) => Effect.map(Layers.parseMountInfo(text), (t) => t[0] as MountInfo.MountEntry)
const failure = (text: string) => Effect.flip(Layers.parseMountInfo(text, "/proc/9/mountinfo"))

describe("Layers.parseMountInfo, peers' cases", () => {
  it.effect("zero, one or several optional fields, in their order", () =>
    Effect.gen(function* () {
      const base = "251 15 0:3573 / /mnt/point rw,relatime"
      const tail = "- aufs none rw"
      assert.deepStrictEqual((yield* entry(`${base} ${tail}`)).optionalFields, [])
      assert.deepStrictEqual((yield* entry(`${base} shared:123 ${tail}`)).optionalFields, ["shared:123"])
      const several = yield* entry(`${base} shared:123 master:7 propagate_from:2 unbindable extra:tag ${tail}`)
      assert.deepStrictEqual(several.optionalFields, [
        "shared:123",
        "master:7",
        "propagate_from:2",
        "unbindable",
        "extra:tag"
      ])
      assert.strictEqual(several.fsType, "aufs")
      assert.strictEqual(several.source, "none")
      assert.strictEqual(several.superOptions, "rw")
    })
  )

  it.effect("escapes in root, mount point and source; quotes are plain characters", () =>
    Effect.gen(function* () {
      const odd = "/tmp/newline\\012tab\\011space\\040backslash\\134quote1'quote2\""
      const e = yield* entry(`649 94 259:5 ${odd} ${odd} rw,relatime shared:47 - ext4 /dev/nvme0n1p5 rw,seclabel`)
      assert.strictEqual(e.root, "/tmp/newline\ntab\tspace backslash\\quote1'quote2\"")
      assert.strictEqual(e.mountPoint, e.root)
      const cifs = yield* entry("31 21 0:23 / /DATA/x rw,relatime - cifs //foo/BLA\\040BLA\\040BLA/ rw,sec=ntlm")
      assert.strictEqual(cifs.source, "//foo/BLA BLA BLA/")
      const deleted = yield* entry("1 0 0:1 / /a/dir\\040(deleted) rw - tmpfs tmpfs rw")
      assert.strictEqual(deleted.mountPoint, "/a/dir (deleted)")
      const hash = yield* entry("1 0 0:1 / /a\\043b rw - tmpfs tmpfs rw")
      assert.strictEqual(hash.mountPoint, "/a#b")
    })
  )

  it.effect("an empty source field (tmpfs mounted with an empty source, kernels before 5.1)", () =>
    Effect.gen(function* () {
      const e = yield* entry("279 23 0:108 / /tmp/bb rw,relatime shared:212 - tmpfs  rw")
      assert.strictEqual(e.fsType, "tmpfs")
      assert.strictEqual(e.source, "")
      assert.strictEqual(e.superOptions, "rw")
      assert.strictEqual(Layers.renderMountInfo([e]), "279 23 0:108 / /tmp/bb rw,relatime shared:212 - tmpfs  rw\n")
    })
  )

  it.effect("a source of '-' is the source, not a second separator", () =>
    Effect.gen(function* () {
      const e = yield* entry("5 1 0:9 / /m rw shared:1 - tmpfs - rw")
      assert.deepStrictEqual([e.optionalFields, e.fsType, e.source, e.superOptions], [["shared:1"], "tmpfs", "-", "rw"])
    })
  )

  it.effect("super options are the file system's text: a backslash that starts no escape is kept", () =>
    Effect.gen(function* () {
      // util-linux's libmount fixture: cifs wrote its unc= option unescaped
      const e = yield* entry(
        "47 20 0:38 / /mnt/sounds rw,relatime - cifs //foo.home/bar/ rw,unc=\\\\foo.home\\bar,username=kzak,uid=0"
      )
      assert.strictEqual(e.superOptions, "rw,unc=\\\\foo.home\\bar,username=kzak,uid=0")
      assert.strictEqual(e.source, "//foo.home/bar/")
      assert.deepStrictEqual(yield* Layers.parseMountInfo(Layers.renderMountInfo([e])), [e])
      assert.strictEqual((yield* entry("1 0 0:1 / /m rw - t s a\\054b\\075c")).superOptions, "a,b=c")
    })
  )

  it.effect("a table with a trailing newline, without one, and with blank lines", () =>
    Effect.gen(function* () {
      const a = "1 0 0:1 / / rw - ext4 /dev/sda rw"
      const b = "2 1 0:2 / /p rw - proc proc rw"
      for (const text of [`${a}\n${b}`, `${a}\n${b}\n`, `\n${a}\n\n${b}\n\n`]) {
        const t = yield* Layers.parseMountInfo(text)
        assert.deepStrictEqual(
          t.map((e) => e.mountPoint),
          ["/", "/p"],
          JSON.stringify(text)
        )
      }
      assert.deepStrictEqual(yield* Layers.parseMountInfo(""), [])
    })
  )

  it.effect("CRLF line ends: the CR is not part of the super options", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(
        "1 0 0:1 / / rw - ext4 /dev/sda rw\r\n2 1 0:2 / /p rw - proc proc rw,x\r\n\r\n"
      )
      assert.deepStrictEqual(
        t.map((e) => e.superOptions),
        ["rw", "rw,x"]
      )
      assert.strictEqual((yield* entry("1 0 0:1 / / rw - ext4 /dev/sda rw\r")).superOptions, "rw")
      // a CR inside a field is the field's: the kernel does not escape it
      assert.strictEqual((yield* entry("1 0 0:1 / /a\rb rw - ext4 /dev/sda rw\r\n")).mountPoint, "/a\rb")
      const e = (yield* entry("1 0 0:1 / /m rw - ext4 /dev/sda rw\\015")).superOptions
      assert.strictEqual(e, "rw\r")
    })
  )

  it.effect("mount ids beyond 2^31 and 2^32, large device numbers, up to the largest safe integer", () =>
    Effect.gen(function* () {
      const e = yield* entry("2147483648 4294967296 4095:1048575 / /m rw - t s o")
      assert.deepStrictEqual([e.id, e.parentId, e.major, e.minor], [2147483648, 4294967296, 4095, 1048575])
      const big = yield* entry("9007199254740991 9007199254740991 4294967295:4294967295 / /m rw - t s o")
      assert.deepStrictEqual([big.id, big.major, big.minor], [9007199254740991, 4294967295, 4294967295])
    })
  )

  const numbers: ReadonlyArray<readonly [string, string, string, string]> = [
    ["9007199254740992 1 0:1 / /m rw - t s o", "mount id", "9007199254740992", "beyond"],
    ["1 18446744073709551616 0:1 / /m rw - t s o", "parent id", "18446744073709551616", "beyond"],
    ["1 1 99999999999999999999:1 / /m rw - t s o", "major", "99999999999999999999", "beyond"],
    ["1 1 0:9007199254740993 / /m rw - t s o", "minor", "9007199254740993", "beyond"],
    ["01 1 0:1 / /m rw - t s o", "mount id", "01", "leading zero"],
    ["1 1 08:1 / /m rw - t s o", "major", "08", "leading zero"],
    ["+1 1 0:1 / /m rw - t s o", "mount id", "+1", "not a number"],
    ["1 1 0x8:1 / /m rw - t s o", "device", "0x8:1", "not major:minor"]
  ]
  for (const [line, field, value, why] of numbers) {
    it.effect(`a number the kernel cannot have written: ${field} ${value}`, () =>
      Effect.gen(function* () {
        const e = yield* failure(line)
        assert.strictEqual(e.reason._tag, "Malformed")
        const m = malformedReason(e)
        assert.strictEqual(m.line, 1)
        assert.strictEqual(m.field, field)
        assert.strictEqual(m.value, value)
        assert.include(m.detail, why)
      })
    )
  }

  // kubernetes mount-utils' bad major:minor vectors
  for (const device of ["/var/lib/docker", ":0", "253:", "foo:0", "253:bar", "253:0:1", "-1:0"]) {
    it.effect(`device ${JSON.stringify(device)} is not major:minor`, () =>
      Effect.gen(function* () {
        const e = malformedReason(
          yield* failure(`224 62 ${device} /shared /shared rw,relatime master:1 shared:44 - ext4 /dev/x rw`)
        )
        assert.strictEqual(e.field, "device")
        assert.strictEqual(e.value, device)
        assert.include(e.detail, "major:minor")
      })
    )
  }

  const lines: ReadonlyArray<readonly [string, string, string]> = [
    ["251 15 0:3573 / /mnt/point rw,relatime aufs none rw", "separator", "no '-' separator"],
    ["251 15 0:3573 / /mnt/point rw,relatime - aufs none", "super options", "has 2 fields after '-'"],
    ["251 15 0:3573 / /mnt/point rw,relatime shared:1 aufs none rw", "separator", "no '-' separator"],
    ["251 15 0:3573 / /mnt/point rw,relatime some extra fields - aufs none", "super options", "has 2 fields"],
    ["251 15 0:3573 / /mnt/point rw,relatime -", "fs type", "has 0 fields after '-'"],
    ["251 15 0:3573 / /mnt/point rw,relatime - aufs", "source", "has 1 fields after '-'"],
    ["251 15 0:3573 / /mnt/point rw,relatime - aufs none rw x", "super options", "has 4 fields after '-'"],
    ["251 15 0:3573 / /mnt/point", "mount options", "has 5 fields"],
    ["251 15 0:3573 / /mnt/point rw", "separator", "has 6 fields"],
    ["251", "parent id", "has 1 field,"],
    ["251 15 0:3573 / /mnt/point rw -  none rw", "fs type", "fs type is empty"],
    ["251 15 0:3573 / /mnt/point rw - a\\x none rw", "fs type", "invalid escape"],
    ["251 15 0:3573 / /mnt/point rw - aufs no\\ne rw", "source", "invalid escape"],
    ["251 15 0:3573 / /mnt/point rw sh\\ared:1 - aufs none rw", "optional field", "invalid escape"],
    ["251 15 0:3573 / /mnt/point r\\w - aufs none rw", "mount options", "invalid escape"],
    ["251 15 0:3573 /\\12 /mnt/point rw - aufs none rw", "root", "invalid escape"],
    ["251 15 0:3573 / /mnt/\\400 rw - aufs none rw", "mount point", "invalid escape"],
    ["251 15 0:3573 / /mnt/\\8 rw - aufs none rw", "mount point", "invalid escape"]
  ]
  for (const [line, field, why] of lines) {
    it.effect(`a malformed line names its line and field: ${field}, ${why}`, () =>
      Effect.gen(function* () {
        const e = yield* failure(`1 0 0:1 / / rw - ext4 /dev/sda rw\r\n${line}\r\n`)
        assert.strictEqual(e._tag, "MountInfoError")
        assert.strictEqual(e.reason._tag, "Malformed")
        const m = malformedReason(e)
        assert.strictEqual(m.line, 2)
        assert.strictEqual(m.field, field)
        assert.include(m.detail, why)
        assert.include(e.message, "/proc/9/mountinfo, line 2")
      })
    )
  }

  it.effect("a very long line parses; a bad field in one is reported clipped, not whole", () =>
    Effect.gen(function* () {
      const long = `/${"d/".repeat(100_000)}x`
      const e = yield* entry(`1 0 0:1 ${long} ${long}\\040y rw shared:1 - ext4 /dev/sda rw,${"o".repeat(50_000)}`)
      assert.strictEqual(e.mountPoint, `${long} y`)
      assert.strictEqual(e.superOptions.length, 50_003)
      const bad = malformedReason(yield* failure(`1 0 0:1 / ${long}\\9 rw - ext4 /dev/sda rw`))
      assert.strictEqual(bad.field, "mount point")
      assert.strictEqual(bad.value, long.slice(0, 256))
      assert.isBelow(bad.detail.length, 400)
      assert.include(bad.detail, `(${long.length + 2} characters)`)
    })
  )
})

describe("Escape.unescapeField", () => {
  // moby/sys's unescape vectors, with this module's answer: a backslash that
  // starts no escape of a byte is no mountinfo text (undefined), and an escape
  // is a byte, decoded as FileName decodes bytes.
  const cases: ReadonlyArray<readonly [string, string | undefined]> = [
    ["", ""],
    ["/", "/"],
    ["/some/longer/path", "/some/longer/path"],
    ["/path\\040with\\040spaces", "/path with spaces"],
    ["/path/with\\134backslash", "/path/with\\backslash"],
    ["/tab\\011in/path", "/tab\tin/path"],
    ["/path/\"with'quotes,\\040space,\\011tab", "/path/\"with'quotes, space,\ttab"],
    ["\\12", undefined],
    ["\\134", "\\"],
    ["/\\1345", "/\\5"],
    ["/\\12x", undefined],
    ["\\0", undefined],
    ["\\000\\000", "\u0000\u0000"],
    ["\\x", undefined],
    ["\\\\", undefined],
    ["\\177", "\u007f"],
    ["\\222", "\udc92"],
    ["\\377", "\udcff"],
    ["\\400", undefined],
    ["\\777", undefined],
    ["/caf\\351", "/caf\udce9"],
    ["/\\303\\251t\\303\\251", "/été"],
    ["/\\303\\251\\040x", "/é x"],
    ["Это\\040комон\\040какой-то", "Это комон какой-то"]
  ]
  it("decodes escapes as bytes and refuses what is no escape", () => {
    for (const [input, output] of cases) assert.strictEqual(Escape.unescapeField(input), output, input)
  })

  it.effect("an escaped byte >= 0x80 names the same file as the byte read raw", () =>
    Effect.gen(function* () {
      const e = yield* entry("1 0 0:1 / /caf\\351\\040x rw - tmpfs t rw")
      assert.deepStrictEqual(
        [...FileName.encode(e.mountPoint)],
        [...new TextEncoder().encode("/caf"), 0xe9, 0x20, 0x78]
      )
    })
  )

  it("escapeField escapes what the kernel escapes, and a CR", () => {
    assert.strictEqual(Escape.escapeField("a b\tc\nd\\e\rf#-"), "a\\040b\\011c\\012d\\134e\\015f#-")
  })
})

describe("MountInfoError", () => {
  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      const malformed = Layers.parseMountInfo("22 1 0:21 / /proc rw - proc proc rw\nnot a mount\n", "/proc/7/mountinfo")
      const line = yield* malformed.pipe(
        Effect.map(() => 0),
        Effect.catchReason("MountInfoError", "Malformed", (reason, error) =>
          Effect.succeed(`${error.path}:${reason.line}:${reason.field}`)
        )
      )
      assert.strictEqual(line, "/proc/7/mountinfo:2:mount id")
      const unreadable = yield* MountInfo.read("/nope").pipe(
        Effect.map(() => ""),
        Effect.catchReason("MountInfoError", "Unreadable", (reason) => Effect.succeed(reason.detail)),
        Effect.provide(FileSystem.layerNoop({}))
      )
      assert.isAbove(unreadable.length, 0)
      // @ts-expect-error: MountInfoError has no reason tagged "Busy"
      void malformed.pipe(Effect.catchReason("MountInfoError", "Busy", () => Effect.void))
    })
  )
})

describe("Layers.parseMountInfo: the table it returns", () => {
  // The table is scanned and checked whole, and an entry is built when it is first read:
  // to a reader it must be the array of plain entries a parse always returned.
  const plain = (t: ReadonlyArray<MountInfo.MountEntry>): ReadonlyArray<MountInfo.MountEntry> =>
    Array.from({ length: t.length }, (_, i) => ({ ...(t[i] as MountInfo.MountEntry) }))

  it.effect("is an array of plain entries: indexing, iteration, array methods, keys, JSON, spread and cloning", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(sample)
      const expected = plain(yield* Layers.parseMountInfo(sample))
      assert.isTrue(Array.isArray(t))
      assert.strictEqual(t.length, 4)
      // An entry is built once and kept: the same object on every read.
      assert.strictEqual(t[2], t[2])
      assert.deepStrictEqual([...t], expected)
      assert.deepStrictEqual(
        t.map((e) => e.mountPoint),
        expected.map((e) => e.mountPoint)
      )
      assert.deepStrictEqual(
        t.filter((e) => e.fsType === "tmpfs").map((e) => e.id),
        [40]
      )
      assert.isTrue(3 in t)
      assert.isFalse(4 in t)
      assert.deepStrictEqual(Object.keys(t), ["0", "1", "2", "3"])
      assert.strictEqual(JSON.stringify(t), JSON.stringify(expected))
      // Not an index of the table: nothing is built for it.
      const loose = t as unknown as Record<string, unknown>
      for (const key of ["4", "-1", "01", "1.0", "1e0", ""]) assert.isUndefined(loose[key], key)
      // An entry is a plain object with every field of its own.
      const entry = t[1] as MountInfo.MountEntry
      assert.deepStrictEqual(Object.keys(entry), Object.keys(MountInfo.MountEntry.fields))
      assert.deepStrictEqual({ ...entry }, expected[1])
      assert.deepStrictEqual(structuredClone(entry), expected[1])
      assert.isTrue(Schema.is(MountInfo.MountEntry)(entry))
    })
  )

  it.effect("console.log shows its entries, read or not", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(sample)
      const expected = plain(yield* Layers.parseMountInfo(sample))
      assert.strictEqual(inspect(t, { depth: 4 }), inspect(expected, { depth: 4 }))
    })
  )

  it.effect.prop(
    "entries read in any order are the entries read in order",
    { table: Schema.Array(EntryInput).check(Schema.isMaxLength(12)), seed: Schema.Int },
    ({ table, seed }) =>
      Effect.gen(function* () {
        const entries: ReadonlyArray<MountInfo.MountEntry> = table.map((e) => ({
          ...e,
          root: e.root.join(""),
          mountPoint: e.mountPoint.join(""),
          fsType: e.fsType.join(""),
          source: e.source.join(""),
          superOptions: e.superOptions.join("")
        }))
        const text = Layers.renderMountInfo(entries)
        const inOrder = plain(yield* Layers.parseMountInfo(text))
        const t = yield* Layers.parseMountInfo(text)
        // Entries that repeat a neighbour's field reuse its string: read backwards and from a shifted start.
        const order = entries.map((_, i) => (entries.length - 1 - i + Math.abs(seed)) % entries.length)
        for (const i of order) assert.deepStrictEqual(t[i], inOrder[i])
        assert.deepStrictEqual(plain(t), entries)
      }),
    { arbitrary: { runs: 300 } }
  )

  it.effect("no field is taken from a neighbour whose field has the same length", () =>
    Effect.gen(function* () {
      // Neighbours whose fields differ at the same length: a string or optional fields reused by length alone
      // would give one line's text to the other.
      const text = [
        "1 0 0:1 /a /x rw,atime shared:1 - tmpfs srcA rw,a",
        "2 1 0:1 /b /y ro,atime master:3 - ramfs srcB ro,b",
        "3 1 0:1 /a /z rw,atime shared:1 - tmpfs srcA rw,a",
        "4 1 0:1 /c /w rw,btime master:3 shared:1 - tmpfs srcC rw,c",
        ""
      ].join("\n")
      const fields = (e: MountInfo.MountEntry | undefined) =>
        e === undefined ? [] : [e.root, e.mountOptions, e.optionalFields.join(" "), e.fsType, e.source, e.superOptions]
      const expected = [
        ["/a", "rw,atime", "shared:1", "tmpfs", "srcA", "rw,a"],
        ["/b", "ro,atime", "master:3", "ramfs", "srcB", "ro,b"],
        ["/a", "rw,atime", "shared:1", "tmpfs", "srcA", "rw,a"],
        ["/c", "rw,btime", "master:3 shared:1", "tmpfs", "srcC", "rw,c"]
      ]
      for (const order of [
        [0, 1, 2, 3],
        [3, 2, 1, 0],
        [1, 3, 0, 2]
      ]) {
        const t = yield* Layers.parseMountInfo(text)
        for (const i of order) assert.deepStrictEqual(fields(t[i]), expected[i], `entry ${i} read in order ${order}`)
      }
    })
  )

  it.effect("a malformed line fails the whole parse, wherever it is, though no entry was read", () =>
    Effect.gen(function* () {
      const good = "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw"
      const lines = Array.from({ length: 1000 }, () => good)
      lines[999] = "23 1 0:22 / /mnt\\09 rw - tmpfs tmpfs rw"
      const error = yield* Effect.flip(Layers.parseMountInfo(lines.join("\n")))
      const reason = malformedReason(error)
      assert.deepStrictEqual([reason.line, reason.field, reason.value], [1000, "mount point", "/mnt\\09"])
    })
  )
})

/**
 * The table the kernel (Linux 6.18) showed for a data disk shared with the
 * kubelet directory's bind (`/disk`, `/root/var/lib/kubelet`: peers of group
 * 1) and a slave of it (`/slave`), with pod volumes mounted below the
 * kubelet directory: a tmpfs with one inside it (v1), a stack of two (v2), a
 * file bind (file), a copy on the disk made private with a mount inside it
 * (v3) and a copy on the slave made private with a mount on its root (v5).
 */
const peers = [
  "84 64 0:39 / /s rw,relatime - tmpfs tmpfs rw",
  "85 84 0:40 / /s/disk rw,relatime shared:1 - tmpfs disk rw",
  "86 84 0:40 /kubelet /s/root/var/lib/kubelet rw,relatime shared:1 - tmpfs disk rw",
  "87 84 0:40 / /s/slave rw,relatime master:1 - tmpfs disk rw",
  "88 86 0:41 / /s/root/var/lib/kubelet/pods/p1/volumes/v1 rw,relatime shared:2 - tmpfs v1 rw",
  "89 85 0:41 / /s/disk/kubelet/pods/p1/volumes/v1 rw,relatime shared:2 - tmpfs v1 rw",
  "90 87 0:41 / /s/slave/kubelet/pods/p1/volumes/v1 rw,relatime master:2 - tmpfs v1 rw",
  "91 88 0:42 / /s/root/var/lib/kubelet/pods/p1/volumes/v1/inner rw,relatime shared:3 - tmpfs inner rw",
  "92 89 0:42 / /s/disk/kubelet/pods/p1/volumes/v1/inner rw,relatime shared:3 - tmpfs inner rw",
  "93 90 0:42 / /s/slave/kubelet/pods/p1/volumes/v1/inner rw,relatime master:3 - tmpfs inner rw",
  "94 86 0:43 / /s/root/var/lib/kubelet/pods/p1/volumes/v2 rw,relatime shared:4 - tmpfs v2a rw",
  "95 85 0:43 / /s/disk/kubelet/pods/p1/volumes/v2 rw,relatime shared:4 - tmpfs v2a rw",
  "96 87 0:43 / /s/slave/kubelet/pods/p1/volumes/v2 rw,relatime master:4 - tmpfs v2a rw",
  "97 94 0:44 / /s/root/var/lib/kubelet/pods/p1/volumes/v2 rw,relatime shared:5 - tmpfs v2b rw",
  "98 95 0:44 / /s/disk/kubelet/pods/p1/volumes/v2 rw,relatime shared:5 - tmpfs v2b rw",
  "99 96 0:44 / /s/slave/kubelet/pods/p1/volumes/v2 rw,relatime master:5 - tmpfs v2b rw",
  "100 86 0:40 /src /s/root/var/lib/kubelet/pods/p1/volumes/file rw,relatime shared:1 - tmpfs disk rw",
  "101 85 0:40 /src /s/disk/kubelet/pods/p1/volumes/file rw,relatime shared:1 - tmpfs disk rw",
  "102 87 0:40 /src /s/slave/kubelet/pods/p1/volumes/file rw,relatime master:1 - tmpfs disk rw",
  "103 86 0:45 / /s/root/var/lib/kubelet/pods/p1/volumes/v3 rw,relatime shared:6 - tmpfs v3 rw",
  "104 85 0:45 / /s/disk/kubelet/pods/p1/volumes/v3 rw,relatime - tmpfs v3 rw",
  "105 87 0:45 / /s/slave/kubelet/pods/p1/volumes/v3 rw,relatime master:6 - tmpfs v3 rw",
  "106 104 0:46 / /s/disk/kubelet/pods/p1/volumes/v3/extra rw,relatime - tmpfs extra rw",
  "107 86 0:47 / /s/root/var/lib/kubelet/pods/p1/volumes/v5 rw,relatime shared:7 - tmpfs v5 rw",
  "108 85 0:47 / /s/disk/kubelet/pods/p1/volumes/v5 rw,relatime shared:7 - tmpfs v5 rw",
  "109 87 0:47 / /s/slave/kubelet/pods/p1/volumes/v5 rw,relatime - tmpfs v5 rw",
  "110 109 0:48 / /s/slave/kubelet/pods/p1/volumes/v5 rw,relatime - tmpfs over5 rw",
  ""
].join("\n")

describe("propagatedUnmounts", () => {
  const taken = (table: ReadonlyArray<MountInfo.MountEntry>, targets: ReadonlyArray<number>) =>
    propagatedUnmounts(table, targets).map((p) => [p.entry.id, p.cognateOf])

  it.effect("what the kernel detached with each pod volume, as the table before it showed them", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(peers)
      // v1 and the tmpfs inside it: the copies on the peer and on the slave, each with its inner copy.
      assert.deepStrictEqual(taken(t, [88]), [
        [89, 88],
        [90, 88],
        [92, 91],
        [93, 91]
      ])
      // The top of the stack, then the one below it: each takes its own copies.
      assert.deepStrictEqual(taken(t, [97]), [
        [98, 97],
        [99, 97]
      ])
      assert.deepStrictEqual(taken(t, [94]), [
        [95, 94],
        [96, 94],
        [98, 97],
        [99, 97]
      ])
      // A bind of a file propagates as any mount does.
      assert.deepStrictEqual(taken(t, [100]), [
        [101, 100],
        [102, 100]
      ])
      // The disk's copy of v3 holds a mount of its own (not on its root): it stays; the slave's goes.
      assert.deepStrictEqual(taken(t, [103]), [[105, 103]])
      // The slave's copy of v5 has a mount on its root: the copy goes, the mount on it stays (moved down).
      assert.deepStrictEqual(taken(t, [107]), [
        [108, 107],
        [109, 107]
      ])
    })
  )

  it.effect("no propagation from a private parent, from a slave to its master, or between unrelated groups", () =>
    Effect.gen(function* () {
      const t = yield* Layers.parseMountInfo(peers)
      // 104 (the disk's private copy of v3) is the parent of 106: nothing receives from it.
      assert.deepStrictEqual(taken(t, [106]), [])
      // Detaching in the slave never reaches its master's peers.
      assert.deepStrictEqual(taken(t, [90]), [])
      // The kubelet directory private: v1 has no copies to detach, but v1's own copies (its peer group,
      // shared:2) still receive the detach of the mount inside it.
      const private_ = yield* Layers.parseMountInfo(peers.replaceAll(" shared:1 ", " ").replaceAll(" master:1 ", " "))
      assert.deepStrictEqual(taken(private_, [88]), [
        [92, 91],
        [93, 91]
      ])
    })
  )
})
