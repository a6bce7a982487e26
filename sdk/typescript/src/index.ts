/**
 * @mio/client — TypeScript client for MIO: pull inbound chat messages, reply with ack, send,
 * edit and show typing. Zero runtime dependencies; fetch (Node 18+).
 *
 * ```ts
 * import { Client } from "@mio/client";
 * const client = new Client("http://localhost:8080", token);
 * const agent = client.consumer("agent");
 * for await (const d of agent.messages()) await agent.reply(d, { text: `echo: ${d.message.text}` });
 * ```
 */
export { Client, Consumer, durationMs } from "./client.js";
export type { ClientOptions, ConsumeOptions } from "./client.js";
export { APIError, Conflict, ConsumerExists, LeaseLost, NotFound, Term } from "./errors.js";
export type * from "./types.js";
