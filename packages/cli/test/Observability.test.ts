/**
 * The CLI's logs and metrics: `--log-format json` (every stderr line of each
 * subcommand is one JSON object, log entries with their annotations and span,
 * and stdout is what a text run prints), the text log at `info` (one line per
 * operation, not the result again), and `--metrics-file` (Prometheus text
 * that a small parser of the format accepts, counts equal to the result, the
 * file replaced by a rename; a bad path refused before anything runs). In
 * process on `MemoryNode`, then as a process: the executable's stderr, and
 * the file replaced atomically under a concurrent reader.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostCommand } from "@hostnode/core"
import { MemoryHost, MemoryNode } from "@hostnode/sim"
import { Gate } from "@hostnode/test"
import { Effect, Fiber, FileSystem, Layer } from "effect"
import { TestConsole } from "effect/testing"
import { cliEnvironment, runCli } from "./harness.ts"

// ---------------------------------------------------------------------------
// Prometheus text format (version 0.0.4), as a scraper reads it

interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

interface Family {
  readonly type: string
  readonly help: string | undefined
  readonly samples: Array<Sample>
}

const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*$/

/** The label set of a sample line, `{a="x",b="y\"z"}`: escapes `\\`, `\"` and `\n`. */
const parseLabels = (text: string, line: string): Record<string, string> => {
  const labels: Record<string, string> = {}
  let i = 0
  while (i < text.length) {
    const eq = text.indexOf("=", i)
    if (eq === -1) throw new Error(`label without a value: ${line}`)
    const name = text.slice(i, eq)
    if (!labelName.test(name)) throw new Error(`bad label name ${JSON.stringify(name)}: ${line}`)
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value: ${line}`)
    let value = ""
    let j = eq + 2
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j]
        value += next === "n" ? "\n" : next === "\\" ? "\\" : next === '"' ? '"' : ""
        if (next !== "n" && next !== "\\" && next !== '"') throw new Error(`bad escape: ${line}`)
      } else value += text[j]
    }
    if (j >= text.length) throw new Error(`unterminated label value: ${line}`)
    if (name in labels) throw new Error(`label ${name} twice: ${line}`)
    labels[name] = value
    i = j + 1
    if (text[i] === ",") i++
    else if (i < text.length) throw new Error(`expected "," between labels: ${line}`)
  }
  return labels
}

/**
 * Parses the text format strictly: `# HELP` and `# TYPE` before a family's
 * samples, each family once, every sample of a declared family (a
 * histogram's `_bucket`, `_sum`, `_count`), label syntax, numbers (`+Inf`,
 * `-Inf`, `NaN`), a final newline. A histogram's buckets rise with `le` up to
 * `+Inf`, which equals its `_count`. Throws on anything else.
 */
const parsePrometheus = (text: string): ReadonlyMap<string, Family> => {
  if (text !== "" && !text.endsWith("\n")) throw new Error("the text does not end with a newline")
  const families = new Map<string, Family>()
  const pendingHelp = new Map<string, string>()
  const familyOf = (sample: string) => {
    for (const suffix of ["_bucket", "_sum", "_count"]) {
      const base = sample.endsWith(suffix) ? sample.slice(0, -suffix.length) : undefined
      if (base !== undefined && families.get(base)?.type === "histogram") return base
    }
    return sample
  }
  for (const line of text.split("\n").slice(0, -1)) {
    if (line.startsWith("# HELP ")) {
      const [, , name = "", ...rest] = line.split(" ")
      if (!metricName.test(name)) throw new Error(`bad metric name: ${line}`)
      pendingHelp.set(name, rest.join(" "))
      continue
    }
    if (line.startsWith("# TYPE ")) {
      const [, , name = "", type = "", extra] = line.split(" ")
      if (!metricName.test(name) || extra !== undefined) throw new Error(`bad TYPE line: ${line}`)
      if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(type)) throw new Error(`bad type: ${line}`)
      if (families.has(name)) throw new Error(`family ${name} declared twice`)
      families.set(name, { type, help: pendingHelp.get(name), samples: [] })
      continue
    }
    if (line.startsWith("#") || line === "") throw new Error(`unexpected line: ${JSON.stringify(line)}`)
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line)
    if (m === null) throw new Error(`bad sample line: ${line}`)
    const [, name = "", , labelText = "", valueText = ""] = m
    const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : Number(valueText)
    if (valueText !== "NaN" && Number.isNaN(value)) throw new Error(`bad value: ${line}`)
    const family = families.get(familyOf(name))
    if (family === undefined) throw new Error(`sample of an undeclared family: ${line}`)
    family.samples.push({ name, labels: parseLabels(labelText, line), value })
  }
  for (const [name, family] of families) {
    if (family.type !== "histogram") continue
    const series = new Map<string, Array<Sample>>()
    for (const s of family.samples.filter((s) => s.name === `${name}_bucket`)) {
      const { le: _, ...rest } = s.labels
      const key = JSON.stringify(rest)
      series.set(key, [...(series.get(key) ?? []), s])
    }
    for (const [key, buckets] of series) {
      const bounds = buckets.map((b) => (b.labels.le === "+Inf" ? Infinity : Number(b.labels.le)))
      for (let i = 1; i < buckets.length; i++) {
        if (!((bounds[i] ?? 0) > (bounds[i - 1] ?? 0))) throw new Error(`${name}${key}: le not rising`)
        if ((buckets[i]?.value ?? 0) < (buckets[i - 1]?.value ?? 0)) throw new Error(`${name}${key}: buckets fall`)
      }
      if (bounds.at(-1) !== Infinity) throw new Error(`${name}${key}: no +Inf bucket`)
      const count = family.samples.find((s) => s.name === `${name}_count` && JSON.stringify(s.labels) === key)?.value
      if (count !== buckets.at(-1)?.value) throw new Error(`${name}${key}: +Inf bucket is not _count`)
    }
  }
  return families
}

