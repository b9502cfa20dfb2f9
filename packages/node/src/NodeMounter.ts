/**
 * The real `Mounter`. `layer` calls `umount2(2)` in-process through the koffi
 * FFI (prebuilt binaries, no compiler): a thousand lazy unmounts take tens of
 * milliseconds, where one `umount` process per mount takes seconds.
 * `layerCommand` runs `umount -l` through the spawner in context, many targets
 * per process: the path for another mount namespace (a spawner wrapped with
 * `nsenter`), and the fallback when the FFI cannot load.
 *
 * @since 0.1.0
 */
import { getSystemErrorMap } from "node:util"
import { HostCommand, Mounter, MountInfo } from "@hostnode/core"
import { Effect, type FileSystem, Layer, Schema } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import koffi from "koffi"

/** `MNT_DETACH` from <sys/mount.h>. */
const MNT_DETACH = 2

/** The FFI could not be loaded (no libc.so.6, an unsupported platform). `layerCommand` still works. */
export class MounterUnavailable extends Schema.TaggedError<MounterUnavailable>()("MounterUnavailable", {
  /** Why: koffi or libc's `umount2` could not be loaded (no prebuilt binary for this platform, no libc.so.6). */
  reason: Schema.Literal("FfiUnavailable"),
  detail: Schema.String
}) {
  override get message(): string {
    return `in-process umount2 is unavailable: ${this.detail}`
  }
}

const errnoMap = getSystemErrorMap()

/** The errno name and message for a positive errno, as strerror would give them. */
const describeErrno = (errno: number): { readonly errno: string; readonly message: string } => {
  const known = errnoMap.get(-errno)
  return known === undefined
    ? { errno: `E${errno}`, message: `errno ${errno}` }
    : { errno: known[0], message: known[1] }
}

const loadUmount2 = Effect.try({
  try: () => {
    const libc = koffi.load("libc.so.6")
    const umount2 = libc.func("int umount2(const char *target, int flags)") as (t: string, f: number) => number
    return umount2
  },
  catch: (e) => new MounterUnavailable({ reason: "FfiUnavailable", detail: e instanceof Error ? e.message : String(e) })
})

/**
 * The `Mounter` backed by in-process `umount2`. All targets of one call are
 * unmounted in one synchronous loop: with MNT_DETACH the syscall does not wait
 * for busy or unreachable file systems, so the loop cannot hang on them.
 */
export const make = Effect.map(loadUmount2, (umount2) =>
  Mounter.Mounter.of({
    unmount: (targets, options) =>
      Effect.sync(() => {
        const flags = options.lazy ? MNT_DETACH : 0
        const out: Array<Mounter.UnmountResult> = []
        for (const target of targets) {
          if (umount2(target, flags) === 0) {
            out.push({ _tag: "Unmounted", target })
          } else {
            const { errno, message } = describeErrno(koffi.errno())
            out.push({ _tag: "Failed", target, failure: { target, errno, message } })
          }
        }
        return out
      })
  })
)

/** The in-process `Mounter` (see {@link make}); fails to build with {@link MounterUnavailable}. */
export const layer: Layer.Layer<Mounter.Mounter, MounterUnavailable> = Layer.effect(Mounter.Mounter, make)

/** Options of {@link layerCommand}. */
export interface CommandOptions {
  /**
   * The mount table of the namespace the spawner's commands run in, read to
   * tell which targets were unmounted (default `/proc/self/mountinfo`; for a
   * spawner wrapped with `nsenter -t PID`, `/proc/PID/mountinfo`).
   */
  readonly mountInfo?: string | undefined
  /** Most bytes of target arguments per `umount` process (default 64 KiB, far below ARG_MAX). */
  readonly maxArgBytes?: number | undefined
}

