/**
 * The workings of `NodeDns`: how a failed query is read (`classify`), and
 * the queries asked from another network namespace: a UDP socket made there
 * by a connector and handed over, and the A and AAAA queries and responses
 * encoded and decoded here (RFC 1035), as `node:dns` cannot send through a
 * socket it did not make.
 *
 * Internal: `NodeDns` is the public face.
 *
 * @since 0.4.0
 */
import * as Dgram from "node:dgram"
import { DnsResolvers } from "@hostnode/core"
import { Duration, Effect, Random } from "effect"
import { Dns, NetAddress } from "effect/net"
import * as Connector from "./connector.ts"

/** The c-ares code of a failed query (`EREFUSED`; node:dns's `DNS_` prefix dropped), when it has one. */
const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause
    ? String((cause as { readonly code: unknown }).code).replace(/^DNS_/, "")
    : undefined

/**
 * What a failed query amounts to, from its c-ares code (the real `DnsResolvers.classify`): a
 * DNS response came back, whatever its response code — NXDOMAIN and NODATA
 * (`NotFound`), SERVFAIL, a response that could not be used
 * (`InvalidResponse`, FORMERR), NOTIMP (`Unsupported` with `ENOTIMP`) and
 * REFUSED (`Refused` with `EREFUSED`) — or none did: a timeout, an
 * unreachable or closed port (`Refused` with `ECONNREFUSED`), and anything
 * unclassified. The detail is the reason and the code (`Refused (ECONNREFUSED)`).
 */
export const classify = (error: Dns.DnsError): DnsResolvers.QueryFailure => {
  const code = codeOf(error.cause)
  const detail = code === undefined ? error.reason : `${error.reason} (${code})`
  switch (error.reason) {
    case "NotFound":
    case "ServerFailure":
    case "InvalidResponse":
      return new DnsResolvers.QueryFailure({ _tag: "Responded", detail })
    case "Refused":
      return code === "EREFUSED"
        ? new DnsResolvers.QueryFailure({ _tag: "Responded", detail })
        : new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail })
    case "Unsupported":
      return code === "ENOTIMP"
        ? new DnsResolvers.QueryFailure({ _tag: "Responded", detail })
        : new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail })
    default:
      return new DnsResolvers.QueryFailure({ _tag: "NoResponse", detail })
  }
}

// ---------------------------------------------------------------------------
// Queries from another network namespace

// Runs in the target's network namespace: a UDP socket bound to an ephemeral
// port, handed to the parent over the IPC channel; exits when the parent lets go.
const connectorScript = `const s = require("node:dgram").createSocket(process.argv[1])
s.on("error", (e) => { process.stderr.write(e.message); process.exit(1) })
s.bind(0, () => process.send("bound", s, (e) => { if (e) { process.stderr.write(String(e)); process.exit(2) } }))
process.on("disconnect", () => process.exit(0))`

/**
 * Where a socket is made: a network namespace this process holds a
 * descriptor of, and why its owner is gone (then no socket is made).
 */
export interface Namespace {
  readonly net: number
  readonly gone: () => { readonly detail: string } | undefined
}

/** A UDP socket of network namespace `ns`, made by a connector entered there with `nsenter --net`. */
const socketIn = (ns: Namespace, family: "udp4" | "udp6", timeout: Duration.Duration) =>
  Effect.suspend(() => {
    const gone = ns.gone()
    return gone !== undefined ? Effect.fail(gone.detail) : Effect.void
  }).pipe(
    Effect.andThen(
      Connector.receive({
        enter: ["--net=/proc/self/fd/4"],
        fds: [ns.net],
        script: connectorScript,
        arg: family,
        isHandle: (h): h is Dgram.Socket => h instanceof Dgram.Socket,
        timeout
      })
    )
  )

const QueryTypes = { A: 1, AAAA: 28 } as const

