/**
 * What every part of the FileSystem conformance suite shares: the shape of a
 * test (a title and a body given the file system and a fresh root),
 * `expectError` for the `PlatformError` a failed call must raise, and small
 * helpers for bytes and modes.
 *
 * Boundary: no tests here; the parts (`lookup.ts`, `contents.ts`, `tree.ts`,
 * `copies.ts`, `handles.ts`) register them and `FileSystemConformance.suite`
 * calls the parts in order.
 */
import { assert } from "@effect/vitest"
import { Effect, type FileSystem, Option, type PlatformError } from "effect"
import type * as Scope from "effect/Scope"

/** Registers one test: `body` runs with the file system under test and a fresh, empty root directory. */
export type Test = (
  title: string,
  body: (fs: FileSystem.FileSystem, root: string) => Effect.Effect<void, PlatformError.PlatformError, Scope.Scope>
) => void

/**
 * What a failed call must look like: `reason._tag` and the errno `code` of the cause, optionally more.
 */
export interface ExpectedError {
  readonly tag: string
  readonly code?: string | undefined
  readonly method?: string | undefined
  readonly syscall?: string | undefined
}

const causeCode = (e: PlatformError.PlatformError): unknown => {
  const cause = e.reason.cause
  return typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
}

/**
 * Runs `effect`, which must fail with a `PlatformError` matching `expected`,
 * and returns the error for further checks. Exported for users' own tests.
 */
export const expectError: <A, R>(
  effect: Effect.Effect<A, PlatformError.PlatformError, R>,
  expected: ExpectedError
) => Effect.Effect<PlatformError.PlatformError, never, R> = Effect.fn("FileSystemConformance.expectError")(function* <
  A,
  R
>(effect: Effect.Effect<A, PlatformError.PlatformError, R>, expected: ExpectedError) {
  const result = yield* Effect.result(effect)
  if (result._tag === "Success") {
    return assert.fail(`expected ${expected.tag}/${expected.code ?? "?"} but it succeeded`)
  }
  const e = result.failure
  const where = `${e.reason.method}(${"pathOrDescriptor" in e.reason ? String(e.reason.pathOrDescriptor) : ""})`
  assert.strictEqual(e.reason._tag, expected.tag, `reason._tag of ${where}: ${e.message}`)
  assert.strictEqual(e.reason.module, "FileSystem")
  if (expected.code !== undefined) assert.strictEqual(causeCode(e), expected.code, `errno code of ${where}`)
  if (expected.method !== undefined) assert.strictEqual(e.reason.method, expected.method)
  if (expected.syscall !== undefined && e.reason._tag !== "BadArgument") {
    assert.strictEqual(e.reason.syscall, expected.syscall, `syscall of ${where}`)
  }
  return e
})

export const bytes = (s: string) => new TextEncoder().encode(s)
export const text = (b: Uint8Array) => new TextDecoder().decode(b)
export const sorted = (xs: ReadonlyArray<string>) => [...xs].sort()
export const perm = (info: FileSystem.File.Info) => info.mode & 0o7777
export const kind = (info: FileSystem.File.Info) => info.mode & 0o170000
export const some = <A>(o: Option.Option<A>): A => Option.getOrThrow(o)
