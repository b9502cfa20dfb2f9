#!/usr/bin/env node
/**
 * The `hostnode` executable: runs the command tree of `Cli.ts` on the real
 * host and exits with the code of its `CliExit` (what went wrong was already
 * printed). Progress of long work is drawn on stderr when `Stdio` says both
 * stdout and stderr are terminals.
 *
 * It starts like a native tool: `--help`, `--version` and a usage error need
 * only the command tree's names, flags and descriptions, so nothing else is
 * loaded for them. A command's work, and the real host (`NodeHost.layer`: the
 * platform layer, the FFI, systemd), are imported when that command runs. The
 * published package runs this file as one bundle (`scripts/bundle-cli.mjs`),
 * whose other chunks are those imports.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { makeHostnode } from "./internal/cli/commands.ts"
import { layerParsing, runMain, wantsWizard } from "./internal/cli/main.ts"
import { runTree } from "./internal/cli/run.ts"
import { version } from "./internal/cli/version.ts"

/** The real host, imported as the layer is built: when a command that works on the host runs. */
const host = Layer.unwrap(
  Effect.map(
    Effect.promise(() => import("./internal/cli/host.ts")),
    (m) => m.layer
  )
)

/** The platform's services from the start, for the wizard (it prompts while parsing). */
const platform = Layer.unwrap(
  Effect.map(
    // The module itself, not the package's index: that would bring every module of the package (HTTP, Redis) along.
    Effect.promise(() => import("@effect/platform-node/NodeServices")),
    (m) => m.layer
  )
)

const argv = process.argv.slice(2)
runTree(makeHostnode(host), version, { observeWith: platform })(argv).pipe(
  Effect.provide(wantsWizard(argv) ? platform : layerParsing),
  runMain
)
