#!/usr/bin/env python3
"""An agent on MIO in Python: pull, show typing, post a "thinking…" placeholder, then edit it
with the final answer and acknowledge the delivery in the same transaction (reply with ack).

The model is an offline stub (answer()). Configuration: MIO_URL and MIO_TOKEN, else the
.mio/dev.json that `make run` (mio dev) writes. MIO_AGENT_MAX stops after that many messages.
"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "python", "src"))

import mio  # noqa: E402  (stdlib-only SDK, from this repository)


def settings():
    url, token = os.environ.get("MIO_URL"), os.environ.get("MIO_TOKEN")
    if url and token:
        return url, token
    path = os.path.join(os.environ.get("MIO_DATA_DIR", ".mio"), "dev.json")
    with open(path) as f:
        dev = json.load(f)
    return dev["public_url"], dev["api_token"]


def answer(question: str) -> str:
    """The offline stand-in for a model: takes a moment, then answers."""
    time.sleep(0.5)
    return f"You said {question!r}. ({len(question.split())} words; a real model would say more.)"


def main() -> None:
    url, token = settings()
    client = mio.Client(url, token)
    agent = client.consumer(os.environ.get("MIO_CONSUMER", "python-agent"))
    agent.put(ack_wait="30s", deliver_policy="new")  # from its first start on; durable after
    limit = int(os.environ.get("MIO_AGENT_MAX", "0"))
    handled = 0
    stop = threading.Event()
    lock = threading.Lock()

    def handle(d: mio.Delivery) -> None:
        nonlocal handled
        m = d.message
        if m.sender.is_bot or not m.text:
            agent.ack(d)
            return
        # 1. Typing: best effort, never queued behind sends.
        client.typing(m.account_id, m.conversation.id, m.thread_id)
        # 2. A placeholder, idempotent by message id: a redelivery reuses it.
        placeholder = client.send(idempotency_key=f"thinking:{m.id}", account_id=m.account_id,
                                  conversation_id=m.conversation.id, thread_id=m.thread_id, text="thinking…")
        # 3. The answer edits the placeholder, and the delivery is acked in the same transaction.
        final = answer(m.text)
        sent = agent.reply(d, text=final, edit_of=placeholder.id, idempotency_key=f"answer:{m.id}")
        print(f"answered {m.id} in {m.conversation.id}: outbound {sent.id}", flush=True)
        with lock:
            handled += 1
            if limit and handled >= limit:
                stop.set()

    print(f"python-agent: consuming from {url} (Ctrl-C to stop)", flush=True)
    try:
        agent.consume(handle, batch=10, concurrency=4, stop=stop, on_error=lambda e: print("error:", e, file=sys.stderr))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