/** The value of the sample `name` whose labels include `labels` (exactly one must). */
const sampleOf = (
  families: ReadonlyMap<string, Family>,
  name: string,
  labels: Readonly<Record<string, string>> = {}
): number => {
  const all = [...families.values()].flatMap((f) => f.samples)
  const found = all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  assert.strictEqual(found.length, 1, `${name}${JSON.stringify(labels)}: ${found.length} samples`)
  return found[0]?.value ?? Number.NaN
}

describe("the Prometheus parser of these tests", () => {
  it("refuses what a scraper refuses", () => {
    for (const bad of [
      "x 1\n",
      "# TYPE x counter\nx 1",
      '# TYPE x counter\nx{a="1} 1\n',
      "# TYPE x counter\nx{a=1} 1\n",
      "# TYPE x counter\nx one\n",
      "# TYPE x counter\n# TYPE x counter\n",
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n'
    ]) {
      assert.throws(() => parsePrometheus(bad), undefined, undefined, bad)
    }
    const ok = parsePrometheus('# HELP x a counter\n# TYPE x counter\nx{a="q\\"t",b="n\\\\"} 3\n')
    assert.deepStrictEqual(ok.get("x")?.samples, [{ name: "x", labels: { a: 'q"t', b: "n\\" }, value: 3 }])
  })
})

// ---------------------------------------------------------------------------
// in process, on a simulated node

const pod = "/var/lib/kubelet/pods/5f0c"

/** A node with a pod (a tmpfs secret), CNI state, a unit, and a snapshot to restore. */
const seeded = {
  [`${pod}/volumes/kubernetes.io~secret/token/token`]: "s3cr3t",
  [`${pod}/etc-hosts`]: "127.0.0.1 localhost",
  "/etc/cni/net.d/10-bridge.conflist": "{}",
  "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
  "/var/lib/kubelet/pki/kubelet-client-2026.pem": "cert",
  "/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap",
  "/etc/systemd/system/kubelet.service": "[Service]\nExecStart=/usr/bin/kubelet\n",
  "/etc/kubernetes/kubelet.conf": "v1",
  "/srv/metrics": { directory: true }
} as const

/** Runs `argv` on a fresh node (a tmpfs on the pod's secret, the kubelet running), with a console of its own. */
const onFreshNode = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const host = yield* MemoryHost.MemoryHost
    yield* host.tmpfs(`${pod}/volumes/kubernetes.io~secret/token`)
    yield* Effect.orDie(runCli(["snapshot", "take", "--dir", "/srv/snap", "--path", "/etc/kubernetes"]))
    yield* Effect.orDie(runCli(["restart-changed", "--was-running", "kubelet.service"]))
    const outcome = yield* runCli(argv)
    return { ...outcome, tree: yield* host.dump("/srv") }
  }).pipe(Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: seeded }), cliEnvironment, TestConsole.layer)))

