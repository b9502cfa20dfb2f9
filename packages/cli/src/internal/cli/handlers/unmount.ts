/**
 * `hostnode unmount-below`'s work, loaded only when that subcommand runs.
 * Boundary: the operation and its output; the flags are declared in
 * `commands.ts`.
 */
import { HostPath, Unmount } from "@hostnode/core"
import { Effect } from "effect"
import { plural } from "../../text.ts"
import { operate, type Work, withRoot } from "../operate.ts"

/** A prefix as given, and what it resolved to when that differs. */
const prefixText = (p: HostPath.Resolved) => (p.path === HostPath.clean(p.given) ? p.path : `${p.given} (-> ${p.path})`)

/** Unmounts every mount at (strictly: below) the prefixes, below the host root. */
export const unmountBelow = ({
  strict,
  allowRoot,
  prefixes
}: {
  readonly strict: boolean
  readonly allowRoot: boolean
  readonly prefixes: ReadonlyArray<string>
}): Work =>
  operate(
    "unmount-below",
    withRoot("unmount-below", (root) =>
      (strict ? Unmount.unmountStrictlyBelow : Unmount.unmountBelow)(prefixes, { hostRoot: root, allowRoot }).pipe(
        Effect.map((r) => ({
          hostRoot: root.path,
          strict,
          prefixes: r.prefixes.map((p) => ({ prefix: p.given, resolved: p.path, mountTable: p.table })),
          unmounted: r.unmounted,
          text: r.prefixes.map(prefixText).join(", ")
        }))
      )
    ),
    (r) =>
      `unmounted ${plural(r.unmounted.length, "mount")} ${strict ? "strictly below" : "at or below"} ${r.text}; nothing is mounted there any more${
        r.unmounted.length === 0 ? "" : `\n${r.unmounted.map((m) => `  ${m.mountPoint} (${m.fsType})`).join("\n")}`
      }`,
    { toJson: ({ text: _, ...rest }) => rest }
  )
