/**
 * Running `ip` and `iptables` for a LocalDNS step: argv arrays through the
 * `ChildProcessSpawner` in context (`HostCommand`), a command that cannot
 * start or that exits non-zero turned into a `LocalDnsError` whose reason is
 * classified from what the command printed, and the exits that mean "already
 * so" accepted where a step says so.
 *
 * Internal to `LocalDns`.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import type { ChildProcessSpawner } from "effect/process"
import * as HostCommand from "../../HostCommand.ts"
import type { LocalDnsError } from "../../LocalDnsError.ts"
import { Failure } from "../../LocalDnsError.ts"
import { networkError } from "./errors.ts"

/** The iptables table our rules live in: `raw`, where NOTRACK applies before conntrack sees a packet. */
export const Table = "raw"

/** The reason of a command that exited non-zero, from its stderr. */
const classify = (step: string, command: string, args: ReadonlyArray<string>, out: HostCommand.Output) => {
  const fields = { step, command, args: [...args], exitCode: out.exitCode, stderr: out.stderr }
  const s = out.stderr
  if (/permission denied|operation not permitted|you must be root/i.test(s))
    return new Failure({ _tag: "PermissionDenied", ...fields })
  if (/unknown device type|unknown link kind/i.test(s)) return new Failure({ _tag: "UnsupportedKind", ...fields })
  // legacy iptables says "Table does not exist"; iptables-nft 1.8 says "table 'raw' does not exist"
  if (/table does not exist|table '[^']*' does not exist|can't initialize iptables table/i.test(s))
    return new Failure({ _tag: "TableUnavailable", ...fields })
  if (/no chain\/target\/match by that name|couldn't load (target|match)|extension .* not found/i.test(s))
    return new Failure({ _tag: "ExtensionUnavailable", ...fields })
  return new Failure({ _tag: "CommandFailed", ...fields })
}

/** What a step run by {@link run} or {@link expect} is. */
export type Run = Effect.Effect<HostCommand.Output, LocalDnsError, ChildProcessSpawner.ChildProcessSpawner>

/** Runs a command for `step`; failing to start it is a `CommandUnavailable`, a non-zero exit is a result. */
export const run = (step: string, command: string, args: ReadonlyArray<string>): Run =>
  HostCommand.run(command, args).pipe(
    Effect.mapError((e) =>
      networkError(new Failure({ _tag: "CommandUnavailable", step, command, args: [...args], detail: e.reason.detail }))
    )
  )

/** Runs a command that must succeed; `ok` also accepts the exits that mean "already so". */
export const expect = (
  step: string,
  command: string,
  args: ReadonlyArray<string>,
  ok: (out: HostCommand.Output) => boolean = () => false
): Run =>
  Effect.flatMap(run(step, command, args), (out) =>
    out.exitCode === 0 || ok(out)
      ? Effect.succeed(out)
      : Effect.fail(networkError(classify(step, command, args, out) satisfies Failure))
  )

/** The error of a command that succeeded but printed what cannot be used. */
export const unexpectedOutput = (
  step: string,
  command: string,
  args: ReadonlyArray<string>,
  detail: string
): LocalDnsError => networkError(new Failure({ _tag: "UnexpectedOutput", step, command, args: [...args], detail }))

/** `ip` saying the device is not there: what deleting or inspecting a missing interface exits with. */
export const missingDevice = (out: HostCommand.Output): boolean => /does not exist|cannot find device/i.test(out.stderr)

/** `iptables -C` or `-D` saying there is no such rule. */
export const badRule = (out: HostCommand.Output): boolean =>
  out.exitCode === 1 && /bad rule|does a matching rule exist/i.test(out.stderr)

/** `iptables` arguments for our table, waiting for the xtables lock. */
export const iptables = (args: ReadonlyArray<string>): ReadonlyArray<string> => ["-w", "-t", Table, ...args]
