/**
 * Mount table parser benchmark (issue 26): `Layers.parseMountInfo` against the
 * parser of moby/sys's mountinfo package (Go, `GetMountsFromReader`, what
 * runc, containerd and the kubelet's mount-utils family read mountinfo with),
 * on tables of 75,000 and 300,000 lines written to the real disk (the system
 * temporary directory). Each row is a process of its own reading the same
 * file, three rounds of them with the rows taking turns: the median and range
 * of every parse of the text already in memory, the memory the parsed table
 * keeps (after a collection, divided by its entries), and the process's peak
 * resident set (medians over the rounds).
 *
 * The Go program is ours (a main.go that feeds the file's bytes to
 * `mountinfo.GetMountsFromReader`), built here when Go is installed and
 * HOSTNODE_MOBY_SYS names a checkout of github.com/moby/sys (its mountinfo
 * module is used as it is; its golang.org/x/sys dependency is taken from
 * HOSTNODE_GO_X_SYS, default Debian's golang-golang-x-sys-dev). Without them
 * the Go rows are skipped with a note, and the ratios are against the first
 * row that ran.
 *
 * Usage: npm run bench -- mountinfo   (child rows: node bench/mountinfo.ts row KIND FILE RUNS)
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { NodeRuntime } from "@effect/platform-node"
import { FileName, type MountInfo } from "@hostnode/core"
import * as Layers from "@hostnode/core/Layers"
import { Clock, Console, Effect } from "effect"

/** What one row's process reports. */
interface Measured {
  readonly ms: ReadonlyArray<number>
  readonly entries: number
  readonly retainedBytes: number
  readonly peakKiB: number
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)
const heap = () => {
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

/** What a parsed table costs a reader, by row kind: the parse alone, or the parse and reading its entries. */
const kinds = {
  parse: (table: ReadonlyArray<MountInfo.MountEntry>) => table.length,
  "parse + every mount point": (table: ReadonlyArray<MountInfo.MountEntry>) => {
    let n = 0
    for (const e of table) n += e.mountPoint.length
    return n
  },
  "parse + every entry built": (table: ReadonlyArray<MountInfo.MountEntry>) => {
    let n = 0
    for (const e of table) n += e.root.length + e.optionalFields.length + e.superOptions.length
    return n
  }
} as const

type Kind = keyof typeof kinds

/** A child row: parses the file `runs` times, prints what it measured as one JSON line. */
const row = (kind: Kind, file: string, runs: number) =>
  Effect.gen(function* () {
    const text = FileName.decode(readFileSync(file))
    const read = kinds[kind]
    const ms: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const start = yield* Clock.currentTimeNanos
      read(yield* Layers.parseMountInfo(text))
      ms.push(Number((yield* Clock.currentTimeNanos) - start) / 1e6)
    }
    gc()
    gc()
    const before = heap()
    const kept = yield* Layers.parseMountInfo(text)
    read(kept)
    gc()
    gc()
    const retainedBytes = heap() - before
    const measured: Measured = {
      ms,
      entries: kept.length,
      retainedBytes,
      peakKiB: process.resourceUsage().maxRSS
    }
    yield* Console.log(JSON.stringify(measured))
  })

const goMain = `package main

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
)

// Parses the file's bytes with moby/sys's GetMountsFromReader RUNS times and
// prints, as one JSON line, each parse's milliseconds, the entries, the heap
// the last result keeps, and the peak resident set (KiB).
func main() {
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	runs, _ := strconv.Atoi(os.Args[2])
	ms := []float64{}
	for i := 0; i < runs; i++ {
		start := time.Now()
		if _, err := mountinfo.GetMountsFromReader(bytes.NewReader(data), nil); err != nil {
			panic(err)
		}
		ms = append(ms, float64(time.Since(start).Nanoseconds())/1e6)
	}
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	before := m.HeapAlloc
	kept, err := mountinfo.GetMountsFromReader(bytes.NewReader(data), nil)
	if err != nil {
		panic(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	retained := int64(m.HeapAlloc) - int64(before)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	out, _ := json.Marshal(map[string]interface{}{"ms": ms, "entries": len(kept), "retainedBytes": retained, "peakKiB": ru.Maxrss})
	runtime.KeepAlive(kept)
	os.Stdout.Write(append(out, '\\n'))
}
`

