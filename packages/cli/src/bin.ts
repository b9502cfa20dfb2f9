#!/usr/bin/env node
/**
 * The `hostnode` executable: runs the command tree of `Cli.ts` on the real
 * host's services.
 *
 * @since 0.1.0
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import { run } from "./Cli.ts"

run(process.argv.slice(2)).pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
