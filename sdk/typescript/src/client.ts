import { APIError, LeaseLost, Term, apiError } from "./errors.js";
import { activeTraceparent, startHandlerSpan } from "./trace.js";
import type {
  ConsumerConfig,
  ConsumerInfo,
  ConversationPage,
  Delivery,
  Message,
  OutboundStatus,
  ReactionCommand,
  RichContent,
  SendCommand,
  Sent,
  SettleResult,
  StreamFinish,
  TypingResult,
} from "./types.js";

const RETRY_STATUS = new Set([429, 502, 503, 504]);

export interface ClientOptions {
  /** Attempts in all for 429/502/503/504 answers and network errors. Default 5. */
  retries?: number;
  /** First backoff in ms (doubled per attempt, full jitter). Default 100. */
  backoffMs?: number;
  /** Largest backoff in ms. Default 5000. */
  maxBackoffMs?: number;
  /** Per-request timeout in ms, added to a pull's wait. Default 70000. */
  timeoutMs?: number;
  /** fetch implementation. Default globalThis.fetch (Node 18+). */
  fetch?: typeof fetch;
}

/** Seconds (number) or a Go duration string → a Go duration string. */
function duration(v: string | number | undefined): string | undefined {
  if (v === undefined) return undefined;
  return typeof v === "string" ? v : `${Math.round(v * 1000)}ms`;
}

/** A Go duration string ("1m30s", "250ms") → milliseconds. */
export function durationMs(d: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, "µs": 0.001, ns: 1e-6 };
  let total = 0;
  const re = /([0-9.]+)(ms|us|µs|ns|h|m|s)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(d)) !== null) total += parseFloat(m[1]!) * units[m[2]!]!;
  return total;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Answer<T> {
  status: number;
  body: T;
}

/** A MIO API client: `new Client(baseUrl, token)`. */
export class Client {
  readonly baseUrl: string;
  private readonly opts: Required<Omit<ClientOptions, "fetch">> & { fetch: typeof fetch };

  constructor(
    baseUrl: string,
    private readonly token: string,
    opts: ClientOptions = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.opts = {
      retries: Math.max(1, opts.retries ?? 5),
      backoffMs: opts.backoffMs ?? 100,
      maxBackoffMs: opts.maxBackoffMs ?? 5000,
      timeoutMs: opts.timeoutMs ?? 70_000,
      fetch: opts.fetch ?? globalThis.fetch.bind(globalThis),
    };
  }

