/**
 * The agent's traces and metrics, exported by Effect's own exporter layers:
 * nothing in hostnode is configured. Every operation opens spans named
 * `Module.function` with the host root, prefixes, units and counts as
 * attributes, and updates the `Metrics` of `@hostnode/core` as it runs; an
 * agent provides the exporters it wants around its program:
 * `repave(node).pipe(Effect.provide(NodeHost.layer), Effect.provide(otlp(url)))`.
 */
import { createServer } from "node:http"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { Otlp, PrometheusMetrics } from "effect/observability"

/**
 * Traces, metrics and logs to an OpenTelemetry collector over OTLP/HTTP
 * (`baseUrl`/v1/traces, /v1/metrics, /v1/logs). What is still batched is
 * sent when the layer closes, so a one-shot run loses nothing.
 */
export const otlp = (baseUrl: string) =>
  Otlp.layerJson({ baseUrl, resource: { serviceName: "node-agent" } }).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** The same metrics for Prometheus to scrape, at `http://<node>:<port>/metrics`, while the agent runs. */
export const prometheus = (port: number) =>
  HttpRouter.serve(PrometheusMetrics.layerHttp()).pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { port })))