// util-linux umount's messages for the failures a teardown meets.
const classify = (text: string): { readonly errno: string; readonly message: string } => {
  const t = text.toLowerCase()
  if (t.includes("busy")) return { errno: "EBUSY", message: "Device or resource busy" }
  if (t.includes("not mounted")) return { errno: "EINVAL", message: "Invalid argument (not mounted)" }
  // util-linux says "no mount point specified" for a path that does not exist
  if (t.includes("no such file") || t.includes("no mount point specified"))
    return { errno: "ENOENT", message: "No such file or directory" }
  if (t.includes("superuser") || t.includes("not permitted") || t.includes("permission")) {
    return { errno: "EPERM", message: "Operation not permitted" }
  }
  return { errno: "EUNKNOWN", message: text.trim() === "" ? "umount failed" : text.trim() }
}

const chunk = (targets: ReadonlyArray<string>, maxBytes: number): Array<Array<string>> => {
  const out: Array<Array<string>> = []
  let current: Array<string> = []
  let bytes = 0
  for (const t of targets) {
    const size = t.length * 3 + 1
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current)
      current = []
      bytes = 0
    }
    current.push(t)
    bytes += size
  }
  if (current.length > 0) out.push(current)
  return out
}

const countByMountPoint = (table: MountInfo.MountTable): Map<string, number> => {
  const m = new Map<string, number>()
  for (const e of table) m.set(e.mountPoint, (m.get(e.mountPoint) ?? 0) + 1)
  return m
}

/**
 * The `Mounter` that runs `umount [-l] -- targets...` through the spawner in
 * context. umount reports failures as text, so which targets were unmounted
 * is decided from the mount table: for a path given k times, as many of its
 * occurrences succeeded as its entries decreased; the others take the reason
 * umount printed for that path.
 */
export const makeCommand = (options?: CommandOptions) =>
  Effect.gen(function* () {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem>()
    const tablePath = options?.mountInfo ?? MountInfo.DefaultPath
    const maxBytes = options?.maxArgBytes ?? 64 * 1024
    const countNow = MountInfo.read(tablePath).pipe(
      Effect.map(countByMountPoint),
      Effect.orElseSucceed(() => undefined)
    )
    const unmount = Effect.fnUntraced(function* (targets: ReadonlyArray<string>, opts: Mounter.UnmountOptions) {
      if (targets.length === 0) return []
      const before = yield* countNow
      const messages = new Map<string, string>()
      let spawnFailure: string | undefined
      for (const part of chunk(targets, maxBytes)) {
        const args = [...(opts.lazy ? ["-l"] : []), "--", ...part]
        const result = yield* Effect.result(HostCommand.run("umount", args))
        if (result._tag === "Failure") {
          spawnFailure ??= result.failure.detail
          continue
        }
        for (const line of result.success.stderr.split("\n")) {
          for (const t of part) if (line.startsWith(`umount: ${t}: `)) messages.set(t, line)
        }
      }
      const after = yield* countNow
      // How many mounts left each mount point: that many of its targets succeeded
      // (a stacked mount point is a target once per mount).
      const gone = new Map<string, number>()
      if (before !== undefined && after !== undefined) {
        for (const [point, n] of before) gone.set(point, Math.max(0, n - (after.get(point) ?? 0)))
      }
      return targets.map((target): Mounter.UnmountResult => {
        const left = gone.get(target) ?? 0
        if (left > 0) {
          gone.set(target, left - 1)
          return { _tag: "Unmounted", target }
        }
        const why =
          spawnFailure !== undefined && !messages.has(target)
            ? { errno: "ENOEXEC", message: `umount could not run: ${spawnFailure}` }
            : classify(messages.get(target) ?? "")
        return { _tag: "Failed", target, failure: { target, ...why } }
      })
    })
    return Mounter.Mounter.of({
      unmount: (targets, opts) => unmount(targets, opts).pipe(Effect.provide(context))
    })
  })

/** The command-based `Mounter` (see {@link makeCommand}); requires a spawner and a FileSystem. */
export const layerCommand = (
  options?: CommandOptions
): Layer.Layer<Mounter.Mounter, never, ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem> =>
  Layer.effect(Mounter.Mounter, makeCommand(options))

/** The in-process `Mounter`, or the command-based one where the FFI cannot load. */
export const layerWithFallback = (
  options?: CommandOptions
): Layer.Layer<Mounter.Mounter, never, ChildProcessSpawner.ChildProcessSpawner | FileSystem.FileSystem> =>
  Layer.catch(layer, () => layerCommand(options))
