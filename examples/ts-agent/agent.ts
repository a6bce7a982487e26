// An agent on MIO in TypeScript: pull, show typing, post a "thinking…" placeholder, then edit it
// with the final answer and acknowledge the delivery in the same transaction (reply with ack).
//
// The model is an offline stub (answer()). Configuration: MIO_URL and MIO_TOKEN, else the
// .mio/dev.json that `make run` (mio dev) writes. MIO_AGENT_MAX stops after that many messages.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "../../sdk/typescript/dist/index.js";

function settings(): { url: string; token: string } {
  const url = process.env.MIO_URL;
  const token = process.env.MIO_TOKEN;
  if (url && token) return { url, token };
  const dev = JSON.parse(readFileSync(join(process.env.MIO_DATA_DIR ?? ".mio", "dev.json"), "utf8"));
  return { url: dev.public_url, token: dev.api_token };
}

/** The offline stand-in for a model: takes a moment, then answers. */
async function answer(question: string): Promise<string> {
  await new Promise((r) => setTimeout(r, 500));
  return `You said "${question}". (${question.split(/\s+/).length} words; a real model would say more.)`;
}

const { url, token } = settings();
const client = new Client(url, token);
const agent = client.consumer(process.env.MIO_CONSUMER ?? "ts-agent");
await agent.put({ ack_wait: "30s", deliver_policy: "new" }); // from its first start on; durable after
const limit = Number(process.env.MIO_AGENT_MAX ?? "0");
const stop = new AbortController();
process.on("SIGINT", () => stop.abort());
let handled = 0;
console.log(`ts-agent: consuming from ${url} (Ctrl-C to stop)`);

for await (const d of agent.messages({ batch: 10, signal: stop.signal, onError: (e) => console.error("error:", e) })) {
  const m = d.message;
  if (m.sender.is_bot || !m.text) {
    await agent.ack(d);
    continue;
  }
  // 1. Typing: best effort, never queued behind sends.
  await client.typing(m.account_id, m.conversation.id, m.thread_id);
  // 2. A placeholder, idempotent by message id: a redelivery reuses it.
  const placeholder = await client.send({
    idempotency_key: `thinking:${m.id}`,
    account_id: m.account_id,
    conversation_id: m.conversation.id,
    thread_id: m.thread_id,
    text: "thinking…",
  });
  // 3. The answer edits the placeholder, and the delivery is acked in the same transaction.
  const sent = await agent.reply(d, { text: await answer(m.text), edit_of: placeholder.id, idempotency_key: `answer:${m.id}` });
  console.log(`answered ${m.id} in ${m.conversation.id}: outbound ${sent.id}`);
  if (limit && ++handled >= limit) break;
}