/** Builds the Go program in `dir`, or says why it cannot. */
const buildGo = (dir: string): { readonly binary: string } | { readonly skipped: string } => {
  const moby = process.env.HOSTNODE_MOBY_SYS
  const xsys = process.env.HOSTNODE_GO_X_SYS ?? "/usr/share/gocode/src/golang.org/x/sys"
  if (spawnSync("go", ["version"]).status !== 0) return { skipped: "no `go` on PATH" }
  if (moby === undefined || !existsSync(join(moby, "mountinfo", "go.mod"))) {
    return { skipped: "HOSTNODE_MOBY_SYS does not name a checkout of github.com/moby/sys (with mountinfo/go.mod)" }
  }
  if (!existsSync(join(xsys, "go.mod"))) {
    return { skipped: `no golang.org/x/sys at ${xsys} (HOSTNODE_GO_X_SYS; Debian: golang-golang-x-sys-dev)` }
  }
  const src = join(dir, "go")
  mkdirSync(src)
  writeFileSync(join(src, "main.go"), goMain)
  writeFileSync(
    join(src, "go.mod"),
    `module hostnode.bench/mountinfo

go 1.18

require github.com/moby/sys/mountinfo v0.0.0

replace github.com/moby/sys/mountinfo => ${join(moby, "mountinfo")}

replace golang.org/x/sys => ${xsys}
`
  )
  const binary = join(dir, "moby-mountinfo")
  const built = spawnSync("go", ["build", "-mod=mod", "-o", binary, "."], {
    cwd: src,
    encoding: "utf8",
    env: {
      ...process.env,
      GOPROXY: "off",
      GOFLAGS: "-mod=mod",
      GOCACHE: join(dir, "gocache"),
      GOPATH: join(dir, "gopath")
    }
  })
  return built.status === 0 ? { binary } : { skipped: `go build failed: ${built.stderr.trim()}` }
}

/** A table of `lines` entries as a node with many pod volumes has them (a few names escaped). */
const tableOf = (lines: number): string =>
  Layers.renderMountInfo(
    Array.from({ length: lines }, (_, i) => ({
      id: 100 + i,
      parentId: i < 10 ? 1 : 99 + (i % 1000),
      major: 0,
      minor: 50 + (i % 1000),
      root: "/",
      mountPoint: `/var/lib/kubelet/pods/${i.toString(16).padStart(8, "0")}-4a1b-9c2d-8e3f-0123456789ab/volumes/kubernetes.io~${i % 50 === 0 ? "csi/pvc 1" : "projected"}/kube-api-access-${i % 97}`,
      mountOptions: "rw,relatime",
      optionalFields: i % 3 === 0 ? ["shared:5"] : i % 3 === 1 ? ["master:1"] : [],
      fsType: "tmpfs",
      source: "tmpfs",
      superOptions: "rw,size=3932160k,inode64"
    }))
  )

const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
const medianOf = (xs: ReadonlyArray<number>) => sorted(xs)[Math.floor(xs.length / 2)] ?? Number.NaN
const fmt = (ms: number) => `${ms.toFixed(1)} ms`

