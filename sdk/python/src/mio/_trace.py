"""Trace context for MIO's loop, with OpenTelemetry when it is installed (an optional import).

A delivery carries the W3C ``traceparent`` its message was received under. With opentelemetry-api
installed, the consume loop runs each handler in a span continuing it, and every request sent
under a span carries that span's traceparent; without it, a reply carries the delivery's own
traceparent, so MIO's dispatch of the reply still joins the message's trace."""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, Optional

try:  # optional: the SDK works without OpenTelemetry
    from opentelemetry import trace as _trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator as _Propagator
except ImportError:  # pragma: no cover - depends on the environment
    _trace = None
    _Propagator = None

_propagator = _Propagator() if _Propagator is not None else None


def enabled() -> bool:
    """Whether opentelemetry-api is installed."""
    return _propagator is not None


def current_traceparent() -> str:
    """The traceparent of the current OpenTelemetry span, or "" (none, or no OpenTelemetry)."""
    if _propagator is None:
        return ""
    carrier: Dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent", "")


@contextlib.contextmanager
def handler_span(traceparent: str, consumer: str, message_id: str, delivery_count: int) -> Iterator[Any]:
    """Run the body in a consumer span ("process <consumer>") whose parent is traceparent, when
    OpenTelemetry is installed; otherwise do nothing."""
    if _propagator is None or _trace is None:
        yield None
        return
    ctx: Optional[Any] = _propagator.extract({"traceparent": traceparent}) if traceparent else None
    tracer = _trace.get_tracer("mio-client")
    with tracer.start_as_current_span("process " + consumer, context=ctx, kind=_trace.SpanKind.CONSUMER,
                                      attributes={"messaging.system": "mio", "messaging.operation.type": "process",
                                                  "messaging.destination.subscription.name": consumer,
                                                  "messaging.message.id": message_id,
                                                  "messaging.message.delivery_count": delivery_count}) as span:
        yield span
