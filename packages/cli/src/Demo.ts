/**
 * `hostnode demo`: a guided run of the library's main operations on a
 * simulated Kubernetes node, for a person meeting hostnode for the first
 * time. It seeds a realistic node, then runs an upgrade that fails and is
 * rolled back by `Snapshot.scoped`, the same upgrade succeeding, and a
 * repave; every step is timed with the Effect `Clock`, and the run ends with
 * claims, each checked against the simulated host's state.
 *
 * Boundary: {@link run} builds and provides its own `MemoryNode.layer` (files,
 * mounts, systemd and network all in memory), so whatever the caller's
 * context holds (the real host's layers, `--host-root`), the demo never reads
 * or changes this machine. It returns a {@link DemoReport} and prints
 * nothing: the CLI prints it ({@link renderText}, or the report as JSON). The
 * claims are pure functions over what was observed ({@link rollbackClaims},
 * {@link upgradeClaims}, {@link repaveClaims}), so a test can feed them a
 * tampered observation.
 *
 * @since 0.1.0
 */
import type { DemoReport } from "./internal/demo/report.ts"
import { plural } from "./internal/text.ts"

export type {
  /**
   * What was observed before and after the repave.
   *
   * @since 0.1.0
   */
  RepaveObservation,
  /**
   * What was observed around the upgrade that fails and is rolled back.
   *
   * @since 0.1.0
   */
  RollbackObservation,
  /**
   * What was observed around the upgrade that succeeds.
   *
   * @since 0.1.0
   */
  UpgradeObservation
} from "./internal/demo/claims.ts"
export {
  /**
   * The claims about the repave, from what was observed.
   *
   * @since 0.1.0
   */
  repaveClaims,
  /**
   * The claims about the rolled-back upgrade, from what was observed.
   *
   * @since 0.1.0
   */
  rollbackClaims,
  /**
   * The claims about the upgrade that succeeds, from what was observed.
   *
   * @since 0.1.0
   */
  upgradeClaims
} from "./internal/demo/claims.ts"

export {
  /**
   * The unit whose restart the first upgrade makes fail.
   *
   * @since 0.1.0
   */
  FailingUnit,
  /**
   * Where the upgrades keep their configuration snapshot (the agent configuration directory, as `Hooks.snapshotDir` puts it).
   *
   * @since 0.1.0
   */
  SnapshotDir,
  /**
   * The node's units, in restart order (dependencies first), as the host-mode backend knows them.
   *
   * @since 0.1.0
   */
  Units,
  /**
   * The upgrade both upgrade steps write: containerd's configuration moves to
   * the version 3 schema, the kubelet gets another flag and a new drop-in.
   * Every path is inside `ConfSnap.DefaultPaths`, so the snapshot covers it.
   *
   * @since 0.1.0
   */
  UpgradeFiles,
  /**
   * Which unit reads a configuration path (the unit whose restart picks a change of it up).
   *
   * @since 0.1.0
   */
  unitOf
} from "./internal/demo/node.ts"
export type {
  /**
   * How a path differs between two images.
   *
   * @since 0.1.0
   */
  Difference,
  /**
   * Everything at and below some paths, by path: what a byte-for-byte comparison compares.
   *
   * @since 0.1.0
   */
  Image,
  /**
   * One path of a configuration {@link Image}: a file's mode and bytes, a directory's mode, a link's target, or nothing.
   *
   * @since 0.1.0
   */
  ImageEntry
} from "./internal/demo/observe.ts"
export {
  /**
   * Reads the image of `paths` from the host in context: each path, and each
   * path below a directory (except `exclude`, as the snapshot's walk skips
   * it), with file bytes read in full. A missing path is `Absent`.
   *
   * @since 0.1.0
   */
  captureImage,
  /**
   * The paths whose entries differ between `before` and `after` (present on one side only, or different), sorted.
   *
   * @since 0.1.0
   */
  diffImages,
  /**
   * How much an image holds: paths present, files among them, and their bytes.
   *
   * @since 0.1.0
   */
  imageSize,
  /**
   * The mount points strictly below `prefix` in a mount table, in table order.
   *
   * @since 0.1.0
   */
  mountsStrictlyBelow
} from "./internal/demo/observe.ts"
export type {
  /**
   * One claim of the verification summary: what is asserted, whether the simulated host bears it out, and the evidence.
   *
   * @since 0.1.0
   */
  Claim,
  /**
   * What {@link run} returns: the steps, the claims, and `ok` when every claim holds.
   *
   * @since 0.1.0
   */
  DemoReport,
  /**
   * One step as it ran: what it did, for a person (`lines`) and for a machine (`details`), and how long it took.
   *
   * @since 0.1.0
   */
  Step,
  /**
   * The steps of the demo, in order.
   *
   * @since 0.1.0
   */
  StepId
} from "./internal/demo/report.ts"
export {
  /**
   * A step failed in a way the demo does not expect (the seeding, the
   * successful upgrade or the repave returned an error): the demo cannot go
   * on, so there is no report. Names the step and what failed.
   *
   * @since 0.1.0
   */
  DemoError,
  /**
   * Why the demo stopped: a reason of {@link DemoError}.
   *
   * @since 0.3.0
   */
  DemoErrorReason,
  /**
   * Why: an operation of a step failed (the seeding, the successful upgrade or
   * the repave returned an error).
   *
   * @since 0.3.0
   */
  OperationFailed,
  /**
   * Why: a step ended otherwise than the demo arranged (the upgrade made to
   * fail succeeded).
   *
   * @since 0.3.0
   */
  UnexpectedOutcome
} from "./internal/demo/report.ts"
export type {
  /**
   * Seams for tests of the demo itself.
   *
   * @since 0.1.0
   */
  Options
} from "./internal/demo/steps.ts"
export {
  /**
   * The demo: seeds a fresh simulated node (its own `MemoryNode.layer`, never
   * the host in context), runs the three scenarios and checks every claim
   * against the simulated host. A claim that does not hold makes `ok` false;
   * an operation that fails unexpectedly is a {@link DemoError}.
   *
   * @since 0.1.0
   */
  run,
  /**
   * {@link run} with seams (see {@link Options}).
   *
   * @since 0.1.0
   */
  runWith
} from "./internal/demo/steps.ts"

