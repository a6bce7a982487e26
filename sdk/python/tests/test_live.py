import threading
import time
import unittest

import mio

from . import live


@live.needs_mio
class LiveTest(unittest.TestCase):
    """Against a running MIO: the Go test TestSDKs starts one."""

    def setUp(self):
        self.client = mio.Client(live.URL, live.TOKEN)

    def consumer(self, conversation, **kw):
        c = self.client.consumer(live.unique("py"))
        c.put(filter={"conversation_ids": [conversation]}, **kw)
        self.addCleanup(c.delete)
        return c

    def test_pull_reply_with_ack(self):
        conv = live.unique("conv")
        c = self.consumer(conv)
        live.inbound(conv, "hello python")
        ds = c.pull(batch=10, wait=10)
        self.assertEqual(1, len(ds))
        d = ds[0]
        self.assertIsInstance(d.message, mio.Message)
        self.assertEqual("hello python", d.message.text)
        self.assertEqual(conv, d.message.conversation.id)
        self.assertEqual(1, d.delivery_count)

        sent = c.reply(d, text="hi back")
        self.assertFalse(sent.replayed)
        again = c.reply(d, text="hi back")
        self.assertTrue(again.replayed, "a retry of the same reply is a replay")
        self.assertEqual(sent.id, again.id)
        with self.assertRaises(mio.LeaseLost):
            c.reply(d, text="another answer", idempotency_key=live.unique("k"))
        out = self.client.outbound(sent.id)
        self.assertEqual(conv, out.conversation_id, "defaults to the delivered message's conversation")
        self.assertEqual(live.ACCOUNT_ID, out.account_id)
        self.assertEqual(0, c.get().stats.ack_pending)

    def test_conversation_history(self):
        conv = live.unique("conv/py")  # a "/" is path-escaped
        c = self.consumer(conv)
        live.inbound(conv, "question")
        d = c.pull(batch=1, wait=10)[0]
        c.reply(d, text="answer")
        page = self.client.conversation(live.ACCOUNT_ID, conv)
        self.assertEqual(["inbound", "outbound"], [i.direction for i in page.items])
        self.assertEqual("question", page.items[0].message.text)
        self.assertEqual("answer", page.items[1].outbound.text)
        self.assertIsNone(page.next_cursor)
        newest = self.client.conversation(live.ACCOUNT_ID, conv, limit=1)
        self.assertEqual(["outbound"], [i.direction for i in newest.items])
        older = self.client.conversation(live.ACCOUNT_ID, conv, limit=1, before=newest.next_cursor)
        self.assertEqual(["inbound"], [i.direction for i in older.items])

    def test_settle(self):
        conv = live.unique("conv")
        c = self.consumer(conv)
        live.inbound(conv, "one")
        live.inbound(conv, "two")
        ds = []
        deadline = time.time() + 10
        while len(ds) < 2 and time.time() < deadline:
            ds += c.pull(batch=10, wait=2)
        self.assertEqual(2, len(ds))
        self.assertTrue(all(r.ok for r in c.extend(*ds)))
        self.assertTrue(c.nak(ds[0], delay=0)[0].ok)
        self.assertTrue(c.term(ds[1], reason="test")[0].ok)
        again = c.pull(batch=10, wait=10)
        self.assertEqual(1, len(again))
        self.assertEqual(2, again[0].delivery_count)
        self.assertTrue(c.ack(again[0])[0].ok)
        self.assertFalse(c.ack(again[0])[0].ok, "acked twice")
        self.assertEqual(1, c.get().stats.dead)

    def test_consume_loop(self):
        conv = live.unique("conv")
        c = self.consumer(conv, ack_wait="2s")
        for text in ("ok", "flaky", "poison", "reply"):
            live.inbound(conv, text)
        seen = []
        lock = threading.Lock()
        stop = threading.Event()

        def handler(d):
            with lock:
                seen.append((d.message.text, d.delivery_count))
            if d.message.text == "flaky" and d.delivery_count == 1:
                raise RuntimeError("first try fails")
            if d.message.text == "poison":
                raise mio.Term("cannot handle")
            if d.message.text == "reply":
                c.reply(d, text="answered")
            if d.message.text == "ok":
                time.sleep(1.5)  # longer than ack_wait/3: the lease is extended meanwhile

        t = threading.Thread(target=c.consume, args=(handler,), kwargs={"batch": 10, "concurrency": 4, "stop": stop})
        t.start()
        deadline = time.time() + 20
        while time.time() < deadline:
            with lock:
                if ("flaky", 2) in seen and len(seen) >= 5:
                    break
            time.sleep(0.05)
        stop.set()
        t.join(10)
        self.assertIn(("flaky", 2), seen, "a failed delivery is nak'd and comes back")
        self.assertEqual(1, [s[0] for s in seen].count("ok"), "extended, not redelivered")
        deadline = time.time() + 5
        while time.time() < deadline:
            st = c.get().stats
            if st.ack_pending == 0:
                break
            time.sleep(0.1)
        self.assertEqual((0, 1), (st.ack_pending, st.dead))

    def test_send_edit_typing_and_errors(self):
        conv = live.unique("conv")
        sent = self.client.send(idempotency_key=live.unique("k"), account_id=live.ACCOUNT_ID, conversation_id=conv,
                                text="thinking…")
        self.assertEqual("queued", sent.handoff_state)
        edit = self.client.edit(sent.id, idempotency_key=live.unique("k"), account_id=live.ACCOUNT_ID,
                                conversation_id=conv, text="the answer")
        self.assertNotEqual(sent.id, edit.id)
        self.assertEqual(sent.id, self.client.outbound(edit.id).json.get("edit_of"))
        self.assertEqual("unsupported", self.client.typing(live.ACCOUNT_ID, conv).status, "webhook: a no-op")
        with self.assertRaises(mio.NotFound):
            self.client.consumer("nobody-here").get()
        with self.assertRaises(mio.APIError) as e:
            self.client.consumer(live.unique("bad")).put(max_deliver=0)
        self.assertEqual(400, e.exception.status)
        with self.assertRaises(mio.NotFound):
            self.client.attachment("00000000-0000-0000-0000-000000000001", "/dev/null")
        created = self.client.consumer(live.unique("once"))
        self.addCleanup(created.delete)
        self.assertEqual("conversation", created.create(deliver_policy="new", ordering="conversation").ordering)
        with self.assertRaises(mio.ConsumerExists):
            created.create(ordering="none")
        self.assertEqual("conversation", created.get().ordering, "create never changes a consumer")


if __name__ == "__main__":
    unittest.main()
