/**
 * The holders of a mount in words, for the messages of the operations that
 * report a mount they could not detach (`Unmount`, `SafeRemove`).
 *
 * Internal.
 *
 * @since 0.4.0
 */
import type { Holder } from "../../Mounter.ts"

/** `; held by kubelet (pid 42, cwd)`, at most five named; empty for none. */
export const describeHolders = (holders: ReadonlyArray<Holder> | undefined): string =>
  holders === undefined || holders.length === 0
    ? ""
    : `; held by ${holders
        .slice(0, 5)
        .map((h) => `${h.command} (${h.detail})`)
        .join(", ")}${holders.length > 5 ? ` and ${holders.length - 5} more` : ""}`
