import asyncio
import http.server
import json
import threading
import unittest

import mio
from mio.client import _duration, _seconds


class _Flaky(http.server.BaseHTTPRequestHandler):
    answers = []

    def do_GET(self):  # noqa: N802
        status, body, headers = self.answers.pop(0)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


class OfflineTest(unittest.TestCase):
    """No server needed: retries, error mapping, durations."""

    def serve(self, answers):
        _Flaky.answers = list(answers)
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return mio.Client(f"http://127.0.0.1:{srv.server_port}", "t", backoff=0.001)

    def test_retries_503_and_429_honouring_retry_after(self):
        c = self.serve([(503, '{"error":{"code":"unavailable","message":"x"}}', {"Retry-After": "0"}),
                        (429, '{"error":{"code":"rate_limited","message":"x"}}', {"Retry-After": "0"}),
                        (200, '{"id":"m1","tenant_id":"t","account_id":"a","channel_type":"webhook",'
                              '"source_message_id":"s","conversation":{"id":"c","type":"dm"},"sender":{"id":"u"},'
                              '"text":"hi"}', {})])
        m = c.message("m1")
        self.assertEqual("hi", m.text)
        self.assertEqual("c", m.conversation.id)

    def test_errors_carry_the_code(self):
        c = self.serve([(404, '{"error":{"code":"not_found","message":"no such message"}}', {}),
                        (409, '{"error":{"code":"lease_lost","message":"gone"}}', {}),
                        (400, '{"error":{"code":"bad_request","message":"bad"}}', {})])
        with self.assertRaises(mio.NotFound) as e:
            c.message("x")
        self.assertEqual("not_found", e.exception.code)
        with self.assertRaises(mio.LeaseLost):
            c.message("x")
        with self.assertRaises(mio.APIError) as e:
            c.message("x")
        self.assertEqual((400, "bad_request", "bad"), (e.exception.status, e.exception.code, e.exception.message))

    def test_gives_up_after_retries(self):
        c = self.serve([(503, '{"error":{"code":"unavailable","message":"x"}}', {})] * 2)
        c.retries = 2
        with self.assertRaises(mio.APIError) as e:
            c.message("x")
        self.assertEqual(503, e.exception.status)

    def test_durations(self):
        self.assertEqual(90.0, _seconds("1m30s"))
        self.assertEqual(0.25, _seconds("250ms"))
        self.assertEqual("1500ms", _duration(1.5))
        self.assertEqual("30s", _duration("30s"))


if __name__ == "__main__":
    unittest.main()


class _Stream(http.server.BaseHTTPRequestHandler):
    """The stream routes as the server answers them; the second append's first try answers 503."""
    calls = []
    tries = {}

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        _Stream.calls.append((self.path, body))
        status, out = 200, {}
        if self.path == "/v1/outbound":
            status, out = 202, {"id": "s1", "handoff_state": "queued"}
        elif self.path.endswith("/append"):
            _Stream.tries[body["seq"]] = _Stream.tries.get(body["seq"], 0) + 1
            if body["seq"] == 2 and _Stream.tries[2] == 1:
                status, out = 503, {"error": {"code": "unavailable", "message": "x"}}
            else:
                out = {"id": "s1", "seq": body["seq"], "finished": False}
        else:
            out = {"id": "s1", "seq": body.get("seq", 0), "finished": True}
        raw = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


class StreamTest(unittest.TestCase):
    """send_stream and asend_stream against a fake of the stream routes."""

    def client(self):
        _Stream.calls, _Stream.tries = [], {}
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stream)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return mio.Client(f"http://127.0.0.1:{srv.server_port}", "t", backoff=0.001)

    def test_send_stream(self):
        c = self.client()
        sent = c.send_stream(iter(["Hello", "", ", ", "world"]), idempotency_key="k", account_id="a",
                             conversation_id="c")
        self.assertEqual("s1", sent.id)
        paths = [(p, b.get("seq"), b.get("text_delta")) for p, b in _Stream.calls]
        self.assertEqual([("/v1/outbound", None, None), ("/v1/outbound/s1/append", 1, "Hello"),
                          ("/v1/outbound/s1/append", 2, ", "), ("/v1/outbound/s1/append", 2, ", "),
                          ("/v1/outbound/s1/append", 3, "world"), ("/v1/outbound/s1/finish", 3, None)], paths)
        self.assertTrue(_Stream.calls[0][1]["stream"])

    def test_asend_stream_finishes_when_the_source_fails(self):
        c = self.client()

        async def chunks():
            yield "partial"
            raise RuntimeError("model failed")

        with self.assertRaises(RuntimeError):
            asyncio.run(c.asend_stream(chunks(), idempotency_key="k", account_id="a", conversation_id="c"))
        self.assertEqual(("/v1/outbound/s1/finish", {"seq": 1}), _Stream.calls[-1])
