"""The HTTP client: Client (sends, edits, typing, messages, attachments) and Consumer (pull, settle, reply, consume)."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterable, BinaryIO, Callable, Dict, Iterable, List, Optional, Sequence, Union

from . import _trace
from .errors import APIError, LeaseLost, MioError, Term, api_error
from .types import (ConsumerInfo, ConversationPage, Delivery, Message, OutboundStatus, RichContent, Sent, SettleResult,
                    TypingResult)

__all__ = ["Client", "Consumer"]

_RETRY_STATUS = (429, 502, 503, 504)


def _duration(v: Union[str, float, int, None]) -> Optional[str]:
    """Seconds (a number) or a Go duration string ("30s") -> a Go duration string."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    return f"{int(round(float(v) * 1000))}ms"


def _seconds(d: str) -> float:
    """A Go duration string as the API writes it ("30s", "1m0s", "250ms") -> seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    total, num, i = 0.0, "", 0
    while i < len(d):
        c = d[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        for u in ("ms", "us", "µs", "ns", "h", "m", "s"):
            if d.startswith(u, i):
                total += float(num or 0) * units[u]
                num, i = "", i + len(u)
                break
        else:
            raise ValueError(f"not a duration: {d!r}")
    return total


class Client:
    """A MIO API client.

    ``Client(base_url, token)``; every call retries 429/502/503/504 answers and network errors,
    honouring Retry-After, up to ``retries`` attempts in all. Thread-safe.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 70.0, retries: int = 5,
                 backoff: float = 0.1, max_backoff: float = 5.0, user_agent: str = "mio-python/0.1"):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = max(1, retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.user_agent = user_agent

    # -- transport ---------------------------------------------------------

    def _open(self, method: str, path: str, body: Any = None, *, timeout: Optional[float] = None,
              traceparent: str = "", headers: Optional[Dict[str, str]] = None):
        data = None if body is None else json.dumps(body).encode()
        traceparent = traceparent or _trace.current_traceparent()
        last: Optional[Exception] = None
        for attempt in range(self.retries):
            req = urllib.request.Request(self.base_url + path, data=data, method=method)
            req.add_header("Authorization", "Bearer " + self.token)
            req.add_header("User-Agent", self.user_agent)
            if traceparent:
                req.add_header("traceparent", traceparent)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            for k, v in (headers or {}).items():
                req.add_header(k, v)
            wait = min(self.backoff * (2 ** attempt), self.max_backoff) * random.random()
            try:
                return urllib.request.urlopen(req, timeout=timeout or self.timeout)
            except urllib.error.HTTPError as e:
                raw = e.read()
                e.close()
                code, message = "", raw.decode("utf-8", "replace")
                try:
                    err = json.loads(raw)["error"]
                    code, message = err.get("code", ""), err.get("message", "")
                except (ValueError, KeyError, TypeError):
                    pass
                last = api_error(e.code, code, message)
                if e.code not in _RETRY_STATUS:
                    raise last from None
                ra = e.headers.get("Retry-After") if e.headers else None
                if ra:
                    try:
                        wait = max(wait, float(ra))
                    except ValueError:
                        pass
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                last = MioError(f"mio: {method} {path}: {e}")
            if attempt + 1 < self.retries:
                time.sleep(wait)
        assert last is not None
        raise last

    def _call(self, method: str, path: str, body: Any = None, *, timeout: Optional[float] = None,
              traceparent: str = "", headers: Optional[Dict[str, str]] = None):
        """Returns (status, decoded JSON or None). The request carries traceparent, else the current
        OpenTelemetry span's (when installed)."""
        with self._open(method, path, body, timeout=timeout, traceparent=traceparent, headers=headers) as resp:
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw.strip() else None)

    # -- API ---------------------------------------------------------------

    def consumer(self, name: str) -> "Consumer":
        """The durable consumer called name (created with Consumer.put)."""
        return Consumer(self, name)

    def message(self, message_id: str) -> Message:
        return Message.from_json(self._call("GET", "/v1/messages/" + urllib.parse.quote(message_id))[1])

    def send(self, *, idempotency_key: str, account_id: str, conversation_id: str, text: str = "",
             thread_id: Optional[str] = None, rich: Optional[Union[Dict[str, Any], RichContent]] = None,
             attachments: Optional[List[Dict[str, Any]]] = None, edit_of: Optional[str] = None,
             ack: Optional[Delivery] = None, traceparent: str = "", stream: bool = False) -> Sent:
        """Queue a SendCommand (POST /v1/outbound). With ack=delivery, the delivery is acknowledged
        in the same transaction (see Consumer.reply). The send carries traceparent, else the
        current OpenTelemetry span's, else ack's: its dispatch joins that trace. stream=True opens
        a streamed reply (text may be empty): see send_stream."""
        cmd = _command(idempotency_key, text, account_id, conversation_id, thread_id, rich, attachments, edit_of)
        if stream:
            cmd["stream"] = True
        if ack is not None:
            cmd["ack"] = {"consumer": ack.consumer, "delivery_id": ack.delivery_id}
            traceparent = traceparent or _trace.current_traceparent() or ack.traceparent
        status, out = self._call("POST", "/v1/outbound", cmd, traceparent=traceparent)
        return Sent(id=out["id"], handoff_state=out["handoff_state"], replayed=status == 200)

    def edit(self, outbound_id: str, *, idempotency_key: str, account_id: str, conversation_id: str,
             text: str = "", thread_id: Optional[str] = None, rich: Optional[Union[Dict[str, Any], RichContent]] = None) -> Sent:
        """Edit an earlier outbound message (a send with edit_of)."""
        return self.send(idempotency_key=idempotency_key, account_id=account_id, conversation_id=conversation_id,
                         text=text, thread_id=thread_id, rich=rich, edit_of=outbound_id)

    def stream_append(self, outbound_id: str, seq: int, text_delta: str) -> None:
        """Add text to an open streamed reply as the client's append seq (1, 2, 3…). A seq already
        taken is answered as before, so a retry is safe; a gap or an append after the finish raises
        Conflict (409)."""
        self._call("POST", "/v1/outbound/" + urllib.parse.quote(outbound_id) + "/append",
                   {"seq": seq, "text_delta": text_delta})

    def stream_finish(self, outbound_id: str, *, seq: int = 0, text: Optional[str] = None,
                      rich: Optional[Union[Dict[str, Any], RichContent]] = None) -> None:
        """Finish a streamed reply: text, when given, is the complete final text (it replaces what was
        appended); seq, when not 0, is the last append's, checked by the server."""
        body: Dict[str, Any] = {}
        if seq:
            body["seq"] = seq
        if text is not None:
            body["text"] = text
        if rich:
            body["rich_content"] = _rich(rich)
        self._call("POST", "/v1/outbound/" + urllib.parse.quote(outbound_id) + "/finish", body)

    def send_stream(self, chunks: Iterable[str], *, idempotency_key: str, account_id: str, conversation_id: str,
                    text: str = "", thread_id: Optional[str] = None, ack: Optional[Delivery] = None) -> Sent:
        """Send a reply whose text grows while it is written: open a stream, append each chunk in order
        (seq 1, 2, 3…; each retried with its own seq), then finish it. If chunks raises, the stream is
        finished with what was appended and the exception re-raised. Each chunk is one request: pass a
        few words at a time rather than single tokens."""
        sent = self.send(idempotency_key=idempotency_key, account_id=account_id, conversation_id=conversation_id,
                         text=text, thread_id=thread_id, ack=ack, stream=True)
        seq = 0
        try:
            for chunk in chunks:
                if chunk:
                    seq += 1
                    self.stream_append(sent.id, seq, chunk)
        finally:
            self.stream_finish(sent.id, seq=seq)
        return sent

    async def asend_stream(self, chunks: AsyncIterable[str], *, idempotency_key: str, account_id: str,
                           conversation_id: str, text: str = "", thread_id: Optional[str] = None,
                           ack: Optional[Delivery] = None) -> Sent:
        """send_stream for an async iterator of chunks (an LLM's streamed answer); the requests run in a
        worker thread."""
        sent = await asyncio.to_thread(self.send, idempotency_key=idempotency_key, account_id=account_id,
                                       conversation_id=conversation_id, text=text, thread_id=thread_id, ack=ack,
                                       stream=True)
        seq = 0
        try:
            async for chunk in chunks:
                if chunk:
                    seq += 1
                    await asyncio.to_thread(self.stream_append, sent.id, seq, chunk)
        finally:
            await asyncio.to_thread(self.stream_finish, sent.id, seq=seq)
        return sent
    def react(self, *, account_id: str, conversation_id: str, message_id: str, emoji: str, remove: bool = False,
              idempotency_key: Optional[str] = None) -> Sent:
        """Queue a reaction to a platform message through the outbox (POST /v1/reactions); follow it with
        outbound(sent.id). Without an idempotency key each call is a new reaction."""
        cmd: Dict[str, Any] = {"account_id": account_id, "conversation_id": conversation_id,
                               "message_id": message_id, "emoji": emoji}
        if remove:
            cmd["remove"] = True
        if idempotency_key:
            cmd["idempotency_key"] = idempotency_key
        status, out = self._call("POST", "/v1/reactions", cmd)
        return Sent(id=out["id"], handoff_state=out["handoff_state"], replayed=status == 200)

    def outbound(self, outbound_id: str) -> OutboundStatus:
        return OutboundStatus.from_json(self._call("GET", "/v1/outbound/" + urllib.parse.quote(outbound_id))[1])

    def conversation(self, account_id: str, conversation_id: str, *, limit: Optional[int] = None,
                     before: Optional[str] = None) -> ConversationPage:
        """A conversation's inbound and outbound messages, oldest first: the newest page, or the page
        before the cursor `before` (a previous page's next_cursor)."""
        q: Dict[str, Any] = {}
        if limit is not None:
            q["limit"] = limit
        if before:
            q["before"] = before
        path = ("/v1/conversations/" + urllib.parse.quote(account_id, safe="") + "/"
                + urllib.parse.quote(conversation_id, safe="") + "/messages")
        if q:
            path += "?" + urllib.parse.urlencode(q)
        return ConversationPage.from_json(self._call("GET", path)[1])

    def typing(self, account_id: str, conversation_id: str, thread_id: Optional[str] = None) -> TypingResult:
        """Show the bot as typing (best effort): status sent, unsupported, throttled or failed."""
        body: Dict[str, Any] = {"account_id": account_id, "conversation_id": conversation_id}
        if thread_id:
            body["thread_id"] = thread_id
        out = self._call("POST", "/v1/conversations/typing", body)[1]
        return TypingResult(status=out["status"], error=out.get("error"))

    def attachment(self, attachment_id: str, dest: Union[str, BinaryIO]) -> int:
        """Stream an attachment's bytes to a file path or a binary file object; returns the byte count."""
        with self._open("GET", "/v1/attachments/" + urllib.parse.quote(attachment_id)) as resp:
            if isinstance(dest, str):
                with open(dest, "wb") as f:
                    return _copy(resp, f)
            return _copy(resp, dest)


