/**
 * The exporters of `telemetry.ts` around the repave step on the simulated
 * host: a collector (an HTTP server of this test) receives over OTLP the
 * operations' spans, with the attributes an operator filters by, and their
 * metrics; the Prometheus endpoint serves the same metrics.
 */
import { createServer } from "node:http"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { MemoryHost } from "@hostnode/test"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpClient, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { repave } from "./repave.ts"
import { otlp, prometheus } from "./telemetry.ts"

const pod = "/var/lib/kubelet/pods/5f0c"

const node = MemoryHost.layer({
  files: {
    [`${pod}/volumes/kubernetes.io~secret/token/.keep`]: "",
    "/var/lib/cni/networks/cbr0/10.244.0.7": "c0ffee",
    "/var/lib/kubelet/bootstrap-kubeconfig": "bootstrap"
  }
})

const repaveOnNode = Effect.gen(function* () {
  const host = yield* MemoryHost.MemoryHost
  yield* host.tmpfs(`${pod}/volumes/kubernetes.io~secret/token`)
  return yield* repave({
    nodeName: "node-a",
    apiServer: "https://10.0.0.1:6443",
    auth: {
      _tag: "BootstrapToken",
      token: Redacted.make("abcdef.0123456789abcdef"),
      bootstrapKubeconfig: "/var/lib/kubelet/bootstrap-kubeconfig"
    }
  })
}).pipe(Effect.provide(node))

/** The port `layer`'s HTTP server listens on, once built in the current scope. */
const portOf = <E>(layer: Layer.Layer<HttpServer.HttpServer, E>) =>
  Effect.map(Layer.build(layer), (context) => {
    const address = Context.get(context, HttpServer.HttpServer).address
    return address._tag === "UnixPathAddress" ? 0 : address.port
  })

// A collector: the body of every OTLP/HTTP request it receives, by path.
const collector = Effect.gen(function* () {
  const received: Array<{ readonly path: string; readonly body: unknown }> = []
  const routes = Layer.effectDiscard(
    Effect.gen(function* () {
      const router = yield* HttpRouter.HttpRouter
      for (const path of ["/v1/traces", "/v1/metrics", "/v1/logs"] as const) {
        yield* router.add(
          "POST",
          path,
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            received.push({ path, body: yield* request.json })
            return HttpServerResponse.text("{}", { contentType: "application/json" })
          }).pipe(Effect.orDie)
        )
      }
    })
  )
  const port = yield* portOf(
    HttpRouter.serve(routes).pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0 })))
  )
  return { received, url: `http://127.0.0.1:${port}` }
})

interface OtlpAttribute {
  readonly key: string
  readonly value: { readonly stringValue?: string; readonly intValue?: number | string }
}
interface OtlpSpan {
  readonly name: string
  readonly attributes: ReadonlyArray<OtlpAttribute>
}

const spansOf = (bodies: ReadonlyArray<unknown>): ReadonlyArray<OtlpSpan> =>
  bodies.flatMap((b) =>
    (
      (b as { resourceSpans?: ReadonlyArray<{ scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<OtlpSpan> }> }> })
        .resourceSpans ?? []
    ).flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))
  )

const metricNamesOf = (bodies: ReadonlyArray<unknown>): ReadonlyArray<string> =>
  bodies.flatMap((b) =>
    (
      (
        b as {
          resourceMetrics?: ReadonlyArray<{ scopeMetrics: ReadonlyArray<{ metrics: ReadonlyArray<{ name: string }> }> }>
        }
      ).resourceMetrics ?? []
    ).flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.name)))
  )

describe("telemetry", () => {
  it.live("the repave's spans, with their attributes, and its metrics reach an OTLP collector", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const c = yield* collector
        // The exporter layer closes with the program: what is batched is sent then.
        const report = yield* repaveOnNode.pipe(Effect.provide(otlp(c.url)))
        const spans = spansOf(c.received.filter((r) => r.path === "/v1/traces").map((r) => r.body))
        const teardown = spans.find((s) => s.name === "Repave.teardownKubeletDir")
        assert.isDefined(teardown, spans.map((s) => s.name).join(", "))
        const attribute = (key: string) => teardown?.attributes.find((a) => a.key === key)?.value
        assert.strictEqual(attribute("hostRoot")?.stringValue, "/")
        assert.strictEqual(Number(attribute("removed")?.intValue), report.podPaths)
        assert.isDefined(spans.find((s) => s.name === "Unmount.unmountStrictlyBelow"))
        const metrics = metricNamesOf(c.received.filter((r) => r.path === "/v1/metrics").map((r) => r.body))
        for (const name of [
          "hostnode_operation_duration_seconds",
          "hostnode_mounts_detached_total",
          "hostnode_paths_removed_total"
        ]) {
          assert.include(metrics, name)
        }
      })
    )
  )

  it.live("the Prometheus endpoint serves the operations' metrics", () =>
    Effect.scoped(
      Effect.gen(function* () {
        yield* repaveOnNode
        const port = yield* portOf(prometheus(0))
        const response = yield* HttpClient.get(`http://127.0.0.1:${port}/metrics`)
        const text = yield* response.text
        assert.strictEqual(response.status, 200)
        assert.include(text, "# TYPE hostnode_paths_removed_total counter")
        assert.match(text, /hostnode_paths_removed_total\{operation="Repave\.teardownKubeletDir"\} \d+/)
      })
    ).pipe(Effect.provide(NodeHttpClient.layerUndici))
  )
})