// Each subcommand, succeeding, failing, refused.
const runs: ReadonlyArray<ReadonlyArray<string>> = [
  ["unmount-below", "/var/lib/kubelet"],
  ["unmount-below", "relative"],
  ["snapshot", "take", "--dir", "/srv/other", "--path", "/etc/cni"],
  ["snapshot", "restore", "--dir", "/srv/snap"],
  ["snapshot", "restore", "--dir", "/srv/none"],
  ["snapshot", "recover", "--dir", "/srv/snap"],
  ["snapshot", "discard", "--dir", "/srv/snap"],
  ["snapshot"],
  ["reset-cni"],
  ["reset-kubelet-identity", "--auth", "bootstrap-token"],
  ["teardown-kubelet-dir"],
  ["restart-changed", "--was-running", "kubelet.service", "missing.service"],
  ["restart-changed", "kubelet"],
  ["localdns", "cleanup"],
  ["running"],
  ["reset-cni", "--bogus"],
  ["--host-root", "relative-root", "reset-cni"]
]

describe("--log-format json", () => {
  it.live(
    "every stderr line of each subcommand is one JSON object; stdout is what the text run prints",
    () =>
      Effect.gen(function* () {
        let checked = 0
        for (const argv of runs) {
          for (const extra of [[], ["--log-level", "debug"]]) {
            const what = [...extra, ...argv].join(" ")
            const text = yield* onFreshNode([...extra, ...argv])
            const json = yield* onFreshNode(["--log-format", "json", ...extra, ...argv])
            assert.strictEqual(json.code, text.code, what)
            assert.deepStrictEqual(json.stdout, text.stdout, what)
            checked += json.stderr.length
            for (const line of json.stderr) {
              assert.notInclude(line, "\n", `${what}: one line per entry`)
              const entry = JSON.parse(line)
              assert.isString(entry.timestamp, what)
              assert.include(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"], entry.level, what)
              assert.isString(entry.message, what)
              assert.isObject(entry.annotations, what)
            }
            const logged = json.stderr.map((l) => JSON.parse(l)).filter((e) => e.span !== undefined)
            if (what === "teardown-kubelet-dir") {
              // The operation's own log line: its annotations, and the span it was logged in.
              const line = logged.find((e) => e.message === "kubelet pod directories torn down")
              assert.deepInclude(line?.annotations, { kept: 0 })
              assert.isAbove(line?.annotations.removed, 0)
              assert.strictEqual(line?.span.name, "Repave.teardownKubeletDir")
              assert.match(line?.span.traceId ?? "", /^[0-9a-f]{32}$/)
              assert.match(line?.span.spanId ?? "", /^[0-9a-f]{16}$/)
            }
          }
        }
        // Log entries, debug ones included, and the CLI's own messages.
        assert.isAbove(checked, 40)
      }),
    { timeout: 120_000 }
  )

  it.effect("the CLI's own messages are JSON too, with the level they report", () =>
    Effect.gen(function* () {
      const bad = yield* onFreshNode(["--log-format", "json", "unmount-below", "/"])
      assert.strictEqual(bad.code, 2)
      const [refusal] = bad.stderr.map((l) => JSON.parse(l))
      assert.strictEqual(refusal.level, "ERROR")
      assert.include(refusal.message, "pass --allow-root")
      const relative = yield* onFreshNode(["--log-format", "json", "--host-root", "relative-root", "reset-cni"])
      assert.deepStrictEqual(
        relative.stderr.map((l) => JSON.parse(l).level),
        ["INFO", "ERROR"]
      )
      const usage = yield* onFreshNode(["--log-format", "json", "--json", "reset-cni", "--bogus"])
      assert.strictEqual(usage.code, 2)
      assert.strictEqual(JSON.parse(usage.stdout[0] ?? "").error._tag, "UsageError")
    })
  )
})

describe("the text log at info", () => {
  it.effect("says one line per operation, and not the result again", () =>
    Effect.gen(function* () {
      for (const argv of [
        ["teardown-kubelet-dir"],
        ["reset-cni"],
        ["unmount-below", "/var/lib/kubelet"],
        ["restart-changed", "--was-running", "kubelet.service"],
        ["snapshot", "restore", "--dir", "/srv/snap"]
      ]) {
        const { code, stdout, stderr } = yield* onFreshNode(argv)
        assert.strictEqual(code, 0, argv.join(" "))
        assert.strictEqual(stderr.length, 1, `${argv.join(" ")}: ${stderr.join("\n")}`)
        assert.notInclude(stderr[0], "\n")
        // The paths the result lists are on stdout only.
        for (const line of stdout
          .join("\n")
          .split("\n")
          .filter((l) => l.startsWith("  /"))) {
          assert.notInclude(stderr[0], line.trim(), argv.join(" "))
        }
      }
      const debug = yield* onFreshNode(["--log-level", "debug", "teardown-kubelet-dir"])
      assert.isTrue(debug.stderr.some((l) => l.includes("DEBUG") && l.includes("unmounted 1 mount(s)")))
    })
  )
})

describe("--metrics-file", () => {
  it.effect("the run's metrics as Prometheus text that parses, its counts those of the result", () =>
    Effect.gen(function* () {
      const { code, stdout, tree } = yield* onFreshNode([
        "--json",
        "--metrics-file",
        "/srv/metrics/hostnode.prom",
        "teardown-kubelet-dir"
      ])
      assert.strictEqual(code, 0)
      const result = JSON.parse(stdout[0] ?? "").result
      const file = tree["/srv/metrics/hostnode.prom"]
      assert.isDefined(file)
      const families = parsePrometheus(String(file && "content" in file ? file.content : ""))
      assert.strictEqual(families.get("hostnode_paths_removed_total")?.type, "counter")
      assert.strictEqual(
        sampleOf(families, "hostnode_paths_removed_total", { operation: "Repave.teardownKubeletDir" }),
        result.removed.length
      )
      assert.strictEqual(
        sampleOf(families, "hostnode_mounts_detached_total", { operation: "Unmount.unmountBelowByPrefix" }),
        1
      )
      assert.strictEqual(
        sampleOf(families, "hostnode_operation_duration_seconds_count", {
          operation: "Repave.teardownKubeletDir",
          outcome: "success"
        }),
        1
      )
      assert.strictEqual(sampleOf(families, "hostnode_cli_exit_code"), 0)
      // Only this run's metrics: not the take and restart the node was prepared with.
      assert.isUndefined(families.get("hostnode_snapshots_total"))
      assert.isUndefined(families.get("hostnode_unit_restarts_total"))
      // Renamed into place: no temporary file is left beside it.
      assert.deepStrictEqual(
        Object.keys(tree).filter((p) => p.startsWith("/srv/metrics/")),
        ["/srv/metrics/hostnode.prom"]
      )
    })
  )

  it.effect("written whatever the outcome: a failed run's metrics and exit code", () =>
    Effect.gen(function* () {
      const { code, tree } = yield* onFreshNode([
        "--metrics-file",
        "/srv/metrics/restart.prom",
        "restart-changed",
        "--was-running",
        "kubelet.service",
        "missing.service"
      ])
      assert.strictEqual(code, 1)
      const file = tree["/srv/metrics/restart.prom"]
      const families = parsePrometheus(String(file && "content" in file ? file.content : ""))
      assert.strictEqual(sampleOf(families, "hostnode_cli_exit_code"), 1)
      assert.strictEqual(
        sampleOf(families, "hostnode_unit_restarts_total", { systemd_unit: "kubelet.service", result: "restarted" }),
        1
      )
      assert.strictEqual(
        sampleOf(families, "hostnode_unit_restarts_total", { systemd_unit: "missing.service", result: "failed" }),
        1
      )
      assert.strictEqual(sampleOf(families, "hostnode_daemon_reloads_total", { policy: "always" }), 1)
    })
  )

  it.effect("a file there is replaced by a new one (a rename), never written in place", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const target = "/srv/metrics/hostnode.prom"
      yield* fs.writeFileString(target, "# old\n")
      // A reader holding the old file keeps reading the old content: it was replaced, not rewritten.
      const reader = yield* fs.open(target, { flag: "r" })
      const before = yield* fs.stat(target)
      const { code } = yield* runCli(["--metrics-file", target, "reset-cni"])
      assert.strictEqual(code, 0)
      const after = yield* fs.stat(target)
      assert.notDeepEqual(after.ino, before.ino)
      const old = new Uint8Array(6)
      yield* reader.read(old)
      assert.strictEqual(new TextDecoder().decode(old), "# old\n")
      assert.include(yield* fs.readFileString(target), "hostnode_paths_removed_total")
      assert.deepStrictEqual(yield* fs.readDirectory("/srv/metrics"), ["hostnode.prom"])
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(MemoryNode.layer({ files: seeded }), cliEnvironment)))
  )

  it.effect("a path whose directory does not exist is refused before anything runs (exit 2)", () =>
    Effect.gen(function* () {
      for (const path of ["/nowhere/hostnode.prom", "/srv/metrics", ""]) {
        const { code, stdout, stderr, tree } = yield* onFreshNode(["--metrics-file", path, "reset-cni"])
        assert.strictEqual(code, 2, path)
        assert.deepStrictEqual(stdout, [], path)
        assert.strictEqual(stderr.length, 1, path)
        assert.include(stderr[0], "--metrics-file")
        // Nothing was done: the CNI configuration is there.
        assert.isUndefined(tree["/srv/metrics/hostnode.prom"])
      }
      const kept = yield* onFreshNode(["--metrics-file", "/nowhere/x.prom", "--json", "reset-cni"])
      assert.strictEqual(kept.code, 2)
    })
  )
})

