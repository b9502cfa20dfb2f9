/**
 * The LocalDNS interface: what `ip -j -d addr show dev <name>` says about it,
 * and the steps that create it (or recreate one of another kind), give it
 * exactly the listener addresses as /32s and bring it up.
 *
 * Internal: the setup in this directory runs the steps.
 *
 * @since 0.3.0
 */
import { Effect, Schema } from "effect"
import type { InterfaceKind } from "../agentConfig.ts"
import { expect, missingDevice, unexpectedOutput } from "./commands.ts"

const IpAddrInfo = Schema.Struct({
  family: Schema.optionalKey(Schema.String),
  local: Schema.optionalKey(Schema.String),
  prefixlen: Schema.optionalKey(Schema.Number)
})

const IpLink = Schema.Struct({
  ifindex: Schema.Number,
  ifname: Schema.String,
  flags: Schema.Array(Schema.String).pipe(Schema.withDecodingDefaultKey(Effect.succeed([]))),
  linkinfo: Schema.optionalKey(Schema.Struct({ info_kind: Schema.optionalKey(Schema.String) })),
  addr_info: Schema.Array(IpAddrInfo).pipe(Schema.withDecodingDefaultKey(Effect.succeed([])))
})

const IpLinks = Schema.fromJsonString(Schema.Array(IpLink))

/**
 * What `ip -j -d addr show dev <name>` says about an interface.
 */
export interface LinkState {
  readonly index: number
  readonly name: string
  /** The link kind (`dummy`, `bridge`, `veth`); empty for a link without one (`lo`). */
  readonly kind: string
  /** Administratively up. */
  readonly up: boolean
  /** The IPv4 addresses as `address/prefix`, in the order the kernel lists them. */
  readonly ipv4: ReadonlyArray<string>
}

/**
 * What `ip -j -d addr show dev <name>` says about an interface.
 */
export interface LinkState {
  readonly index: number
  readonly name: string
  /** The link kind (`dummy`, `bridge`, `veth`); empty for a link without one (`lo`). */
  readonly kind: string
  /** Administratively up. */
  readonly up: boolean
  /** The IPv4 addresses as `address/prefix`, in the order the kernel lists them. */
  readonly ipv4: ReadonlyArray<string>
}

/** The interface `name`, or `undefined` when there is none. */
export const showLink = Effect.fn("LocalDns.showLink")(function* (name: string) {
  const args = ["-j", "-d", "addr", "show", "dev", name]
  const out = yield* expect("inspect the interface", "ip", args, missingDevice)
  if (out.exitCode !== 0) return undefined
  const links = yield* Schema.decodeUnknownEffect(IpLinks)(out.stdout).pipe(
    Effect.mapError((e) => unexpectedOutput("inspect the interface", "ip", args, `cannot read ip's JSON: ${e.message}`))
  )
  const link = links.find((l) => l.ifname === name)
  if (link === undefined) return undefined
  return {
    index: link.ifindex,
    name: link.ifname,
    kind: link.linkinfo?.info_kind ?? "",
    up: link.flags.includes("UP"),
    ipv4: link.addr_info.flatMap((a) =>
      a.family === "inet" && a.local !== undefined && a.prefixlen !== undefined ? [`${a.local}/${a.prefixlen}`] : []
    )
  } satisfies LinkState
})

/** `ip addr del` saying the address is not there (any more). */
export const missingAddress = (o: { readonly stderr: string }): boolean =>
  /address not found|cannot assign/i.test(o.stderr)

/**
 * Makes interface `name` exist with kind `kind` and carry `addresses` as
 * /32s: an interface of another kind is deleted and created again. What it
 * creates is recorded in `created` (the interface, or the addresses it added
 * to one that was there) for the undo of a setup that fails later.
 */
export const ensureInterface = Effect.fnUntraced(function* (
  name: string,
  kind: InterfaceKind,
  addresses: ReadonlyArray<string>,
  created: { link: boolean; readonly addresses: Array<string> }
) {
  let link = yield* showLink(name)
  if (link !== undefined && link.kind !== kind) {
    // The one change a failed setup cannot undo: the old interface is gone.
    yield* Effect.logInfo("recreating the LocalDNS interface: it has another kind").pipe(
      Effect.annotateLogs({ found: link.kind, kind })
    )
    yield* expect("remove the interface of another kind", "ip", ["link", "del", "dev", name], missingDevice)
    link = undefined
  }
  if (link === undefined) {
    yield* expect("create the interface", "ip", ["link", "add", "name", name, "type", kind])
    created.link = true
    yield* Effect.logInfo("created the LocalDNS interface").pipe(Effect.annotateLogs({ kind }))
    link = yield* showLink(name)
    if (link === undefined) {
      return yield* unexpectedOutput(
        "create the interface",
        "ip",
        ["-j", "-d", "addr", "show", "dev", name],
        `${name} was created but is not listed`
      )
    }
  }
  const wanted = addresses.map((a) => `${a}/32`)
  for (const address of wanted.filter((a) => !link.ipv4.includes(a))) {
    yield* expect("add a listener address", "ip", ["addr", "add", address, "dev", name], (o) =>
      /already assigned|file exists/i.test(o.stderr)
    )
    if (!created.link) created.addresses.push(address)
    yield* Effect.logInfo("added a LocalDNS listener address").pipe(Effect.annotateLogs({ address }))
  }
  return link
})

/**
 * What setup changes but does not create: foreign addresses go and the
 * interface comes up. Done last, once everything that could fail and be
 * undone has succeeded.
 */
export const finishInterface = Effect.fnUntraced(function* (
  name: string,
  addresses: ReadonlyArray<string>,
  link: LinkState
) {
  const wanted = addresses.map((a) => `${a}/32`)
  for (const extra of link.ipv4.filter((a) => !wanted.includes(a))) {
    yield* expect(
      "remove a foreign address from the interface",
      "ip",
      ["addr", "del", extra, "dev", name],
      missingAddress
    )
    yield* Effect.logInfo("removed an address that is not a LocalDNS listener").pipe(
      Effect.annotateLogs({ address: extra })
    )
  }
  if (!link.up) {
    yield* expect("bring the interface up", "ip", ["link", "set", "dev", name, "up"])
    yield* Effect.logInfo("brought the LocalDNS interface up")
  }
})