  /** Sends a request, retrying per the policy; returns the raw Response of a 2xx. */
  async request(method: string, path: string, body?: unknown, timeoutMs?: number, traceparent?: string, extra?: Record<string, string>): Promise<Response> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    traceparent ||= activeTraceparent();
    let last: Error = new Error("mio: no attempt");
    for (let attempt = 0; attempt < this.opts.retries; attempt++) {
      let wait = Math.random() * Math.min(this.opts.backoffMs * 2 ** attempt, this.opts.maxBackoffMs);
      try {
        const headers: Record<string, string> = { Authorization: `Bearer ${this.token}`, "User-Agent": "mio-typescript/0.1" };
        if (data !== undefined) headers["Content-Type"] = "application/json";
        if (traceparent) headers.traceparent = traceparent;
        Object.assign(headers, extra);
        const resp = await this.opts.fetch(this.baseUrl + path, {
          method,
          headers,
          body: data,
          signal: AbortSignal.timeout(timeoutMs ?? this.opts.timeoutMs),
        });
        if (resp.ok) return resp;
        const text = await resp.text();
        let code = "";
        let message = text;
        try {
          const e = JSON.parse(text).error;
          code = e.code ?? "";
          message = e.message ?? "";
        } catch {
          // not an API error body
        }
        last = apiError(resp.status, code, message);
        if (!RETRY_STATUS.has(resp.status)) throw last;
        const ra = Number(resp.headers.get("Retry-After"));
        if (Number.isFinite(ra) && ra > 0) wait = Math.max(wait, ra * 1000);
      } catch (e) {
        if (e instanceof APIError && !RETRY_STATUS.has(e.status)) throw e;
        if (!(e instanceof APIError)) last = new Error(`mio: ${method} ${path}: ${(e as Error).message}`);
      }
      if (attempt + 1 < this.opts.retries) await sleep(wait);
    }
    throw last;
  }

  /** A JSON request; undefined body for empty answers. */
  async call<T>(method: string, path: string, body?: unknown, timeoutMs?: number, traceparent?: string, headers?: Record<string, string>): Promise<Answer<T>> {
    const resp = await this.request(method, path, body, timeoutMs, traceparent, headers);
    const text = await resp.text();
    return { status: resp.status, body: (text.trim() ? JSON.parse(text) : undefined) as T };
  }

  /** The durable consumer called name (created with put). */
  consumer(name: string): Consumer {
    return new Consumer(this, name);
  }

  async message(id: string): Promise<Message> {
    return (await this.call<Message>("GET", `/v1/messages/${encodeURIComponent(id)}`)).body;
  }

  /**
   * Queues a SendCommand (POST /v1/outbound); with ack, the delivery is acknowledged in the same transaction.
   * The send carries traceparent, else the active OpenTelemetry span's, else ack's: its dispatch joins that trace.
   */
  async send(cmd: SendCommand & { ack?: Delivery; traceparent?: string }): Promise<Sent> {
    const { ack, traceparent, ...rest } = cmd;
    const body: Record<string, unknown> = { ...rest };
    if (ack) body.ack = { consumer: ack.consumer, delivery_id: ack.delivery_id };
    const tp = traceparent || activeTraceparent() || ack?.traceparent;
    const a = await this.call<{ id: string; handoff_state: string }>("POST", "/v1/outbound", body, undefined, tp);
    return { ...a.body, replayed: a.status === 200 };
  }

  /**
   * Adds text to an open streamed reply as the client's append seq (1, 2, 3…). A seq already taken is
   * answered as before, so a retry is safe; a gap or an append after the finish rejects with a 409 APIError.
   */
  async streamAppend(outboundId: string, seq: number, textDelta: string): Promise<void> {
    await this.call("POST", `/v1/outbound/${encodeURIComponent(outboundId)}/append`, { seq, text_delta: textDelta });
  }

  /** Finishes a streamed reply; finishing it again is answered as before. */
  async streamFinish(outboundId: string, finish: StreamFinish = {}): Promise<void> {
    await this.call("POST", `/v1/outbound/${encodeURIComponent(outboundId)}/finish`, finish);
  }

  /**
   * Sends a reply whose text grows while it is written: opens a stream with cmd (its text, which may be
   * empty, is the start), appends each chunk of an (async) iterable in order (seq 1, 2, 3…, each retried
   * with its own seq), then finishes it — also when the iterable throws, with what was appended, before
   * rethrowing. Each chunk is one request: pass a few words at a time rather than single tokens.
   */
  async sendStream(
    cmd: SendCommand & { ack?: Delivery },
    chunks: AsyncIterable<string> | Iterable<string>,
  ): Promise<Sent> {
    const sent = await this.send({ ...cmd, stream: true });
    let seq = 0;
    try {
      for await (const chunk of chunks) {
        if (!chunk) continue;
        seq++;
        await this.streamAppend(sent.id, seq, chunk);
      }
    } finally {
      await this.streamFinish(sent.id, { seq });
    }
    return sent;
  }

  /** Edits an earlier outbound message (a send with edit_of). */
  async edit(outboundId: string, cmd: SendCommand): Promise<Sent> {
    return this.send({ ...cmd, edit_of: outboundId });
  }

  /** Queues a reaction to a platform message through the outbox (POST /v1/reactions); outbound(id) follows it. */
  async react(cmd: ReactionCommand): Promise<Sent> {
    const a = await this.call<{ id: string; handoff_state: string }>("POST", "/v1/reactions", cmd);
    return { ...a.body, replayed: a.status === 200 };
  }

  async outbound(id: string): Promise<OutboundStatus> {
    return (await this.call<OutboundStatus>("GET", `/v1/outbound/${encodeURIComponent(id)}`)).body;
  }

  /** A conversation's inbound and outbound messages, oldest first: the newest page, or the page before `before` (a previous page's next_cursor). */
  async conversation(accountId: string, conversationId: string, opts: { limit?: number; before?: string } = {}): Promise<ConversationPage> {
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set("limit", String(opts.limit));
    if (opts.before) q.set("before", opts.before);
    const path = `/v1/conversations/${encodeURIComponent(accountId)}/${encodeURIComponent(conversationId)}/messages`;
    const qs = q.toString();
    return (await this.call<ConversationPage>("GET", qs ? `${path}?${qs}` : path)).body;
  }

  /** Shows the bot as typing (best effort): status sent, unsupported, throttled or failed. */
  async typing(accountId: string, conversationId: string, threadId?: string): Promise<TypingResult> {
    const body: Record<string, string> = { account_id: accountId, conversation_id: conversationId };
    if (threadId) body.thread_id = threadId;
    return (await this.call<TypingResult>("POST", "/v1/conversations/typing", body)).body;
  }

  /** Streams an attachment's bytes to a file (Node); returns the byte count. */
  async attachment(id: string, path: string): Promise<number> {
    const resp = await this.request("GET", `/v1/attachments/${encodeURIComponent(id)}`);
    const [{ createWriteStream }, { Readable, Transform }, { pipeline }] = await Promise.all([
      import("node:fs"),
      import("node:stream"),
      import("node:stream/promises"),
    ]);
    let n = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        n += chunk.length;
        cb(null, chunk);
      },
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    await pipeline(Readable.fromWeb(resp.body as any), count, createWriteStream(path));
    return n;
  }
}

