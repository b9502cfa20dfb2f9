/**
 * The `ip` interpreter: links (`dummy`, `bridge`, `veth` pairs) and their
 * IPv4 addresses as a real kernel keeps them, and what iproute2 6.1 prints
 * for `ip [-j] [-d] addr|link show|add|del|set`, its error messages and exit
 * codes included.
 *
 * Internal to `MemoryNetwork`.
 *
 * @since 0.3.0
 */
import { Effect } from "effect"
import * as MemoryCommands from "../memoryCommands.ts"
import { formatIpv4, network, parseCidr } from "./addresses.ts"
import { type Link, linkLocal, macFor, orderedAddresses, type State, sortedLinks } from "./state.ts"

type Outcome = MemoryCommands.Result

const ok = MemoryCommands.ok
const fail = MemoryCommands.fail

const IFNAMSIZ = 16

const validIfname = (name: string) => name.length > 0 && name.length < IFNAMSIZ && !/[\s/:]/.test(name)

const addLink = (state: State, name: string, kind: string, peerName: string | undefined): Outcome => {
  if (!validIfname(name)) return fail(255, `Error: argument "${name}" is wrong: "name" not a valid ifname`)
  if (peerName !== undefined && !validIfname(peerName)) {
    return fail(255, `Error: argument "${peerName}" is wrong: "name" not a valid ifname`)
  }
  // The kernel looks the name up before the kind.
  if (state.links.has(name)) return fail(2, "RTNETLINK answers: File exists")
  if (!["dummy", "bridge", "veth"].includes(kind) || state.unsupportedKinds.includes(kind)) {
    return fail(2, "Error: Unknown device type.")
  }
  if (kind === "veth") {
    let peer = peerName
    if (peer === undefined) {
      let n = 0
      while (state.links.has(`veth${n}`)) n++
      peer = `veth${n}`
    }
    if (state.links.has(peer) || peer === name) return fail(2, "RTNETLINK answers: File exists")
    // The kernel creates the peer first: it gets the lower index.
    newLink(state, peer, kind, name)
    newLink(state, name, kind, peer)
    return ok()
  }
  newLink(state, name, kind, undefined)
  return ok()
}

/** A new link, down and without addresses, with the next index. */
const newLink = (state: State, name: string, kind: string, peer: string | undefined): void => {
  const index = state.nextIndex++
  state.links.set(name, { index, name, kind, up: false, everUp: false, mac: macFor(index, name), addresses: [], peer })
}

const deleteLink = (state: State, name: string): Outcome => {
  const link = state.links.get(name)
  if (link === undefined) return fail(1, `Cannot find device "${name}"`)
  if (link.kind === "") return fail(2, "RTNETLINK answers: Operation not supported")
  state.links.delete(name)
  if (link.peer !== undefined) state.links.delete(link.peer)
  return ok()
}

const addAddress = (state: State, name: string, cidr: string): Outcome => {
  const parsed = /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(cidr) ? parseCidr(cidr) : undefined
  if (parsed === undefined) return fail(1, `Error: any valid prefix is expected rather than "${cidr}".`)
  const link = state.links.get(name)
  if (link === undefined) return fail(1, `Cannot find device "${name}"`)
  if (link.addresses.some((a) => a.local === parsed.address && a.prefix === parsed.prefix)) {
    return fail(2, "Error: ipv4: Address already assigned.")
  }
  const secondary = link.addresses.some(
    (a) =>
      !a.secondary &&
      a.prefix === parsed.prefix &&
      network(a.local, a.prefix) === network(parsed.address, parsed.prefix)
  )
  link.addresses.push({ local: parsed.address, prefix: parsed.prefix, secondary })
  return ok()
}

const wildcardWarning = (address: string) =>
  `Warning: Executing wildcard deletion to stay compatible with old scripts.\n         Explicitly specify the prefix length (${address}/32) to avoid this warning.\n         This special behaviour is likely to disappear in further releases,\n         fix your scripts!\n`

const deleteAddress = (state: State, name: string, cidr: string): Outcome => {
  const parsed = /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(cidr) ? parseCidr(cidr) : undefined
  if (parsed === undefined) return fail(1, `Error: any valid prefix is expected rather than "${cidr}".`)
  const wildcard = !cidr.includes("/")
  const warning = wildcard ? wildcardWarning(cidr) : ""
  const link = state.links.get(name)
  if (link === undefined) return { stdout: "", stderr: `${warning}Cannot find device "${name}"\n`, exitCode: 1 }
  const found = link.addresses.find((a) => a.local === parsed.address && (wildcard || a.prefix === parsed.prefix))
  if (found === undefined) {
    return { stdout: "", stderr: `${warning}Error: ipv4: Address not found.\n`, exitCode: 2 }
  }
  link.addresses = link.addresses.filter(
    (a) =>
      a !== found &&
      // promote_secondaries is off: a primary takes its secondaries with it.
      !(
        !found.secondary &&
        a.secondary &&
        a.prefix === found.prefix &&
        network(a.local, a.prefix) === network(found.local, found.prefix)
      )
  )
  return { stdout: "", stderr: warning, exitCode: 0 }
}

