import http.server
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