const run = (argv: ReadonlyArray<string>): Measured => {
  const r = spawnSync(argv[0] ?? "", argv.slice(1), { encoding: "utf8", maxBuffer: 1 << 24 })
  if (r.status !== 0) throw new Error(`${argv.join(" ")} exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "")
}

const Main = Effect.gen(function* () {
  const dir = mkdtempSync(join(tmpdir(), "hostnode-bench-mountinfo-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const go = buildGo(dir)
  const self = fileURLToPath(import.meta.url)
  const node = (kind: Kind, file: string, runs: number) => [
    process.execPath,
    "--expose-gc",
    "--conditions=@hostnode/source",
    self,
    "row",
    kind,
    file,
    String(runs)
  ]
  for (const [lines, runs] of [
    [75_000, 5],
    [300_000, 3]
  ] as const) {
    const file = join(dir, `mountinfo-${lines}`)
    const text = tableOf(lines)
    writeFileSync(file, text)
    // The rows take turns, a process each per round, so that load from elsewhere on the machine falls on all alike.
    const cases: ReadonlyArray<{ readonly name: string; readonly argv: ReadonlyArray<string> | undefined }> = [
      {
        name: "moby/sys mountinfo.GetMountsFromReader (Go)",
        argv: "binary" in go ? [go.binary, file, String(runs)] : undefined
      },
      { name: "Layers.parseMountInfo", argv: node("parse", file, runs) },
      {
        name: "Layers.parseMountInfo, then every entry's mount point read",
        argv: node("parse + every mount point", file, runs)
      },
      { name: "Layers.parseMountInfo, then every entry built", argv: node("parse + every entry built", file, runs) }
    ]
    const rounds: Array<Array<Measured>> = cases.map(() => [])
    for (let round = 0; round < 3; round++) {
      for (const [j, c] of cases.entries()) if (c.argv !== undefined) rounds[j]?.push(run(c.argv))
    }
    const rows = cases.map((c, j) => {
      const all = rounds[j] ?? []
      const m: Measured | undefined =
        all.length === 0
          ? undefined
          : {
              ms: all.flatMap((r) => r.ms),
              entries: all[0]?.entries ?? 0,
              retainedBytes: medianOf(all.map((r) => r.retainedBytes)),
              peakKiB: medianOf(all.map((r) => r.peakKiB))
            }
      return { name: c.name, m, note: "binary" in go || j > 0 ? undefined : `skipped: ${go.skipped}` }
    })
    const base = rows.find((r) => r.m !== undefined)
    const baseMs = base?.m === undefined ? Number.NaN : medianOf(base.m.ms)
    yield* Console.log(
      `\n### mountinfo: ${lines.toLocaleString("en")} lines (${(text.length / 1e6).toFixed(1)} MB), median and range of 3 rounds of ${runs} parses (a process per row and round, the rows taking turns)\n`
    )
    yield* Console.log(
      `| case | median | range | ratio to ${base?.name ?? "-"} | kept per entry | peak memory | note |`
    )
    yield* Console.log("|---|---|---|---|---|---|---|")
    for (const r of rows) {
      if (r.m === undefined) {
        yield* Console.log(`| ${r.name} | | | | | | ${r.note ?? ""} |`)
        continue
      }
      const med = medianOf(r.m.ms)
      const s = sorted(r.m.ms)
      const perEntry = r.m.retainedBytes / r.m.entries
      const target =
        r.name === "Layers.parseMountInfo" && base !== r && base?.name.includes("Go")
          ? `target <= 1.0x Go and <= 150 bytes/entry: ${med <= baseMs && perEntry <= 150 ? "met" : "not met"}`
          : ""
      yield* Console.log(
        `| ${r.name} | ${fmt(med)} | ${fmt(s[0] ?? Number.NaN)}–${fmt(s.at(-1) ?? Number.NaN)} | ${(med / baseMs).toFixed(2)}x | ${Math.round(perEntry)} B | ${(r.m.peakKiB / 1024).toFixed(1)} MiB | ${target} |`
      )
    }
  }
}).pipe(Effect.scoped)

const [mode, kind, file, runs] = process.argv.slice(2)
NodeRuntime.runMain(mode === "row" ? row(kind as Kind, file ?? "", Number(runs ?? 5)) : Main)
