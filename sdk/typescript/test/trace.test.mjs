import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { trace, SpanKind } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { Client } from "../dist/index.js";

const TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

// A MIO with one traced delivery, recording each request's traceparent header.
async function serve(t) {
  const seen = [];
  let pulled = false;
  const srv = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    seen.push([req.url, req.headers.traceparent]);
    res.setHeader("Content-Type", "application/json");
    if (req.method === "GET") {
      res.end(JSON.stringify({ name: "c", ack_wait: "30s" }));
    } else if (req.url.endsWith("/pull")) {
      const ds = pulled ? [] : [{ delivery_id: "d1", seq: 1, delivery_count: 1, traceparent: TP,
        message: { id: "m1", conversation: { id: "c", type: "dm" }, sender: { id: "u" }, text: "hi", attachments: [] } }];
      pulled = true;
      res.end(JSON.stringify({ deliveries: ds }));
    } else if (req.url.endsWith("/reply")) {
      res.statusCode = 202;
      res.end('{"id":"o1","handoff_state":"queued"}');
    } else {
      const ids = JSON.parse(body || "{}").delivery_ids ?? [];
      res.end(JSON.stringify({ results: ids.map((id) => ({ delivery_id: id, ok: true })) }));
    }
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => srv.close());
  const client = new Client(`http://127.0.0.1:${srv.address().port}`, "t", { backoffMs: 1 });
  return { consumer: client.consumer("c"), replies: () => seen.filter(([u]) => u.endsWith("/reply")).map(([, tp]) => tp) };
}

test("a reply carries the delivery's traceparent", async (t) => {
  const { consumer, replies } = await serve(t);
  const [d] = await consumer.pull(1);
  assert.equal(d.traceparent, TP);
  await consumer.reply(d, { text: "hello" });
  assert.deepEqual(replies(), [TP]);
});

test("consume starts the handler span from the delivery and the reply carries it", async (t) => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  t.after(() => trace.disable());
  const { consumer, replies } = await serve(t);
  const stop = new AbortController();
  await consumer.consume(
    async (d) => {
      await consumer.reply(d, { text: "hello" });
      stop.abort();
    },
    { batch: 1, concurrency: 1, wait: 0.1, signal: stop.signal },
  );
  const span = exporter.getFinishedSpans().find((s) => s.name === "process c");
  assert.ok(span, "a handler span");
  assert.equal(span.kind, SpanKind.CONSUMER);
  assert.equal(span.spanContext().traceId, TP.slice(3, 35));
  assert.equal(span.parentSpanContext?.spanId ?? span.parentSpanId, TP.slice(36, 52));
  assert.deepEqual(replies(), [`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`]);
});