/** Options of Consumer.messages and Consumer.consume. */
export interface ConsumeOptions {
  /** Deliveries pulled at once (and in flight at most). Default 10. */
  batch?: number;
  /** Long-poll wait per pull, seconds (the loop checks signal between pulls). Default 1. */
  wait?: number;
  /** Stops the loop. */
  signal?: AbortSignal;
  /** Reports errors the loop survives (a failed pull, a failed ack, a handler's error). */
  onError?: (e: unknown) => void;
}

/** A durable consumer: pull, ack/nak/term/extend, reply with ack, an async iterator and a consume loop. */
export class Consumer {
  private readonly path: string;
  /** Deliveries handed out and not yet settled, whose leases are kept alive. */
  private readonly held = new Map<string, number>();
  /** The traceparent of each running handler's span (consume, with OpenTelemetry). */
  private readonly handlerSpans = new Map<string, string>();

  constructor(
    readonly client: Client,
    readonly name: string,
  ) {
    this.path = `/v1/consumers/${encodeURIComponent(name)}`;
  }

  async put(cfg: ConsumerConfig = {}): Promise<ConsumerInfo> {
    return (await this.client.call<ConsumerInfo>("PUT", this.path, cfg)).body;
  }

  /**
   * Creates the consumer, never changing one that exists (PUT with If-None-Match: *): a consumer by
   * that name, created before or concurrently, throws ConsumerExists and is left as it is.
   */
  async create(cfg: ConsumerConfig = {}): Promise<ConsumerInfo> {
    return (await this.client.call<ConsumerInfo>("PUT", this.path, cfg, undefined, undefined, { "If-None-Match": "*" })).body;
  }

  async get(): Promise<ConsumerInfo> {
    return (await this.client.call<ConsumerInfo>("GET", this.path)).body;
  }

  async delete(): Promise<void> {
    await this.client.call("DELETE", this.path);
  }

