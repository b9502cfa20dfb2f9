/**
 * The network phases' steps in order: the setup (interface, addresses and
 * rules, then what cannot be undone), the undo of a setup that failed
 * part-way, and the cleanup a repave runs. The listeners are already decoded
 * and the defaults applied: that, and the phases' spans and log annotations,
 * are `LocalDns`'s.
 *
 * Internal to `LocalDns`.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import type { InterfaceKind } from "../agentConfig.ts"
import { expect, missingDevice } from "./commands.ts"
import { ensureInterface, finishInterface, missingAddress } from "./link.ts"
import { deleteRule, ensureRules, isOurRule, listRules, type Rule } from "./rules.ts"

/**
 * What one setup created: the interface, addresses it added to an interface
 * that was already there, and rules. A setup that fails removes exactly these
 * before its error returns, so the host is as it found it.
 */
interface Created {
  link: boolean
  readonly addresses: Array<string>
  readonly rules: Array<Rule>
}

/**
 * Removes what a failed setup created (see {@link Created}), newest first.
 * Its own failures are logged: the setup's error is what the caller sees.
 */
const undo = (name: string, created: Created) =>
  Effect.gen(function* () {
    for (const rule of [...created.rules].reverse()) {
      yield* deleteRule(["-A", rule.chain, ...rule.spec], "undo a rule this setup added").pipe(
        Effect.tapError((e) => Effect.logWarning(`could not undo a rule: ${e.message}`)),
        Effect.ignore
      )
    }
    if (created.link) {
      yield* expect("undo the interface this setup created", "ip", ["link", "del", "dev", name], missingDevice).pipe(
        Effect.tapError((e) => Effect.logWarning(`could not remove the interface again: ${e.message}`)),
        Effect.ignore
      )
    } else {
      for (const address of created.addresses) {
        yield* expect(
          "undo an address this setup added",
          "ip",
          ["addr", "del", address, "dev", name],
          missingAddress
        ).pipe(
          Effect.tapError((e) => Effect.logWarning(`could not remove an address again: ${e.message}`)),
          Effect.ignore
        )
      }
    }
    const what = created.rules.length + (created.link ? 1 : created.addresses.length)
    if (what > 0) {
      yield* Effect.logInfo("setup failed; removed what it had created").pipe(
        Effect.annotateLogs({ link: created.link, addresses: created.addresses, rules: created.rules.length })
      )
    }
  })

/**
 * Interface `name` of `kind` carrying exactly `addresses` and up, and our
 * rules for them; on failure, what this run created is removed again.
 */
export const setup = (name: string, kind: InterfaceKind, addresses: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const created: Created = { link: false, addresses: [], rules: [] }
    return Effect.gen(function* () {
      // What can be undone first (the interface, our addresses, our rules),
      // then what cannot (foreign addresses removed, the link brought up).
      const link = yield* ensureInterface(name, kind, addresses, created)
      yield* ensureRules(addresses, created)
      yield* finishInterface(name, addresses, link)
    }).pipe(Effect.onError(() => undo(name, created)))
  })

/** Every rule of ours deleted (a missing `raw` table has none), then interface `name`; what is gone is success. */
export const cleanup = (name: string) =>
  Effect.gen(function* () {
    const listed = yield* Effect.result(listRules)
    if (listed._tag === "Failure" && listed.failure.reason._tag !== "TableUnavailable") return yield* listed.failure
    const ours = listed._tag === "Success" ? listed.success.filter(isOurRule) : []
    for (const words of ours) {
      yield* deleteRule(words, "delete a rule of ours")
      yield* Effect.logInfo("deleted a LocalDNS rule").pipe(Effect.annotateLogs({ rule: words.join(" ") }))
    }
    const del = yield* expect("delete the interface", "ip", ["link", "del", "dev", name], missingDevice)
    if (del.exitCode === 0) yield* Effect.logInfo("deleted the LocalDNS interface")
  })