const setLink = (state: State, name: string, up: boolean): Outcome => {
  const link = state.links.get(name)
  if (link === undefined) return fail(1, `Cannot find device "${name}"`)
  link.up = up
  if (up) link.everUp = true
  return ok()
}

// ---------------------------------------------------------------------------
// ip

const carrier = (state: State, link: Link): boolean => {
  if (!link.up) return false
  if (link.kind !== "veth") return true
  return link.peer !== undefined && state.links.get(link.peer)?.up === true
}

const linkJson = (state: State, link: Link, details: boolean, withAddresses: boolean): Record<string, unknown> => {
  const isLo = link.kind === ""
  const flags = isLo
    ? ["LOOPBACK", ...(link.up ? ["UP", "LOWER_UP"] : [])]
    : [
        ...(link.kind === "veth" && link.up && !carrier(state, link) ? ["NO-CARRIER"] : []),
        "BROADCAST",
        link.kind === "dummy" ? "NOARP" : "MULTICAST",
        ...(link.up ? ["UP"] : []),
        ...(carrier(state, link) ? ["LOWER_UP"] : []),
        ...(link.kind === "veth" && !(link.peer !== undefined && state.links.get(link.peer)?.up === true)
          ? ["M-DOWN"]
          : [])
      ]
  const operstate = !link.up
    ? "DOWN"
    : link.kind === "veth"
      ? carrier(state, link)
        ? "UP"
        : "LOWERLAYERDOWN"
      : "UNKNOWN"
  const out: Record<string, unknown> = { ifindex: link.index }
  if (link.peer !== undefined) out.link = link.peer
  Object.assign(out, {
    ifname: link.name,
    flags,
    mtu: isLo ? 65536 : 1500,
    qdisc: link.up || (link.everUp && (isLo || link.kind === "veth")) ? "noqueue" : "noop",
    operstate
  })
  if (!withAddresses) out.linkmode = "DEFAULT"
  Object.assign(out, {
    group: "default",
    txqlen: 1000,
    link_type: isLo ? "loopback" : "ether",
    address: link.mac,
    broadcast: isLo ? "00:00:00:00:00:00" : "ff:ff:ff:ff:ff:ff"
  })
  if (details) {
    Object.assign(out, {
      promiscuity: 0,
      allmulti: 0,
      min_mtu: isLo || link.kind === "dummy" ? 0 : 68,
      max_mtu: isLo || link.kind === "dummy" ? 0 : 65535
    })
    if (!isLo) out.linkinfo = { info_kind: link.kind }
    Object.assign(out, {
      num_tx_queues: link.kind === "veth" ? 2 : 1,
      num_rx_queues: link.kind === "veth" ? 2 : 1,
      gso_max_size: 65536,
      gso_max_segs: 65535,
      tso_max_size: isLo || link.kind === "veth" ? 524280 : 65536,
      tso_max_segs: 65535,
      gro_max_size: 65536
    })
  }
  if (withAddresses) {
    const v4 = orderedAddresses(link)
    const info: Array<Record<string, unknown>> = v4.map((a) => ({
      family: "inet",
      local: formatIpv4(a.local),
      prefixlen: a.prefix,
      // iproute2 gives 127.0.0.0/8 addresses host scope, every other address global scope.
      scope: a.local >>> 24 === 127 ? "host" : "global",
      ...(a.secondary ? { secondary: true } : {}),
      label: link.name,
      valid_life_time: 4294967295,
      preferred_life_time: 4294967295
    }))
    // The kernel adds the IPv6 link-local address once the link has carrier.
    if (isLo ? link.up : carrier(state, link)) {
      info.push({
        family: "inet6",
        local: isLo ? "::1" : linkLocal(link.mac),
        prefixlen: isLo ? 128 : 64,
        scope: isLo ? "host" : "link",
        valid_life_time: 4294967295,
        preferred_life_time: 4294967295
      })
    }
    out.addr_info = info
  }
  return out
}

const flagsText = (json: Record<string, unknown>) => (json.flags as ReadonlyArray<string>).join(",")

/** The plain-text form of one link (`ip addr show` / `ip link show`). */
const linkText = (state: State, link: Link, withAddresses: boolean): string => {
  const j = linkJson(state, link, false, withAddresses)
  const name = link.peer === undefined ? link.name : `${link.name}@${link.peer}`
  const mode = withAddresses ? "" : " mode DEFAULT"
  let out = `${link.index}: ${name}: <${flagsText(j)}> mtu ${j.mtu} qdisc ${j.qdisc} state ${j.operstate}${mode} group default qlen 1000\n`
  out += `    link/${j.link_type} ${j.address} brd ${j.broadcast}\n`
  if (withAddresses) {
    for (const a of (j.addr_info as ReadonlyArray<Record<string, unknown>>) ?? []) {
      const secondary = a.secondary === true ? " secondary" : ""
      // iproute2 ends an inet6 line with a blank where an inet line has its label.
      out +=
        a.family === "inet"
          ? `    inet ${a.local}/${a.prefixlen} scope ${a.scope}${secondary} ${a.label}\n`
          : `    inet6 ${a.local}/${a.prefixlen} scope ${a.scope} \n`
      out += "       valid_lft forever preferred_lft forever\n"
    }
  }
  return out
}