/** A DNS query for `name` of `type`, recursion desired, as RFC 1035 lays it out; `undefined` for a name that has no wire form. */
const encodeQuery = (id: number, name: string, type: number): Uint8Array | undefined => {
  const labels = name.replace(/\.$/, "").split(".")
  const bytes: Array<number> = [id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
  for (const label of labels) {
    const encoded = new TextEncoder().encode(label)
    if (encoded.length === 0 || encoded.length > 63) return undefined
    bytes.push(encoded.length, ...encoded)
  }
  bytes.push(0, type >> 8, type & 0xff, 0, 1)
  return bytes.length - 12 > 255 + 4 ? undefined : new Uint8Array(bytes)
}

/** The offset just after the (possibly compressed) name at `at`, or -1 when it runs past the message. */
const skipName = (msg: Uint8Array, at: number): number => {
  let i = at
  while (i < msg.length) {
    const len = msg[i] as number
    if (len === 0) return i + 1
    if ((len & 0xc0) === 0xc0) return i + 2 <= msg.length ? i + 2 : -1
    i += len + 1
  }
  return -1
}

// What c-ares (node:dns) says for each response code, so `classify` reads both alike.
const rcodes: Record<number, { readonly reason: Dns.DnsErrorReason; readonly code: string }> = {
  1: { reason: "InvalidResponse", code: "EFORMERR" },
  2: { reason: "ServerFailure", code: "ESERVFAIL" },
  3: { reason: "NotFound", code: "ENOTFOUND" },
  4: { reason: "Unsupported", code: "ENOTIMP" },
  5: { reason: "Refused", code: "EREFUSED" }
}

/** The address records of `type` in response `msg`, or why there are none. */
const decodeResponse = (
  msg: Uint8Array,
  type: "A" | "AAAA"
): ReadonlyArray<Dns.DnsRecord> | { readonly reason: Dns.DnsErrorReason; readonly code: string } => {
  if (msg.length < 12) return { reason: "InvalidResponse", code: "EBADRESP" }
  const view = new DataView(msg.buffer, msg.byteOffset, msg.byteLength)
  const rcode = (msg[3] as number) & 0x0f
  if (rcode !== 0) return rcodes[rcode] ?? { reason: "Unknown", code: `RCODE${rcode}` }
  let at = 12
  for (let q = view.getUint16(4); q > 0; q--) {
    at = skipName(msg, at)
    if (at < 0) return { reason: "InvalidResponse", code: "EBADRESP" }
    at += 4
  }
  const records: Array<Dns.DnsRecord> = []
  for (let n = view.getUint16(6); n > 0; n--) {
    at = skipName(msg, at)
    if (at < 0 || at + 10 > msg.length) return { reason: "InvalidResponse", code: "EBADRESP" }
    const rtype = view.getUint16(at)
    const length = view.getUint16(at + 8)
    at += 10
    if (at + length > msg.length) return { reason: "InvalidResponse", code: "EBADRESP" }
    const data = msg.subarray(at, at + length)
    if (type === "A" && rtype === QueryTypes.A && length === 4) {
      records.push(Dns.makeRecordUnsafe("A", { address: NetAddress.ipv4FromBytesUnsafe(data) }))
    } else if (type === "AAAA" && rtype === QueryTypes.AAAA && length === 16) {
      records.push(Dns.makeRecordUnsafe("AAAA", { address: NetAddress.ipv6FromBytesUnsafe(data) }))
    }
    at += length
  }
  // NOERROR without a record of the type: what c-ares calls ENODATA.
  return records.length > 0 ? records : { reason: "NotFound", code: "ENODATA" }
}

/** One query of `name` to `server` port 53 on `socket`, answered by the first response with its id. */
const query = (
  socket: Dgram.Socket,
  server: string,
  name: string,
  type: Dns.RecordType,
  timeout: Duration.Duration
): Effect.Effect<ReadonlyArray<Dns.DnsRecord>, Dns.DnsError> => {
  const failed = (reason: Dns.DnsErrorReason, code: string) =>
    new Dns.DnsError({ reason, method: "resolve", hostname: name, recordType: type, cause: { code } })
  if (type !== "A" && type !== "AAAA") return Effect.fail(failed("Unsupported", "ENOTIMP"))
  return Effect.gen(function* () {
    const id = yield* Random.nextIntBetween(0, 0xffff)
    const packet = encodeQuery(id, name, QueryTypes[type])
    if (packet === undefined) return yield* failed("BadName", "EBADNAME")
    return yield* Effect.callback<ReadonlyArray<Dns.DnsRecord>, Dns.DnsError>((resume) => {
      const onMessage = (msg: Buffer, from: Dgram.RemoteInfo) => {
        if (from.address !== server || from.port !== 53 || msg.length < 4) return
        if (msg.readUInt16BE(0) !== id || ((msg[2] as number) & 0x80) === 0) return
        socket.off("message", onMessage)
        const r = decodeResponse(msg, type)
        resume("reason" in r ? Effect.fail(failed(r.reason, r.code)) : Effect.succeed(r))
      }
      socket.on("message", onMessage)
      socket.send(packet, 53, server, (e) => {
        if (e === null || e === undefined) return
        socket.off("message", onMessage)
        const code = (e as { readonly code?: unknown }).code
        resume(Effect.fail(failed("Unknown", typeof code === "string" ? code : e.message)))
      })
      return Effect.sync(() => socket.off("message", onMessage))
    }).pipe(Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(failed("Timeout", "ETIMEOUT")) }))
  })
}

/**
 * The `DnsResolvers` of a network namespace this process holds (see
 * `NodeDns.layerIn`): how the container composition asks from its pinned
 * container.
 */
export const makeInNamespace = (
  ns: Namespace,
  options?: { readonly connectTimeout?: Duration.Input | undefined }
): DnsResolvers.DnsResolvers =>
  DnsResolvers.DnsResolvers.of({
    forServer: (address, serverOptions) =>
      Effect.gen(function* () {
        const timeout = Duration.fromInputUnsafe(serverOptions.timeout)
        const connectTimeout = Duration.fromInputUnsafe(options?.connectTimeout ?? Duration.seconds(10))
        const socket = yield* Effect.acquireRelease(
          Effect.result(socketIn(ns, address.includes(":") ? "udp6" : "udp4", connectTimeout)),
          (r) => (r._tag === "Success" ? Effect.sync(() => r.success.close()) : Effect.void)
        )
        const resolve = (name: string, type: Dns.RecordType) =>
          socket._tag === "Failure"
            ? Effect.fail(
                new Dns.DnsError({
                  reason: "Unknown",
                  method: "resolve",
                  hostname: name,
                  recordType: type,
                  cause: { code: "ECONNECTOR", message: socket.failure }
                })
              )
            : query(socket.success, address, name, type, timeout)
        return Dns.make({
          lookup: (host, family) =>
            resolve(host, family === "IPv6" ? "AAAA" : "A").pipe(
              Effect.map((records) => records.flatMap((r) => (r._tag === "A" || r._tag === "AAAA" ? [r.address] : []))),
              Effect.mapError((e) => new Dns.DnsError({ ...e, method: "lookup" }))
            ),
          resolve
        })
      }),
    classify
  })
