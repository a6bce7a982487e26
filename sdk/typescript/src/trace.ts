// Trace context for MIO's loop, with OpenTelemetry when @opentelemetry/api
// is installed (an optional peer dependency, loaded at run time): the
// consume loop runs each handler in a consumer span continuing its
// delivery's traceparent, and a reply carries the handler span's
// traceparent. Without it a reply carries the delivery's own traceparent,
// so MIO's dispatch of the reply still joins the message's trace.

/* eslint-disable @typescript-eslint/no-explicit-any */
type OtelApi = any;

const otel: OtelApi | undefined = await (async () => {
  try {
    const name = "@opentelemetry/api";
    return await import(name);
  } catch {
    return undefined;
  }
})();

/** Whether @opentelemetry/api is installed. */
export function tracingAvailable(): boolean {
  return otel !== undefined;
}

/** A span context as a W3C traceparent, or "" when it is not valid. */
function format(sc: { traceId: string; spanId: string; traceFlags: number } | undefined): string {
  if (!sc || !otel.isSpanContextValid(sc)) return "";
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1) === 1 ? "01" : "00"}`;
}

/** The context whose remote parent traceparent names (the W3C format, read without a registered propagator). */
function remote(traceparent: string): unknown {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent);
  if (!m) return otel.ROOT_CONTEXT;
  return otel.trace.setSpanContext(otel.ROOT_CONTEXT, { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3]!, 16) & 1, isRemote: true });
}

/** The traceparent of the active OpenTelemetry span, or "" (none, or no OpenTelemetry). */
export function activeTraceparent(): string {
  if (!otel) return "";
  return format(otel.trace.getActiveSpan()?.spanContext());
}

/** A started handler span: its traceparent, and end(err). */
export interface HandlerSpan {
  traceparent: string;
  run<T>(fn: () => T): T;
  end(err?: unknown): void;
}

/**
 * Starts a consumer span ("process <consumer>") whose parent is traceparent,
 * when OpenTelemetry is installed; undefined otherwise.
 */
export function startHandlerSpan(traceparent: string | undefined, consumer: string, messageId: string, deliveryCount: number): HandlerSpan | undefined {
  if (!otel) return undefined;
  const parent = traceparent ? remote(traceparent) : otel.context.active();
  const span = otel.trace.getTracer("mio-client").startSpan(
    `process ${consumer}`,
    {
      kind: otel.SpanKind.CONSUMER,
      attributes: {
        "messaging.system": "mio",
        "messaging.operation.type": "process",
        "messaging.destination.subscription.name": consumer,
        "messaging.message.id": messageId,
        "messaging.message.delivery_count": deliveryCount,
      },
    },
    parent,
  );
  const ctx = otel.trace.setSpan(parent, span);
  return {
    traceparent: format(span.spanContext()),
    run: (fn) => otel.context.with(ctx, fn),
    end: (err) => {
      if (err !== undefined) span.setStatus({ code: otel.SpanStatusCode.ERROR, message: String(err) });
      span.end();
    },
  };
}