const matches = (word: string | undefined, full: string, min = 1) =>
  word !== undefined && word.length >= min && full.startsWith(word)

/** `dev NAME` or a bare `NAME` from `args`; the rest of the words. */
const devArg = (args: ReadonlyArray<string>): { readonly dev: string | undefined; readonly rest: Array<string> } => {
  let dev: string | undefined
  const rest: Array<string> = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string
    if (a === "dev") dev = args[++i]
    else rest.push(a)
  }
  return { dev, rest }
}

export const ipInterpreter =
  (state: State): MemoryCommands.Interpreter =>
  (args) =>
    Effect.sync(() => {
      let json = false
      let details = false
      let pretty = false
      let i = 0
      for (; i < args.length; i++) {
        const a = args[i] as string
        if (a === "-j" || a === "-json") json = true
        else if (a === "-d" || a === "-details") details = true
        else if (a === "-p" || a === "-pretty") pretty = true
        else if (a === "-4" || a === "-s" || a === "-stats") continue
        else if (a.startsWith("-")) return fail(255, `Option "${a}" is unknown, try "ip -help".`)
        else break
      }
      const object = args[i]
      const rest = args.slice(i + 1)
      const render = (links: ReadonlyArray<Link>, withAddresses: boolean): string =>
        json
          ? `${JSON.stringify(
              links.map((l) => linkJson(state, l, details, withAddresses)),
              undefined,
              pretty ? 4 : undefined
            )}\n`
          : links.map((l) => linkText(state, l, withAddresses)).join("")
      const show = (words: ReadonlyArray<string>, withAddresses: boolean): Outcome => {
        const { dev, rest: more } = devArg(words)
        const name = dev ?? more[0]
        if (name === undefined) return ok(render(sortedLinks(state), withAddresses))
        const link = state.links.get(name)
        if (link === undefined) return fail(1, `Device "${name}" does not exist.`)
        return ok(render([link], withAddresses))
      }
      if (matches(object, "address") || matches(object, "addr")) {
        const [command, ...words] = rest
        if (command === undefined || matches(command, "show") || matches(command, "list")) return show(words, true)
        if (command === "add" || command === "del" || matches(command, "delete", 3)) {
          const { dev, rest: more } = devArg(words)
          const cidr = more[0]
          if (cidr === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          if (dev === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          return command === "add" ? addAddress(state, dev, cidr) : deleteAddress(state, dev, cidr)
        }
        return fail(255, `Command "${command}" is unknown, try "ip address help".`)
      }
      if (matches(object, "link")) {
        const [command, ...words] = rest
        if (command === undefined || matches(command, "show") || matches(command, "list")) return show(words, false)
        if (command === "add") {
          let name: string | undefined
          let kind: string | undefined
          let peer: string | undefined
          for (let k = 0; k < words.length; k++) {
            const w = words[k] as string
            if (w === "name" || w === "dev") name = words[++k]
            else if (w === "type") {
              kind = words[++k]
              if (words[k + 1] === "peer") {
                k += 1
                if (words[k + 1] === "name") {
                  peer = words[k + 2]
                  k += 2
                }
              }
            } else if (name === undefined) name = w
          }
          if (name === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          if (kind === undefined) return fail(1, 'Not enough information: "type" argument is required')
          return addLink(state, name, kind, peer)
        }
        if (command === "del" || matches(command, "delete", 3)) {
          const { dev, rest: more } = devArg(words)
          const name = dev ?? more[0]
          if (name === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          return deleteLink(state, name)
        }
        if (command === "set") {
          const { dev, rest: more } = devArg(words)
          const name = dev ?? more.shift()
          if (name === undefined) return fail(1, 'Not enough information: "dev" argument is required.')
          let up: boolean | undefined
          for (const w of more) {
            if (w === "up") up = true
            else if (w === "down") up = false
            else return fail(255, `Error: either "dev" is duplicate, or "${w}" is a garbage.`)
          }
          if (!state.links.has(name)) return fail(1, `Cannot find device "${name}"`)
          return up === undefined ? ok() : setLink(state, name, up)
        }
        return fail(255, `Command "${command}" is unknown, try "ip link help".`)
      }
      if (object === undefined) return fail(255, "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }")
      return fail(1, `Object "${object}" is unknown, try "ip help".`)
    })