  /** Leases up to batch messages, long-polling up to wait seconds. */
  async pull(batch = 10, wait = 0): Promise<Delivery[]> {
    const a = await this.client.call<{ deliveries: Omit<Delivery, "consumer">[] }>(
      "POST",
      `${this.path}/pull`,
      { batch, wait: duration(wait) },
      wait * 1000 + 70_000,
    );
    return (a.body.deliveries ?? []).map((d) => ({ ...d, consumer: this.name }));
  }

  private async settle(action: string, ds: (string | Delivery)[], extra: Record<string, unknown> = {}): Promise<SettleResult[]> {
    const ids = ds.map((d) => (typeof d === "string" ? d : d.delivery_id));
    if (action !== "extend") for (const id of ids) this.held.delete(id);
    const a = await this.client.call<{ results: SettleResult[] }>("POST", `${this.path}/${action}`, { delivery_ids: ids, ...extra });
    return a.body.results;
  }

  ack(...ds: (string | Delivery)[]): Promise<SettleResult[]> {
    return this.settle("ack", ds);
  }

  /** Delivers again after delaySeconds. */
  nak(ds: (string | Delivery)[], delaySeconds?: number): Promise<SettleResult[]> {
    return this.settle("nak", ds, delaySeconds ? { delay: duration(delaySeconds) } : {});
  }

  term(ds: (string | Delivery)[], reason?: string): Promise<SettleResult[]> {
    return this.settle("term", ds, reason ? { reason } : {});
  }

  extend(...ds: (string | Delivery)[]): Promise<SettleResult[]> {
    return this.settle("extend", ds);
  }

  /**
   * Answers delivery and acknowledges it in ONE server transaction: both happen or neither.
   * Account, conversation and thread default to the delivered message's; the default
   * idempotency key is "reply:" + delivery id, so a retry after a lost answer returns the first
   * reply. Throws LeaseLost when the lease is gone (nothing was written). The reply carries
   * traceparent, else its handler span's (consume, with OpenTelemetry), else the active span's,
   * else the delivery's: its dispatch joins the message's trace.
   */
  async reply(
    d: Delivery,
    cmd: Omit<SendCommand, "idempotency_key"> & { idempotency_key?: string; rich?: RichContent | Record<string, unknown>; traceparent?: string },
  ): Promise<Sent> {
    const { rich, traceparent, ...rest } = cmd;
    const body: Record<string, unknown> = { idempotency_key: `reply:${d.delivery_id}`, ...rest, delivery_id: d.delivery_id };
    if (rich) body.rich_content = rich;
    this.held.delete(d.delivery_id);
    const tp = traceparent || this.handlerSpans.get(d.delivery_id) || activeTraceparent() || d.traceparent;
    const a = await this.client.call<{ id: string; handoff_state: string }>("POST", `${this.path}/reply`, body, undefined, tp);
    return { ...a.body, replayed: a.status === 200 };
  }

  /** Keeps the leases of held deliveries alive every third of ack_wait until stopped. */
  private keeper(ackWaitMs: number, onError: (e: unknown) => void): () => void {
    const timer = setInterval(() => {
      const ids = [...this.held.keys()];
      if (ids.length > 0) this.settle("extend", ids).catch(onError);
    }, Math.max(ackWaitMs / 3, 200));
    timer.unref?.();
    return () => clearInterval(timer);
  }

  /**
   * Deliveries, one at a time: `for await (const d of consumer.messages()) { … consumer.reply(d, …) }`.
   * A delivery's lease is extended until it is settled (ack, nak, term or reply) or the loop ends.
   */
  async *messages(opts: ConsumeOptions = {}): AsyncGenerator<Delivery, void, undefined> {
    const batch = opts.batch ?? 10;
    const onError = opts.onError ?? (() => {});
    const stop = this.keeper(durationMs((await this.get()).ack_wait) || 30_000, onError);
    try {
      while (!opts.signal?.aborted) {
        let ds: Delivery[];
        try {
          ds = await this.pull(batch, opts.wait ?? 1);
        } catch (e) {
          onError(e);
          continue;
        }
        for (const d of ds) this.held.set(d.delivery_id, Date.now());
        for (const d of ds) yield d;
      }
    } finally {
      stop();
      this.held.clear();
    }
  }

