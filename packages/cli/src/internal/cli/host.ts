/**
 * The real host as the `hostnode` executable gives it to a command: every
 * service of `NodeHost.layer` (the platform's, the directory handles and
 * mounter through the FFI, systemd, DNS), and progress on stderr when
 * `Stdio` says stdout and stderr are terminals. Boundary: imported only when
 * a command that works on the host runs (`bin.ts`), never for `--help`,
 * `--version` or a usage error.
 */
import { NodeHost } from "@hostnode/node"
import { Layer } from "effect"
import * as Progress from "./progress.ts"

// Progress only for a person watching: both streams on a terminal (asked of NodeHost's Stdio).
export const layer = Progress.layerInteractive.pipe(Layer.provideMerge(NodeHost.layer))
