import { assert, describe, it, layer } from "@effect/vitest"
import { Directory, FileName } from "@hostnode/core"
import { MemoryHost } from "@hostnode/test"
import { Effect, FileSystem } from "effect"

describe("Directory.DirectoryError", () => {
  it("reasonOf classifies an errno and keeps it; the message reads as before", () => {
    const e = new Directory.DirectoryError({
      reason: Directory.SystemError.fromErrno("ENOENT", "no such file or directory"),
      operation: "statx",
      path: "/r/x"
    })
    assert.strictEqual(e.reason._tag, "NotFound")
    assert.strictEqual("errno" in e.reason ? e.reason.errno : undefined, "ENOENT")
    assert.strictEqual(e.message, "statx /r/x: ENOENT no such file or directory")
    assert.strictEqual(Directory.SystemError.fromErrno("EPERM", "x")._tag, "PermissionDenied")
    assert.strictEqual(Directory.SystemError.fromErrno("E999", "x")._tag, "Other")
    // OtherMount is no errno's: a comparison of mount ids.
    const other = new Directory.DirectoryError({
      reason: new Directory.SystemError({ _tag: "OtherMount", detail: "the root of mount 2, not of mount 1 it is in" }),
      operation: "openat",
      path: "/r/m"
    })
    assert.isUndefined("errno" in other.reason ? other.reason.errno : undefined)
    assert.strictEqual(other.message, "openat /r/m: the root of mount 2, not of mount 1 it is in")
  })
})

layer(MemoryHost.layer())("Directory reasons on the simulated host", (it) => {
  it.effect("catchReason reaches each reason", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const dirs = yield* Directory.Directories
      yield* fs.makeDirectory("/box/d", { recursive: true })
      yield* fs.writeFileString("/box/f", "file")
      const root = yield* dirs.openRoot("/box")
      const missing = yield* dirs.stat(root, FileName.encode("nope")).pipe(
        Effect.as("found"),
        Effect.catchReason("DirectoryError", "NotFound", (reason, error) =>
          Effect.succeed(`${error.operation} ${reason.errno}`)
        )
      )
      assert.strictEqual(missing, "statx ENOENT")
      const notEmpty = yield* dirs.unlink(root, FileName.encode("d"), { directory: true }).pipe(
        Effect.andThen(dirs.unlink(root, FileName.encode("f"), { directory: true })),
        Effect.as("removed"),
        Effect.catchReason("DirectoryError", "NotADirectory", (reason) => Effect.succeed(reason.errno))
      )
      assert.strictEqual(notEmpty, "ENOTDIR")
      const stat = dirs.stat(root, FileName.encode("nope"))
      // @ts-expect-error "Vanished" is not a reason of DirectoryError
      stat.pipe(Effect.catchReason("DirectoryError", "Vanished", () => Effect.void))
    }).pipe(Effect.scoped)
  )
})