def _copy(src: Any, dst: BinaryIO) -> int:
    n = 0
    while True:
        chunk = src.read(64 << 10)
        if not chunk:
            return n
        dst.write(chunk)
        n += len(chunk)


def _rich(rich: Optional[Union[Dict[str, Any], RichContent]]) -> Optional[Dict[str, Any]]:
    """rich_content as JSON: a RichContent's to_json(), a dict as it is."""
    if isinstance(rich, RichContent):
        return rich.to_json()
    return rich


def _command(key: str, text: str, account_id: Optional[str], conversation_id: Optional[str],
             thread_id: Optional[str], rich: Optional[Union[Dict[str, Any], RichContent]], attachments: Optional[List[Dict[str, Any]]],
             edit_of: Optional[str]) -> Dict[str, Any]:
    cmd: Dict[str, Any] = {"idempotency_key": key, "text": text}
    for k, v in (("account_id", account_id), ("conversation_id", conversation_id), ("thread_id", thread_id),
                 ("rich_content", _rich(rich)), ("attachments", attachments), ("edit_of", edit_of)):
        if v:
            cmd[k] = v
    return cmd


Handler = Callable[[Delivery], None]


def _consumer_config(filter: Optional[Dict[str, Any]], deliver_policy: Optional[str], start_time: Optional[str],
                     ack_wait: Union[str, float, None], max_deliver: Optional[int], max_ack_pending: Optional[int],
                     ordering: Optional[str], stage: Optional[str]) -> Dict[str, Any]:
    """The PUT body of a consumer: the settings given."""
    body: Dict[str, Any] = {}
    for k, v in (("filter", filter), ("deliver_policy", deliver_policy), ("start_time", start_time),
                 ("ack_wait", _duration(ack_wait)), ("max_deliver", max_deliver),
                 ("max_ack_pending", max_ack_pending), ("ordering", ordering), ("stage", stage)):
        if v is not None:
            body[k] = v
    return body


