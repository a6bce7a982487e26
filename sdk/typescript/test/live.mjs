// Helpers for tests against a running MIO (env MIO_URL, MIO_TOKEN, MIO_WEBHOOK_URL, MIO_WEBHOOK_SECRET).
import { createHmac, randomUUID } from "node:crypto";

export const URL = process.env.MIO_URL ?? "";
export const TOKEN = process.env.MIO_TOKEN ?? "";
export const WEBHOOK_URL = process.env.MIO_WEBHOOK_URL ?? "";
export const WEBHOOK_SECRET = process.env.MIO_WEBHOOK_SECRET ?? "";
export const ACCOUNT_ID = WEBHOOK_URL.replace(/\/+$/, "").split("/").pop() ?? "";
export const skip = URL && TOKEN && WEBHOOK_URL ? false : "set MIO_URL, MIO_TOKEN, MIO_WEBHOOK_URL and MIO_WEBHOOK_SECRET";

export const unique = (prefix) => `${prefix}-${randomUUID().slice(0, 12)}`;

/** Posts one signed generic-webhook message (Standard Webhooks). */
export async function inbound(conversation, text) {
  const id = `msg_${randomUUID()}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const body = JSON.stringify({
    type: "message.created",
    timestamp: new Date().toISOString(),
    data: { conversation: { id: conversation }, sender: { id: "user-1" }, text },
  });
  const key = Buffer.from(WEBHOOK_SECRET.slice("whsec_".length), "base64");
  const sig = createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
  const resp = await fetch(WEBHOOK_URL, {
    method: "POST",
    headers: { "Content-Type": "application/json", "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${sig}` },
    body,
  });
  if (resp.status !== 200) throw new Error(`webhook answered ${resp.status}: ${await resp.text()}`);
}
