import http.server
import json
import threading
import unittest

import mio
from mio import _trace

from . import otel

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class _Fake(http.server.BaseHTTPRequestHandler):
    """A MIO with one traced delivery: records each request's traceparent header."""

    seen = []
    pulled = False

    def _answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def do_GET(self):  # noqa: N802
        self._answer(200, {"name": "c", "ack_wait": "30s", "filter": {}, "deliver_policy": "all", "max_deliver": 5,
                           "max_ack_pending": 100, "ordering": "none"})

    def do_POST(self):  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        type(self).seen.append((self.path, self.headers.get("traceparent")))
        if self.path.endswith("/pull"):
            ds = []
            if not type(self).pulled:
                type(self).pulled = True
                ds = [{"delivery_id": "d1", "seq": 1, "delivery_count": 1, "traceparent": TP,
                       "message": {"id": "m1", "tenant_id": "t", "account_id": "a", "channel_type": "webhook",
                                   "source_message_id": "s", "conversation": {"id": "c", "type": "dm"},
                                   "sender": {"id": "u"}, "text": "hi", "attachments": [], "trace_id": TP}}]
            self._answer(200, {"deliveries": ds})
        elif self.path.endswith("/reply"):
            self._answer(202, {"id": "o1", "handoff_state": "queued"})
        else:
            self._answer(200, {"results": [{"delivery_id": i, "ok": True} for i in body.get("delivery_ids", [])]})

    def log_message(self, *args):
        pass


class TraceTest(unittest.TestCase):
    """The delivery's traceparent is kept, continued by the handler span and sent with the reply."""

    def serve(self):
        _Fake.seen, _Fake.pulled = [], False
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return mio.Client(f"http://127.0.0.1:{srv.server_port}", "t", backoff=0.001)

    def replies(self):
        return [tp for path, tp in _Fake.seen if path.endswith("/reply")]

    def test_reply_carries_the_delivery_traceparent(self):
        consumer = self.serve().consumer("c")
        (d,) = consumer.pull(batch=1)
        self.assertEqual(d.traceparent, TP)
        consumer.reply(d, text="hello")
        self.assertEqual(self.replies(), [TP])

    def test_explicit_traceparent_wins(self):
        consumer = self.serve().consumer("c")
        (d,) = consumer.pull(batch=1)
        other = "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"
        consumer.reply(d, text="hello", traceparent=other)
        self.assertEqual(self.replies(), [other])

    @otel.needs_sdk
    def test_consume_starts_the_handler_span_from_the_delivery(self):
        from opentelemetry import trace as otel_trace
        self.assertTrue(_trace.enabled())
        consumer = self.serve().consumer("c")
        stop = threading.Event()

        def handle(d):
            consumer.reply(d, text="hello")
            stop.set()

        consumer.consume(handle, batch=1, concurrency=1, wait=0.1, stop=stop)
        (span,) = [s for s in otel.EXPORTER.get_finished_spans() if s.name == "process c"]
        self.assertEqual(span.kind, otel_trace.SpanKind.CONSUMER)
        self.assertEqual(format(span.parent.trace_id, "032x"), TP[3:35])
        self.assertEqual(format(span.parent.span_id, "016x"), TP[36:52])
        ctx = span.get_span_context()
        self.assertEqual(self.replies(), [f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-01"])


if __name__ == "__main__":
    unittest.main()
