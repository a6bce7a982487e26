"""Helpers for tests against a running MIO (env MIO_URL, MIO_TOKEN, MIO_WEBHOOK_URL, MIO_WEBHOOK_SECRET)."""

import base64
import hashlib
import hmac
import json
import os
import time
import unittest
import urllib.request
import uuid

URL = os.environ.get("MIO_URL", "")
TOKEN = os.environ.get("MIO_TOKEN", "")
WEBHOOK_URL = os.environ.get("MIO_WEBHOOK_URL", "")
WEBHOOK_SECRET = os.environ.get("MIO_WEBHOOK_SECRET", "")
ACCOUNT_ID = WEBHOOK_URL.rstrip("/").rsplit("/", 1)[-1] if WEBHOOK_URL else ""

needs_mio = unittest.skipUnless(URL and TOKEN and WEBHOOK_URL, "set MIO_URL, MIO_TOKEN, MIO_WEBHOOK_URL and MIO_WEBHOOK_SECRET")


def inbound(conversation: str, text: str) -> str:
    """Posts one signed generic-webhook message (Standard Webhooks); returns its webhook id."""
    wid = "msg_" + uuid.uuid4().hex
    ts = str(int(time.time()))
    body = json.dumps({"type": "message.created", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "data": {"conversation": {"id": conversation}, "sender": {"id": "user-1"}, "text": text}}).encode()
    key = base64.b64decode(WEBHOOK_SECRET[len("whsec_"):])
    sig = base64.b64encode(hmac.new(key, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
    req = urllib.request.Request(WEBHOOK_URL, data=body, method="POST")
    for k, v in (("Content-Type", "application/json"), ("webhook-id", wid), ("webhook-timestamp", ts),
                 ("webhook-signature", "v1," + sig)):
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200, resp.status
    return wid


def unique(prefix: str) -> str:
    return prefix + "-" + uuid.uuid4().hex[:12]
