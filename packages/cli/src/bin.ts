#!/usr/bin/env node
/**
 * The `hostnode` executable: runs the command tree of `Cli.ts` on the real
 * host's services (`NodeHost.layer`). `Cli.run` fails with a `CliExit` whose
 * exit code the runtime uses (1: the operation failed, 2: bad usage); what
 * went wrong was already printed. Progress of long work is drawn on stderr
 * when `Stdio` says both stdout and stderr are terminals.
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { NodeHost } from "@hostnode/node"
import { Effect, Layer } from "effect"
import { run } from "./Cli.ts"
import * as Progress from "./Progress.ts"

// Progress only for a person watching: both streams on a terminal (asked of NodeHost's Stdio).
run(process.argv.slice(2)).pipe(
  Effect.provide(Progress.layerInteractive.pipe(Layer.provideMerge(NodeHost.layer))),
  NodeRuntime.runMain
)