class Consumer:
    """A durable consumer: pull, ack/nak/term/extend, reply with ack, and the consume loop."""

    def __init__(self, client: Client, name: str):
        self.client = client
        self.name = name
        self._path = "/v1/consumers/" + urllib.parse.quote(name, safe="")

    def put(self, *, filter: Optional[Dict[str, Any]] = None, deliver_policy: Optional[str] = None,
            start_time: Optional[str] = None, ack_wait: Union[str, float, None] = None,
            max_deliver: Optional[int] = None, max_ack_pending: Optional[int] = None,
            ordering: Optional[str] = None, stage: Optional[str] = None) -> ConsumerInfo:
        """Create or update the consumer. Omitted settings get the server's defaults
        (max_deliver 5, max_ack_pending 1000; an explicit 0 is refused by the server)."""
        body = _consumer_config(filter, deliver_policy, start_time, ack_wait, max_deliver, max_ack_pending, ordering, stage)
        return ConsumerInfo.from_json(self.client._call("PUT", self._path, body)[1])

    def create(self, *, filter: Optional[Dict[str, Any]] = None, deliver_policy: Optional[str] = None,
               start_time: Optional[str] = None, ack_wait: Union[str, float, None] = None,
               max_deliver: Optional[int] = None, max_ack_pending: Optional[int] = None,
               ordering: Optional[str] = None, stage: Optional[str] = None) -> ConsumerInfo:
        """Create the consumer, never changing one that exists (PUT with If-None-Match: *): a consumer
        by that name, created before or concurrently, raises ConsumerExists and is left as it is."""
        body = _consumer_config(filter, deliver_policy, start_time, ack_wait, max_deliver, max_ack_pending, ordering, stage)
        return ConsumerInfo.from_json(self.client._call("PUT", self._path, body, headers={"If-None-Match": "*"})[1])

    def get(self) -> ConsumerInfo:
        return ConsumerInfo.from_json(self.client._call("GET", self._path)[1])

    def delete(self) -> None:
        self.client._call("DELETE", self._path)

    def pull(self, batch: int = 10, wait: Union[str, float] = 0) -> List[Delivery]:
        """Lease up to batch messages, long-polling up to wait (seconds or "30s")."""
        body = {"batch": batch, "wait": _duration(wait) or "0s"}
        timeout = _seconds(body["wait"]) + self.client.timeout
        out = self.client._call("POST", self._path + "/pull", body, timeout=timeout)[1]
        return [Delivery.from_json(d, self.name) for d in out.get("deliveries") or []]

    def _settle(self, action: str, ids: Sequence[Union[str, Delivery]], extra: Dict[str, Any]) -> List[SettleResult]:
        if action != "extend":
            for d in ids:
                _mark(d)
        body = {"delivery_ids": [d.delivery_id if isinstance(d, Delivery) else d for d in ids], **extra}
        out = self.client._call("POST", self._path + "/" + action, body)[1]
        return [SettleResult.from_json(r) for r in out.get("results") or []]

    def ack(self, *ids: Union[str, Delivery]) -> List[SettleResult]:
        return self._settle("ack", ids, {})

    def nak(self, *ids: Union[str, Delivery], delay: Union[str, float, None] = None) -> List[SettleResult]:
        return self._settle("nak", ids, {"delay": _duration(delay)} if delay else {})

    def term(self, *ids: Union[str, Delivery], reason: str = "") -> List[SettleResult]:
        return self._settle("term", ids, {"reason": reason} if reason else {})

    def extend(self, *ids: Union[str, Delivery]) -> List[SettleResult]:
        return self._settle("extend", ids, {})

    def reply(self, delivery: Delivery, text: str = "", *, rich: Optional[Union[Dict[str, Any], RichContent]] = None,
              idempotency_key: Optional[str] = None, account_id: Optional[str] = None,
              conversation_id: Optional[str] = None, thread_id: Optional[str] = None,
              attachments: Optional[List[Dict[str, Any]]] = None, edit_of: Optional[str] = None,
              traceparent: str = "") -> Sent:
        """Answer delivery and acknowledge it in ONE server transaction: both happen or neither.

        The account, conversation and thread default to the delivered message's. The default
        idempotency key is "reply:" + delivery id, so a retry after a lost answer returns the
        first reply instead of sending twice. Raises LeaseLost when the lease is gone (nothing
        was written). The reply carries traceparent, else the current OpenTelemetry span's (the
        handler's, in consume), else the delivery's: its dispatch joins the message's trace."""
        cmd = _command(idempotency_key or "reply:" + delivery.delivery_id, text, account_id, conversation_id,
                       thread_id, rich, attachments, edit_of)
        cmd["delivery_id"] = delivery.delivery_id
        traceparent = traceparent or _trace.current_traceparent() or delivery.traceparent
        status, out = self.client._call("POST", self._path + "/reply", cmd, traceparent=traceparent)
        _mark(delivery)
        return Sent(id=out["id"], handoff_state=out["handoff_state"], replayed=status == 200)

    def consume(self, handler: Handler, *, batch: int = 10, concurrency: int = 4, wait: float = 30.0,
                stop: Optional[threading.Event] = None, max_backoff: float = 60.0,
                on_error: Optional[Callable[[Exception], None]] = None) -> None:
        """Run handler on every delivery until stop is set.

        A handler that returns acks the delivery (unless it settled it itself, e.g. with reply);
        one that raises Term terminates it; any other exception naks it with exponential backoff
        by delivery_count (1s, 2s, 4s … up to max_backoff). While deliveries wait or run, their
        leases are extended every third of the consumer's ack_wait. Handlers run on
        ``concurrency`` threads; up to ``batch`` deliveries are in flight; acks are sent in
        batches. With opentelemetry-api installed, each handler runs in a consumer span continuing
        its delivery's traceparent."""
        stop = stop or threading.Event()
        ack_wait = _seconds(self.get().ack_wait) or 30.0
        report = on_error or (lambda e: None)
        slots = threading.Semaphore(batch)
        lock = threading.Lock()
        acks: List[str] = []
        inflight: Dict[str, Delivery] = {}
        done = threading.Event()

        acker = ThreadPoolExecutor(max_workers=1)  # acks go out without holding up the next pull

        def flush() -> None:
            with lock:
                ids = acks[:]
                acks.clear()
            if ids:
                acker.submit(self._quiet, report, self.ack, *ids)

        def keep() -> None:
            while not done.wait(ack_wait / 3):
                with lock:
                    ids = list(inflight)
                if ids:
                    self._quiet(report, self.extend, *ids)

        def run(d: Delivery) -> None:
            settled = _Settled()
            d.__dict__["_settled"] = settled
            try:
                with _trace.handler_span(d.traceparent, self.name, d.message.id, d.delivery_count):
                    handler(d)
                if not settled.flag:
                    with lock:
                        acks.append(d.delivery_id)
            except Term as t:
                self._quiet(report, self.term, d, reason=t.reason)
            except LeaseLost as e:
                report(e)
            except Exception as e:  # noqa: BLE001 — the handler failed: nak with backoff
                report(e)
                self._quiet(report, self.nak, d, delay=min(2.0 ** max(d.delivery_count - 1, 0), max_backoff))
            finally:
                with lock:
                    inflight.pop(d.delivery_id, None)
                slots.release()

        keeper = threading.Thread(target=keep, daemon=True)
        keeper.start()
        try:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                while not stop.is_set():
                    flush()
                    if not slots.acquire(timeout=0.5):
                        continue
                    free = 1
                    while free < batch and slots.acquire(blocking=False):
                        free += 1
                    try:
                        ds = self.pull(batch=free, wait=min(wait, 1.0))
                    except MioError as e:
                        report(e)
                        ds = []
                    for _ in range(free - len(ds)):
                        slots.release()
                    with lock:
                        for d in ds:
                            inflight[d.delivery_id] = d
                    for d in ds:
                        pool.submit(run, d)
        finally:
            done.set()
            flush()
            acker.shutdown(wait=True)

    def _quiet(self, report: Callable[[Exception], None], fn: Callable[..., Any], *args: Any, **kw: Any) -> None:
        try:
            fn(*args, **kw)
        except Exception as e:  # noqa: BLE001
            report(e)


class _Settled:
    flag = False


def _mark(d: Union[str, Delivery]) -> None:
    """Marks a delivery handed to a consume handler as settled by the handler."""
    st = getattr(d, "_settled", None)
    if st is not None:
        st.flag = True
