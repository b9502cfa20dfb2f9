#!/usr/bin/env node
/**
 * The `hostnode` executable: runs the command tree of `Cli.ts` on the real
 * host's services (`NodeHost.layer`). `Cli.run` fails with a `CliExit` whose
 * exit code the runtime uses (1: the operation failed, 2: bad usage); what
 * went wrong was already printed.
 *
 * @since 0.1.0
 */
import { NodeRuntime } from "@effect/platform-node"
import { NodeHost } from "@hostnode/node"
import { Effect } from "effect"
import { run } from "./Cli.ts"

run(process.argv.slice(2)).pipe(Effect.provide(NodeHost.layer), NodeRuntime.runMain)
