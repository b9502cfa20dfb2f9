/**
 * `hostnode unmount-below`'s work, loaded only when that subcommand runs.
 * Boundary: the operation and its output; the flags are declared in
 * `commands.ts`.
 */
import { type HostPath, Unmount } from "@hostnode/core"
import { Lexical } from "@hostnode/core/Programs"
import { Effect } from "effect"
import { plural } from "../../text.ts"
import { operate, type Work, withRoot } from "../operate.ts"

/** A prefix as given, and what it resolved to when that differs. */
const prefixText = (p: HostPath.Resolved) => (p.path === Lexical.clean(p.given) ? p.path : `${p.given} (-> ${p.path})`)

/** Unmounts every mount at (strictly: below) the prefixes, below the host root. */
export const unmountBelow = ({
  strict,
  allowRoot,
  peersOutsideRoot,
  prefixes
}: {
  readonly strict: boolean
  readonly allowRoot: boolean
  readonly peersOutsideRoot: "detach" | "refuse"
  readonly prefixes: ReadonlyArray<string>
}): Work =>
  operate(
    "unmount-below",
    withRoot("unmount-below", (root) =>
      (strict ? Unmount.unmountStrictlyBelow : Unmount.unmountBelow)(prefixes, {
        hostRoot: root,
        allowRoot,
        peersOutsideRoot
      }).pipe(
        Effect.map((r) => ({
          hostRoot: root.path,
          strict,
          prefixes: r.prefixes.map((p) => ({ prefix: p.given, resolved: p.path, mountTable: p.table })),
          unmounted: r.unmounted,
          propagated: r.propagated,
          missing: r.missing,
          text: r.prefixes.map(prefixText).join(", ")
        }))
      )
    ),
    (r) =>
      `unmounted ${plural(r.unmounted.length, "mount")} ${strict ? "strictly below" : "at or below"} ${r.text}; nothing is mounted there any more${
        r.unmounted.length === 0 ? "" : `\n${r.unmounted.map((m) => `  ${m.mountPoint} (${m.fsType})`).join("\n")}`
      }${propagatedText(r.propagated)}`,
    {
      toJson: ({ text: _, ...rest }) => rest,
      warnings: (r) => [
        // A mistyped prefix names nothing: said, as a take of absent paths says it.
        ...r.missing.map(
          (p) => `${JSON.stringify(p)} does not exist below ${r.hostRoot}: nothing can be mounted there (mistyped?)`
        ),
        ...outsideWarning(r.propagated)
      ]
    }
  )

/** The mounts the kernel detached by propagation, for a person. */
export const propagatedText = (propagated: Unmount.Report["propagated"]) =>
  propagated.length === 0
    ? ""
    : `\nthe kernel also detached ${plural(propagated.length, "copy", "copies")} elsewhere by propagation (peers or slaves of the detached mounts' parents):\n${propagated
        .map(
          (m) =>
            `  ${m.mountPoint} (${m.fsType}, a copy of mount ${m.cognateOf}${m.outsideRoot ? ", outside the host root" : ""})`
        )
        .join("\n")}`

/** The warning for copies outside the host root the kernel detached (--peers-outside-root refuse prevents them). */
export const outsideWarning = (propagated: Unmount.Report["propagated"]): ReadonlyArray<string> => {
  const outside = propagated.filter((m) => m.outsideRoot)
  return outside.length === 0
    ? []
    : [
        `the kernel detached ${plural(outside.length, "mount")} outside the host root by propagation (${outside
          .slice(0, 3)
          .map((m) => m.mountPoint)
          .join(
            ", "
          )}${outside.length > 3 ? ", ..." : ""}); --peers-outside-root refuse refuses such unmounts before anything changes`
      ]
}
