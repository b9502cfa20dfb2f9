/**
 * The LocalDNS readiness wait: one resolver per listener (from
 * `DnsResolvers`), rounds of probes on a `Schedule` until every listener has
 * answered or the deadline has passed, and the `Timeout` naming those that
 * never did. Whether a failed query still counts as an answer is the
 * resolvers' `classify`: the error codes behind it are the implementation's.
 *
 * Internal to `LocalDns`, which decodes the listeners and applies the
 * defaults.
 *
 * @since 0.3.0
 */
import { Clock, Duration, Effect, Schedule } from "effect"
import * as DnsResolvers from "../../DnsResolvers.ts"
import { LocalDnsError, Timeout } from "../../LocalDnsError.ts"
import type { Listener } from "../nodeStart.ts"

/** How the wait probes, every default applied. */
export interface ProbeSettings {
  readonly timeout: Duration.Duration
  readonly interval: Duration.Duration
  readonly probeTimeout: Duration.Duration
  readonly probeName: string
}

class NotYet {
  readonly _tag = "NotYet"
}

/**
 * Probes `listeners` until each answered (a listener that answered is not
 * asked again), or fails with a `Timeout` once the next round would start
 * after the deadline. Needs a scope: the resolvers live in it.
 */
export const untilAnswered = (listeners: ReadonlyArray<Listener>, settings: ProbeSettings) =>
  Effect.gen(function* () {
    const { timeout, interval, probeTimeout, probeName } = settings
    const resolvers = yield* DnsResolvers.DnsResolvers
    const pending = new Map<string, { listener: Listener; ask: Effect.Effect<string | undefined> }>()
    for (const listener of listeners) {
      const dns = yield* resolvers.forServer(listener.address, { timeout: probeTimeout })
      // undefined: answered; else why not.
      const ask = dns.resolve(probeName, "A").pipe(
        Effect.as(undefined),
        Effect.catchTag("DnsError", (e) => {
          const failure = resolvers.classify(e)
          return Effect.succeed(failure._tag === "Responded" ? undefined : failure.detail)
        }),
        Effect.timeoutOrElse({
          duration: probeTimeout,
          orElse: () => Effect.succeed(`no answer within ${Duration.format(probeTimeout)}`)
        })
      )
      pending.set(listener.address, { listener, ask })
    }
    const lastReason = new Map<string, string>(listeners.map((l) => [l.address, "not asked"]))
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(timeout)
    let attempts = 0
    const round = Effect.gen(function* () {
      attempts++
      const outcomes = yield* Effect.forEach(
        [...pending.values()],
        (p) => Effect.map(p.ask, (reason) => ({ listener: p.listener, reason })),
        { concurrency: "unbounded" }
      )
      for (const { listener, reason } of outcomes) {
        if (reason === undefined) {
          pending.delete(listener.address)
          yield* Effect.logInfo("LocalDNS listener answered").pipe(
            Effect.annotateLogs({ listener: listener.name, address: listener.address, attempt: attempts })
          )
        } else {
          lastReason.set(listener.address, reason)
        }
      }
      if (pending.size === 0) return
      yield* Effect.logDebug("LocalDNS not answering yet").pipe(
        Effect.annotateLogs({
          attempt: attempts,
          waitingFor: [...pending.values()].map((p) => `${p.listener.name} ${p.listener.address}`)
        })
      )
      return yield* Effect.fail(new NotYet())
    })
    const intervalMillis = Duration.toMillis(interval)
    const schedule = Schedule.spaced(interval).pipe(Schedule.while(({ now }) => now + intervalMillis <= deadline))
    yield* round.pipe(
      Effect.retry({ schedule }),
      Effect.catchTag("NotYet", () =>
        Effect.fail(
          new LocalDnsError({
            reason: new Timeout({
              listeners: [...pending.values()].map((p) => ({
                name: p.listener.name,
                address: p.listener.address,
                reason: lastReason.get(p.listener.address) ?? "not asked"
              })),
              answered: listeners.filter((l) => !pending.has(l.address)).map((l) => l.address),
              attempts,
              timeoutMillis: Duration.toMillis(timeout)
            })
          })
        )
      ),
      Effect.tapError((e) => Effect.logWarning(e.message).pipe(Effect.annotateLogs({ attempts }))),
      Effect.tap(() =>
        Effect.logInfo("LocalDNS is answering on every listener").pipe(Effect.annotateLogs({ attempts }))
      )
    )
  })