  /**
   * Runs handler on every delivery until signal aborts, up to concurrency at once. A handler that
   * resolves acks the delivery (batched; unless it settled it itself, e.g. with reply); one that
   * throws Term terminates it; any other error naks it with backoff 1s, 2s, 4s … by
   * delivery_count (up to 60s). Leases are extended while deliveries wait or run.
   */
  async consume(handler: (d: Delivery) => Promise<void> | void, opts: ConsumeOptions & { concurrency?: number } = {}): Promise<void> {
    const batch = opts.batch ?? 10;
    const concurrency = opts.concurrency ?? 4;
    const ackDelayMs = 20;
    const onError = opts.onError ?? (() => {});
    const stop = this.keeper(durationMs((await this.get()).ack_wait) || 30_000, onError);
    const acks: string[] = [];
    const inFlight = new Set<Promise<void>>();
    // Acks go out without holding up the next pull, gathered: at most
    // ackDelayMs after the first one waits, before every pull, and at once
    // when a batch's worth waits (one ack request per handler would cost a
    // round trip per message).
    let ackTimer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      if (ackTimer !== undefined) {
        clearTimeout(ackTimer);
        ackTimer = undefined;
      }
      const ids = acks.splice(0);
      if (ids.length === 0) return;
      const p: Promise<void> = this.ack(...ids).then(
        () => undefined,
        (e) => onError(e),
      );
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    const queue: Delivery[] = [];
    let running = 0;
    let wake: (() => void) | undefined;
    const run = async (d: Delivery) => {
      const span = startHandlerSpan(d.traceparent, this.name, d.message?.id ?? "", d.delivery_count);
      if (span) this.handlerSpans.set(d.delivery_id, span.traceparent);
      let failed: unknown;
      try {
        await (span ? span.run(() => handler(d)) : handler(d));
        if (this.held.has(d.delivery_id)) {
          this.held.delete(d.delivery_id);
          acks.push(d.delivery_id);
          if (acks.length >= batch) flush();
          else ackTimer ??= setTimeout(flush, ackDelayMs);
        }
      } catch (e) {
        failed = e;
        if (e instanceof Term) {
          await this.term([d], e.reason).catch(onError);
        } else if (!(e instanceof LeaseLost)) {
          onError(e);
          await this.nak([d], Math.min(2 ** Math.max(d.delivery_count - 1, 0), 60)).catch(onError);
        } else {
          onError(e);
        }
      } finally {
        if (span) {
          this.handlerSpans.delete(d.delivery_id);
          span.end(failed);
        }
        running--;
        if (!opts.signal?.aborted) pump();
        wake?.();
      }
    };
    const pump = (): void => {
      while (running < concurrency && queue.length > 0) {
        running++;
        void run(queue.shift()!);
      }
    };
    try {
      while (!opts.signal?.aborted) {
        // Pull again once every pulled delivery has started, so pulls
        // stay close to full batches.
        const room = batch - running;
        if (queue.length > 0 || room <= 0) {
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
          pump();
          continue;
        }
        flush();
        let ds: Delivery[] = [];
        try {
          ds = await this.pull(room, opts.wait ?? 1);
        } catch (e) {
          onError(e);
        }
        for (const d of ds) this.held.set(d.delivery_id, Date.now());
        queue.push(...ds);
        pump();
      }
      while (running > 0) {
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    } finally {
      stop();
      flush();
      await Promise.all(inFlight);
      for (const d of queue) this.held.delete(d.delivery_id);
    }
  }
}