const ms = (n: number) => `${n.toFixed(1)} ms`

/** `text` broken at spaces into lines of at most `width` (a longer word stays whole), continuation lines indented by `indent`. */
const wrap = (text: string, width: number, indent: string): ReadonlyArray<string> => {
  const lead = /^ */.exec(text)?.[0] ?? ""
  const out: Array<string> = []
  let line = lead
  for (const word of text.slice(lead.length).split(" ")) {
    if (line.trim() !== "" && line.length + 1 + word.length > width) {
      out.push(line)
      line = `${lead}${indent}${word}`
    } else {
      line = line.trim() === "" ? `${line}${word}` : `${line} ${word}`
    }
  }
  out.push(line)
  return out
}

/**
 * The report for a person: each step with its duration and what it did, then every claim with PASS or FAIL.
 *
 * @since 0.1.0
 */
export const renderText = (report: DemoReport): string => {
  const width = 110
  const out: Array<string> = [
    "hostnode demo: the library's operations on a simulated Kubernetes node",
    "Everything runs on an in-memory node (MemoryNode from @hostnode/test: files, mounts, systemd, network);",
    "nothing on this machine is read or changed.",
    ""
  ]
  report.steps.forEach((step, i) => {
    const head = `${i}. ${step.title}`
    out.push(
      `${head} ${".".repeat(Math.max(2, width - head.length - ms(step.durationMs).length - 2))} ${ms(step.durationMs)}`
    )
    for (const line of step.lines) out.push(...wrap(`   ${line}`, width, "  "))
    out.push("")
  })
  out.push(`Verification: ${plural(report.claims.length, "claim")}, each checked against the simulated host's state`)
  report.steps.forEach((step, i) => {
    const claims = report.claims.filter((c) => c.step === step.id)
    if (claims.length === 0) return
    out.push(`  after step ${i}:`)
    for (const c of claims) {
      out.push(...wrap(`    ${c.ok ? "PASS" : "FAIL"}  ${c.statement}`, width, "      "))
      out.push(...wrap(`          ${c.evidence}`, width, "  "))
    }
  })
  const passed = report.claims.filter((c) => c.ok).length
  out.push("")
  out.push(
    report.ok
      ? `All ${report.claims.length} claims hold. Total ${ms(report.durationMs)}.`
      : `${report.claims.length - passed} of ${report.claims.length} claims FAILED. Total ${ms(report.durationMs)}.`
  )
  return out.join("\n")
}

/**
 * The report as the one JSON document of `hostnode demo --json`: `ok`, the command, the steps and the summary.
 *
 * @since 0.1.0
 */
export const toJson = (report: DemoReport): Record<string, unknown> => {
  const passed = report.claims.filter((c) => c.ok).length
  return {
    ok: report.ok,
    command: "demo",
    result: {
      durationMs: report.durationMs,
      steps: report.steps,
      summary: { passed, failed: report.claims.length - passed, claims: report.claims }
    }
  }
}
