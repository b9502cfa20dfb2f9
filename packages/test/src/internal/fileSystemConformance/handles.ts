/**
 * FileSystem conformance, open files and streams: `open` with its flags and
 * errors, a `File`'s cursor, positional reads, appends and truncation, a file
 * that outlives its name, and `stream` / `sink`.
 *
 * Boundary: everything that goes through a descriptor.
 */
import { assert } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { bytes, expectError, perm, some, type Test, text } from "./harness.ts"

/** Open files and streams: `open`, a `File`'s cursor and writes, `stream` and `sink`. */
export const handles = (test: Test): void => {
  test("open: flags, modes and errors", (fs, r) =>
    Effect.gen(function* () {
      yield* fs.writeFileString(`${r}/f`, "abc")
      yield* fs.makeDirectory(`${r}/d`)
      yield* fs.symlink("f", `${r}/l`)
      yield* Effect.scoped(fs.open(`${r}/f`))
      yield* Effect.scoped(fs.open(`${r}/new`, { flag: "w", mode: 0o600 }))
      assert.strictEqual(perm(yield* fs.stat(`${r}/new`)), 0o600)
      yield* Effect.scoped(fs.open(`${r}/f`, { flag: "w" }))
      assert.strictEqual(Number((yield* fs.stat(`${r}/f`)).size), 0)
      yield* expectError(Effect.scoped(fs.open(`${r}/f`, { flag: "wx" })), {
        tag: "AlreadyExists",
        code: "EEXIST",
        method: "open",
        syscall: "open"
      })
      yield* expectError(Effect.scoped(fs.open(`${r}/f`, { flag: "ax+" })), { tag: "AlreadyExists", code: "EEXIST" })
      yield* expectError(Effect.scoped(fs.open(`${r}/nope`)), { tag: "NotFound", code: "ENOENT" })
      yield* expectError(Effect.scoped(fs.open(`${r}/nope`, { flag: "r+" })), { tag: "NotFound", code: "ENOENT" })
      yield* expectError(Effect.scoped(fs.open(`${r}/d`, { flag: "r+" })), { tag: "BadResource", code: "EISDIR" })
      yield* expectError(Effect.scoped(fs.open(`${r}/d`, { flag: "a" })), { tag: "BadResource", code: "EISDIR" })
      yield* expectError(Effect.scoped(fs.open(`${r}/d`, { flag: "wx" })), { tag: "AlreadyExists", code: "EEXIST" })
      yield* expectError(Effect.scoped(fs.open(`${r}/l`, { noFollow: true })), { tag: "BadResource", code: "ELOOP" })
      yield* Effect.scoped(fs.open(`${r}/l`))
      // a directory can be opened for reading, but not read
      yield* expectError(Effect.scoped(Effect.flatMap(fs.open(`${r}/d`), (file) => file.readAlloc(10))), {
        tag: "BadResource",
        code: "EISDIR",
        method: "readAlloc",
        syscall: "read"
      })
      const dirInfo = yield* Effect.scoped(Effect.flatMap(fs.open(`${r}/d`), (file) => file.stat))
      assert.strictEqual(dirInfo.type, "Directory")
    }))

  test("File: cursor, positional reads, append, truncate", (fs, r) =>
    Effect.scoped(
      Effect.gen(function* () {
        const file = yield* fs.open(`${r}/f`, { flag: "w+" })
        assert.strictEqual(yield* file.write(bytes("hello")), 5)
        yield* file.writeAll(bytes(" world"))
        assert.strictEqual(yield* file.seek(0n, "start"), 0n)
        const buf = new Uint8Array(5)
        assert.strictEqual(yield* file.read(buf), 5)
        assert.strictEqual(text(buf), "hello")
        // positional reads leave the cursor where it is
        assert.strictEqual(text(some(yield* file.readAlloc(5, { position: 6n }))), "world")
        assert.strictEqual(text(some(yield* file.readAlloc(1))), " ")
        assert.strictEqual(yield* file.seek(2n, "current"), 8n)
        assert.strictEqual(text(some(yield* file.readAlloc(100))), "rld")
        assert.isTrue(Option.isNone(yield* file.readAlloc(10)))
        assert.strictEqual(yield* file.read(new Uint8Array(4)), 0)
        assert.strictEqual(Number((yield* file.stat).size), 11)
        // writing past the end leaves a hole of zeros
        yield* file.seek(13n, "start")
        yield* file.writeAll(bytes("!"))
        assert.deepStrictEqual([...(yield* fs.readFile(`${r}/f`))].slice(10), [100, 0, 0, 33])
        // truncate clamps the cursor
        yield* file.truncate(3)
        assert.strictEqual(yield* file.write(bytes("X")), 1)
        assert.strictEqual(yield* fs.readFileString(`${r}/f`), "helX")
        yield* file.sync
        yield* expectError(file.seek(-1n, "start"), { tag: "BadArgument", method: "seek" })
        yield* expectError(file.read(new Uint8Array(1), { position: -1n }), { tag: "BadArgument", method: "read" })
        const appender = yield* fs.open(`${r}/f`, { flag: "a+" })
        yield* appender.writeAll(bytes("12"))
        yield* appender.writeAll(bytes("3"))
        // appends go to the end and do not move the cursor, which still reads from 0
        assert.strictEqual(text(some(yield* appender.readAlloc(100))), "helX123")
        const reader = yield* fs.open(`${r}/f`)
        yield* expectError(reader.write(bytes("x")), {
          tag: "Unknown",
          code: "EBADF",
          method: "write",
          syscall: "write"
        })
        yield* expectError(reader.truncate(0), { tag: "Unknown", code: "EINVAL", method: "truncate" })
        const writer = yield* fs.open(`${r}/f`, { flag: "a" })
        yield* expectError(writer.readAlloc(1), { tag: "Unknown", code: "EBADF", method: "readAlloc" })
      })
    ))

  test("an open file outlives its name", (fs, r) =>
    Effect.scoped(
      Effect.gen(function* () {
        yield* fs.writeFileString(`${r}/f`, "still here")
        const file = yield* fs.open(`${r}/f`, { flag: "r+" })
        yield* fs.remove(`${r}/f`)
        assert.strictEqual(text(some(yield* file.readAlloc(100))), "still here")
        assert.strictEqual(Number(some((yield* file.stat).nlink)), 0)
        yield* file.writeAll(bytes("!"))
        assert.isFalse(yield* fs.exists(`${r}/f`))
      })
    ))

  test("stream and sink", (fs, r) =>
    Effect.gen(function* () {
      yield* Stream.make(bytes("abc"), bytes("def"), bytes("ghi")).pipe(Stream.run(fs.sink(`${r}/s`)))
      assert.strictEqual(yield* fs.readFileString(`${r}/s`), "abcdefghi")
      const chunks = yield* Stream.runCollect(fs.stream(`${r}/s`, { chunkSize: 4 }))
      assert.deepStrictEqual([...chunks].map(text), ["abcd", "efgh", "i"])
      const part = yield* Stream.runCollect(fs.stream(`${r}/s`, { offset: 2, bytesToRead: 5, chunkSize: 2 }))
      assert.strictEqual([...part].map(text).join(""), "cdefg")
      yield* Stream.make(bytes("++")).pipe(Stream.run(fs.sink(`${r}/s`, { flag: "a" })))
      assert.strictEqual(yield* fs.readFileString(`${r}/s`), "abcdefghi++")
      yield* expectError(Stream.runDrain(fs.stream(`${r}/nope`)), { tag: "NotFound", code: "ENOENT", method: "open" })
    }))
}
