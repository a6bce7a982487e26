import os
import threading
import unittest

import mio

from . import live, otel


@live.needs_mio
@otel.needs_sdk
@unittest.skipUnless(os.environ.get("MIO_TRACED"), "MIO is not traced (the Go test TestSDKPython traces it)")
class LiveTraceTest(unittest.TestCase):
    """Against a traced MIO, with the OpenTelemetry SDK: the handler span continues the delivery's
    traceparent and the reply carries the handler span's. The Go test reads the printed traceparent
    and finds MIO's reply span under it, in the trace the webhook started."""

    def test_handler_span_continues_the_delivery_and_the_reply_carries_it(self):
        client = mio.Client(live.URL, live.TOKEN)
        conv = live.unique("conv-trace")
        consumer = client.consumer(live.unique("py-trace"))
        consumer.put(filter={"conversation_ids": [conv]})
        self.addCleanup(consumer.delete)
        live.inbound(conv, "trace this")
        stop = threading.Event()
        seen = {}

        def handle(d):
            seen["traceparent"] = d.traceparent
            consumer.reply(d, text="traced answer")
            stop.set()

        consumer.consume(handle, batch=1, concurrency=1, wait=5, stop=stop)
        tp = seen["traceparent"]
        self.assertRegex(tp, r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$", "a traced MIO delivers the webhook's trace")
        (span,) = [s for s in otel.EXPORTER.get_finished_spans() if s.name == "process " + consumer.name]
        self.assertEqual(format(span.parent.trace_id, "032x"), tp[3:35])
        self.assertEqual(format(span.parent.span_id, "016x"), tp[36:52])
        ctx = span.get_span_context()
        print(f"MIO-TRACE handler 00-{ctx.trace_id:032x}-{ctx.span_id:016x}-01", flush=True)


if __name__ == "__main__":
    unittest.main()
