import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { APIError, Client, LeaseLost, NotFound, durationMs } from "../dist/index.js";

async function serve(t, answers) {
  const srv = createServer((req, res) => {
    const [status, body, headers] = answers.shift();
    res.writeHead(status, { "Content-Type": "application/json", ...headers });
    res.end(body);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => srv.close());
  return new Client(`http://127.0.0.1:${srv.address().port}`, "t", { backoffMs: 1 });
}

test("retries 503 and 429 honouring Retry-After", async (t) => {
  const c = await serve(t, [
    [503, '{"error":{"code":"unavailable","message":"x"}}', { "Retry-After": "0" }],
    [429, '{"error":{"code":"rate_limited","message":"x"}}', {}],
    [200, '{"id":"m1","conversation":{"id":"c","type":"dm"},"sender":{"id":"u"},"text":"hi","attachments":[]}', {}],
  ]);
  const m = await c.message("m1");
  assert.equal(m.text, "hi");
});

test("errors carry the API code", async (t) => {
  const c = await serve(t, [
    [404, '{"error":{"code":"not_found","message":"no such message"}}', {}],
    [409, '{"error":{"code":"lease_lost","message":"gone"}}', {}],
    [400, '{"error":{"code":"bad_request","message":"bad"}}', {}],
  ]);
  await assert.rejects(c.message("x"), (e) => e instanceof NotFound && e.code === "not_found");
  await assert.rejects(c.message("x"), LeaseLost);
  await assert.rejects(c.message("x"), (e) => e instanceof APIError && e.status === 400 && e.apiMessage === "bad");
});

test("durations", () => {
  assert.equal(durationMs("1m30s"), 90_000);
  assert.equal(durationMs("250ms"), 250);
});

test("sendStream appends each chunk with the next seq and finishes", async (t) => {
  const calls = [];
  const tries = {};
  const srv = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      const body = JSON.parse(raw || "{}");
      calls.push([req.url, body]);
      let status = 200;
      let out = { id: "s1", seq: body.seq ?? 0, finished: req.url.endsWith("/finish") };
      if (req.url === "/v1/outbound") {
        status = 202;
        out = { id: "s1", handoff_state: "queued" };
      } else if (req.url.endsWith("/append")) {
        tries[body.seq] = (tries[body.seq] ?? 0) + 1;
        if (body.seq === 2 && tries[2] === 1) {
          status = 503;
          out = { error: { code: "unavailable", message: "x" } };
        }
      }
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  t.after(() => srv.close());
  const c = new Client(`http://127.0.0.1:${srv.address().port}`, "t", { backoffMs: 1 });
  async function* chunks() {
    yield "Hello";
    yield "";
    yield ", ";
    yield "world";
  }
  const sent = await c.sendStream({ idempotency_key: "k", account_id: "a", conversation_id: "c" }, chunks());
  assert.equal(sent.id, "s1");
  assert.equal(calls[0][1].stream, true);
  assert.deepEqual(
    calls.slice(1).map(([u, b]) => [u, b.seq, b.text_delta]),
    [
      ["/v1/outbound/s1/append", 1, "Hello"],
      ["/v1/outbound/s1/append", 2, ", "],
      ["/v1/outbound/s1/append", 2, ", "],
      ["/v1/outbound/s1/append", 3, "world"],
      ["/v1/outbound/s1/finish", 3, undefined],
    ],
  );
});
