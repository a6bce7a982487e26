import { test } from "node:test";
import assert from "node:assert/strict";
import { APIError, Client, ConsumerExists, LeaseLost, NotFound, Term } from "../dist/index.js";
import { ACCOUNT_ID, TOKEN, URL, inbound, skip, unique } from "./live.mjs";

const client = new Client(URL, TOKEN);

async function consumer(t, conversation, cfg = {}) {
  const c = client.consumer(unique("ts"));
  await c.put({ filter: { conversation_ids: [conversation] }, ...cfg });
  t.after(() => c.delete());
  return c;
}

test("pull and reply with ack", { skip }, async (t) => {
  const conv = unique("conv");
  const c = await consumer(t, conv);
  await inbound(conv, "hello typescript");
  const ds = await c.pull(10, 10);
  assert.equal(ds.length, 1);
  const d = ds[0];
  assert.equal(d.message.text, "hello typescript");
  assert.equal(d.message.conversation.id, conv);
  const sent = await c.reply(d, { text: "hi back" });
  assert.equal(sent.replayed, false);
  const again = await c.reply(d, { text: "hi back" });
  assert.equal(again.replayed, true);
  assert.equal(again.id, sent.id);
  await assert.rejects(c.reply(d, { text: "other", idempotency_key: unique("k") }), LeaseLost);
  const out = await client.outbound(sent.id);
  assert.equal(out.conversation_id, conv);
  assert.equal(out.account_id, ACCOUNT_ID);
  assert.equal((await c.get()).stats.ack_pending, 0);
});

test("conversation history", { skip }, async (t) => {
  const conv = unique("conv/ts"); // a "/" is path-escaped
  const c = await consumer(t, conv);
  await inbound(conv, "question");
  const [d] = await c.pull(1, 10);
  await c.reply(d, { text: "answer" });
  const page = await client.conversation(ACCOUNT_ID, conv);
  assert.deepEqual(page.items.map((i) => i.direction), ["inbound", "outbound"]);
  assert.equal(page.items[0].message.text, "question");
  assert.equal(page.items[1].outbound.text, "answer");
  assert.equal(page.next_cursor, undefined);
  const newest = await client.conversation(ACCOUNT_ID, conv, { limit: 1 });
  assert.deepEqual(newest.items.map((i) => i.direction), ["outbound"]);
  const older = await client.conversation(ACCOUNT_ID, conv, { limit: 1, before: newest.next_cursor });
  assert.deepEqual(older.items.map((i) => i.direction), ["inbound"]);
});

test("settle", { skip }, async (t) => {
  const conv = unique("conv");
  const c = await consumer(t, conv);
  await inbound(conv, "one");
  await inbound(conv, "two");
  let ds = [];
  for (let i = 0; i < 10 && ds.length < 2; i++) ds = ds.concat(await c.pull(10, 2));
  assert.equal(ds.length, 2);
  assert.ok((await c.extend(...ds)).every((r) => r.ok));
  assert.ok((await c.nak([ds[0]], 0))[0].ok);
  assert.ok((await c.term([ds[1]], "test"))[0].ok);
  const again = await c.pull(10, 10);
  assert.equal(again.length, 1);
  assert.equal(again[0].delivery_count, 2);
  assert.ok((await c.ack(again[0]))[0].ok);
  assert.equal((await c.ack(again[0]))[0].ok, false);
  assert.equal((await c.get()).stats.dead, 1);
});

test("async iterator with lease extension", { skip }, async (t) => {
  const conv = unique("conv");
  const c = await consumer(t, conv, { ack_wait: "1s" });
  await inbound(conv, "slow");
  await inbound(conv, "fast");
  const seen = [];
  for await (const d of c.messages({ batch: 10 })) {
    seen.push([d.message.text, d.delivery_count]);
    if (d.message.text === "slow") await new Promise((r) => setTimeout(r, 1500)); // > ack_wait: extended meanwhile
    await c.reply(d, { text: `re: ${d.message.text}` });
    if (seen.length === 2) break;
  }
  assert.deepEqual(seen.map((s) => s[1]), [1, 1], "no redelivery while held");
  const st = (await c.get()).stats;
  assert.equal(st.ack_pending, 0);
  assert.equal(st.redelivered, 0);
});

test("consume loop: ack, nak with backoff, term", { skip }, async (t) => {
  const conv = unique("conv");
  const c = await consumer(t, conv, { ack_wait: "2s" });
  for (const text of ["ok", "flaky", "poison"]) await inbound(conv, text);
  const seen = [];
  const ctl = new AbortController();
  const loop = c.consume(
    async (d) => {
      seen.push(`${d.message.text}/${d.delivery_count}`);
      if (d.message.text === "flaky" && d.delivery_count === 1) throw new Error("first try fails");
      if (d.message.text === "poison") throw new Term("cannot handle");
      if (seen.includes("flaky/2")) ctl.abort();
    },
    { batch: 10, concurrency: 4, signal: ctl.signal },
  );
  const timer = setTimeout(() => ctl.abort(), 20_000);
  await loop;
  clearTimeout(timer);
  assert.ok(seen.includes("flaky/2"), `a failed delivery comes back: ${seen}`);
  const st = (await c.get()).stats;
  assert.equal(st.ack_pending, 0);
  assert.equal(st.dead, 1);
});

test("send, edit, typing and errors", { skip }, async () => {
  const conv = unique("conv");
  const sent = await client.send({ idempotency_key: unique("k"), account_id: ACCOUNT_ID, conversation_id: conv, text: "thinking…" });
  assert.equal(sent.handoff_state, "queued");
  const edit = await client.edit(sent.id, { idempotency_key: unique("k"), account_id: ACCOUNT_ID, conversation_id: conv, text: "answer" });
  assert.equal((await client.outbound(edit.id)).edit_of, sent.id);
  assert.equal((await client.typing(ACCOUNT_ID, conv)).status, "unsupported");
  await assert.rejects(client.consumer("nobody-here").get(), NotFound);
  await assert.rejects(client.consumer(unique("bad")).put({ max_deliver: 0 }), (e) => e instanceof APIError && e.status === 400);
  await assert.rejects(client.attachment("00000000-0000-0000-0000-000000000001", "/dev/null"), NotFound);
  const once = client.consumer(unique("once"));
  assert.equal((await once.create({ deliver_policy: "new", ordering: "conversation" })).ordering, "conversation");
  await assert.rejects(once.create({ ordering: "none" }), ConsumerExists);
  assert.equal((await once.get()).ordering, "conversation", "create never changes a consumer");
  await once.delete();
});