// ---------------------------------------------------------------------------
// the executable

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const node = [process.execPath, "--conditions=@hostnode/source", bin]
const hostnode = (args: ReadonlyArray<string>) => HostCommand.run(node[0] ?? "node", [...node.slice(1), ...args])

const readerGate = Gate.check("a concurrent reader of the metrics file", [{ command: "sh", args: ["-c", "true"] }])

describe.skipIf(readerGate.skip)("the hostnode executable's logs and metrics file", () => {
  it.live(
    "--log-format json on stderr, stdout unchanged; the metrics file replaced atomically under a concurrent reader",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "hostnode-metrics-" })
          const root = `${dir}/root`
          const seed = Effect.gen(function* () {
            yield* fs.makeDirectory(`${root}/etc/cni/net.d`, { recursive: true })
            yield* fs.writeFileString(`${root}/etc/cni/net.d/10-bridge.conflist`, "{}")
          })
          yield* seed
          const text = yield* hostnode(["--host-root", root, "reset-cni"])
          yield* seed
          const json = yield* hostnode(["--log-format", "json", "--host-root", root, "reset-cni"])
          assert.strictEqual(json.exitCode, 0, json.stderr)
          assert.strictEqual(json.stdout, text.stdout)
          const lines = json.stderr.split("\n").filter((l) => l !== "")
          assert.isAbove(lines.length, 0)
          for (const line of lines) assert.isObject(JSON.parse(line), line)

          // A reader that reads the file whole in a loop; every read must be a complete metrics file.
          const target = `${dir}/hostnode.prom`
          yield* fs.writeFileString(target, "# TYPE hostnode_cli_exit_code gauge\nhostnode_cli_exit_code 0\n")
          const reader = `i=0; bad=0; while [ ! -e ${dir}/stop ]; do c=$(cat ${target}); case "$c" in *"hostnode_cli_exit_code "*) ;; *) bad=$((bad+1));; esac; i=$((i+1)); done; echo "$i $bad"`
          const reading = yield* Effect.forkChild(HostCommand.run("sh", ["-c", reader]))
          for (let i = 0; i < 5; i++) {
            yield* seed
            const run = yield* hostnode(["--metrics-file", target, "--host-root", root, "reset-cni"])
            assert.strictEqual(run.exitCode, 0, run.stderr)
          }
          yield* fs.writeFileString(`${dir}/stop`, "")
          const result = yield* Fiber.join(reading)
          const [reads = 0, bad = -1] = result.stdout.trim().split(" ").map(Number)
          assert.isAbove(reads, 0)
          assert.strictEqual(bad, 0, "a read saw a partial file")
          const families = parsePrometheus(yield* fs.readFileString(target))
          assert.strictEqual(
            sampleOf(families, "hostnode_paths_removed_total", { operation: "Repave.resetCniState" }),
            1
          )
          // No temporary file left beside it.
          assert.deepStrictEqual((yield* fs.readDirectory(dir)).sort(), ["hostnode.prom", "root", "stop"])
        })
      ).pipe(Effect.provide(NodeServices.layer)),
    { timeout: 120_000 }
  )
})
