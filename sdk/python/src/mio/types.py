"""Typed views of MIO's JSON: mio.v1 messages, deliveries, consumers and outbound status."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Conversation:
    id: str
    type: str = ""
    title: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Conversation":
        return cls(id=d.get("id", ""), type=d.get("type", ""), title=d.get("title"))


@dataclass
class Sender:
    id: str
    display_name: Optional[str] = None
    is_bot: bool = False

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Sender":
        return cls(id=d.get("id", ""), display_name=d.get("display_name"), is_bot=bool(d.get("is_bot", False)))


@dataclass
class Attachment:
    id: str
    kind: str = ""
    status: str = ""
    name: Optional[str] = None
    mime_type: Optional[str] = None
    size: Optional[int] = None
    storage_key: Optional[str] = None
    content_sha256: Optional[str] = None
    error: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Attachment":
        return cls(id=d.get("id", ""), kind=d.get("kind", ""), status=d.get("status", ""), name=d.get("name"),
                   mime_type=d.get("mime_type"), size=d.get("size"), storage_key=d.get("storage_key"),
                   content_sha256=d.get("content_sha256"), error=d.get("error"))


@dataclass
class EditRef:
    """What an edit or delete points at: the original message."""

    #: The original's source_message_id when MIO stored it, else its platform id.
    source_message_id: str
    #: The platform's id of the original (Slack ts, Telegram message_id, ...).
    platform_message_id: str
    #: The original's MIO message id, when MIO stored it.
    id: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "EditRef":
        return cls(source_message_id=d.get("source_message_id", ""),
                   platform_message_id=d.get("platform_message_id", ""), id=d.get("id"))


@dataclass
class Interaction:
    """A click on a rich_content button (or a select choice): the action id and value the agent set."""

    action_id: str
    value: Optional[str] = None
    values: List[str] = field(default_factory=list)
    #: The platform id of the message the button was attached to.
    message_id: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Interaction":
        return cls(action_id=d.get("action_id", ""), value=d.get("value"), values=list(d.get("values") or []),
                   message_id=d.get("message_id"))


@dataclass
class Reaction:
    """An emoji added to (added) or removed from a platform message."""

    emoji: str
    added: bool
    message_id: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Reaction":
        return cls(emoji=d.get("emoji", ""), added=bool(d.get("added", False)), message_id=d.get("message_id", ""))


@dataclass
class Message:
    """A canonical inbound message, mio.v1.Message."""

    id: str
    tenant_id: str
    account_id: str
    channel_type: str
    source_message_id: str
    conversation: Conversation
    sender: Sender
    text: str = ""
    #: "message", "interaction" (a button click: interaction) or "reaction" (reaction).
    kind: str = "message"
    interaction: Optional[Interaction] = None
    reaction: Optional[Reaction] = None
    thread_id: Optional[str] = None
    reply_to_source_id: Optional[str] = None
    attachments: List[Attachment] = field(default_factory=list)
    edited: bool = False
    deleted: bool = False
    #: On an edit or delete: the message it changes.
    edit_of: Optional[EditRef] = None
    sent_at: Optional[str] = None
    received_at: Optional[str] = None
    trace_id: Optional[str] = None
    raw: Any = None
    #: The whole JSON object as received (fields this version does not know included).
    json: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Message":
        return cls(id=d.get("id", ""), tenant_id=d.get("tenant_id", ""), account_id=d.get("account_id", ""),
                   channel_type=d.get("channel_type", ""), source_message_id=d.get("source_message_id", ""),
                   conversation=Conversation.from_json(d.get("conversation") or {}),
                   sender=Sender.from_json(d.get("sender") or {}), text=d.get("text", ""),
                   kind=d.get("kind") or "message",
                   interaction=Interaction.from_json(d["interaction"]) if d.get("interaction") else None,
                   reaction=Reaction.from_json(d["reaction"]) if d.get("reaction") else None,
                   thread_id=d.get("thread_id"), reply_to_source_id=d.get("reply_to_source_id"),
                   attachments=[Attachment.from_json(a) for a in d.get("attachments") or []],
                   edited=bool(d.get("edited", False)), deleted=bool(d.get("deleted", False)),
                   edit_of=EditRef.from_json(d["edit_of"]) if d.get("edit_of") else None,
                   sent_at=d.get("sent_at"), received_at=d.get("received_at"), trace_id=d.get("trace_id"),
                   raw=d.get("raw"), json=d)


@dataclass
class Delivery:
    """One leased message of a consumer."""

    delivery_id: str
    seq: int
    delivery_count: int
    message: Message
    #: The consumer that pulled it (set by the SDK).
    consumer: str = ""
    #: The W3C trace context the message was received under ("" when MIO does not trace).
    traceparent: str = ""

    @classmethod
    def from_json(cls, d: Dict[str, Any], consumer: str = "") -> "Delivery":
        return cls(delivery_id=d["delivery_id"], seq=int(d.get("seq", 0)), delivery_count=int(d.get("delivery_count", 1)),
                   message=Message.from_json(d.get("message") or {}), consumer=consumer,
                   traceparent=d.get("traceparent") or "")


@dataclass
class SettleResult:
    delivery_id: str
    ok: bool
    error: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SettleResult":
        return cls(delivery_id=d["delivery_id"], ok=bool(d.get("ok")), error=d.get("error"))


@dataclass
class ConsumerStats:
    pending: int = 0
    ack_pending: int = 0
    redelivered: int = 0
    dead: int = 0
    oldest_pending_age: str = "0s"
    last_delivered_at: Optional[str] = None


@dataclass
class ConsumerInfo:
    name: str
    deliver_policy: str
    ack_wait: str
    max_deliver: int
    max_ack_pending: int
    ordering: str
    stage: str
    filter: Dict[str, Any] = field(default_factory=dict)
    stats: ConsumerStats = field(default_factory=ConsumerStats)
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    start_time: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ConsumerInfo":
        st = d.get("stats") or {}
        return cls(name=d.get("name", ""), deliver_policy=d.get("deliver_policy", ""), ack_wait=d.get("ack_wait", ""),
                   max_deliver=int(d.get("max_deliver", 0)), max_ack_pending=int(d.get("max_ack_pending", 0)),
                   ordering=d.get("ordering", ""), stage=d.get("stage", ""), filter=d.get("filter") or {},
                   stats=ConsumerStats(**{k: st[k] for k in ConsumerStats.__dataclass_fields__ if k in st}),
                   created_at=d.get("created_at"), updated_at=d.get("updated_at"), start_time=d.get("start_time"))


@dataclass
class RichOption:
    """One choice of a select menu."""

    label: str
    value: str


@dataclass
class RichSelect:
    """A select menu: 1 to 25 options with distinct values; a choice comes back as an interaction with
    action_id and the option's value."""

    action_id: str
    options: List[RichOption] = field(default_factory=list)
    placeholder: Optional[str] = None
    type: Optional[str] = None


@dataclass
class RichButton:
    """A URL button (url) or a callback button, whose click comes back as an interaction. The API
    accepts text for label."""

    label: str
    action_id: Optional[str] = None
    value: Optional[str] = None
    url: Optional[str] = None
    style: Optional[str] = None
    type: Optional[str] = None
    text: Optional[str] = None


@dataclass
class RichBlock:
    """One block of a card: type text, list (items), table (rows), label or image (url, alt)."""

    type: str
    text: Optional[str] = None
    items: Optional[List[str]] = None
    rows: Optional[List[List[str]]] = None
    url: Optional[str] = None
    alt: Optional[str] = None


@dataclass
class RichContent:
    """rich_content: a card with a title, blocks, buttons and select menus, rendered natively per
    platform. Send methods take it or the same as a dict."""

    title: Optional[str] = None
    blocks: List[RichBlock] = field(default_factory=list)
    buttons: List[RichButton] = field(default_factory=list)
    selects: List[RichSelect] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        """The JSON object, fields that are None or empty left out."""
        def clean(v: Any) -> Any:
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items() if x is not None and x != []}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v
        return clean(dataclasses.asdict(self))


@dataclass
class Sent:
    """The answer to a send or a reply: the outbound message's id and handoff state."""

    id: str
    handoff_state: str
    #: True when the server answered 200: this idempotency key had already sent this command.
    replayed: bool = False


@dataclass
class OutboundStatus:
    """An outbound message and its two state machines (GET /v1/outbound/{id})."""

    id: str
    handoff_state: str
    provider_state: str
    account_id: str = ""
    conversation_id: str = ""
    thread_id: Optional[str] = None
    #: "message", or "reaction" with reaction ({message_id, emoji, remove}) set.
    kind: str = "message"
    reaction: Optional[Dict[str, Any]] = None
    text: str = ""
    attempts: int = 0
    last_error: Optional[str] = None
    provider_message_id: Optional[str] = None
    events: List[Dict[str, Any]] = field(default_factory=list)
    idempotency_key: str = ""
    channel_type: str = ""
    rich_content: Optional[Dict[str, Any]] = None
    attachments: List[Dict[str, Any]] = field(default_factory=list)
    edit_of: Optional[str] = None
    attempt: int = 0
    series: int = 0
    next_attempt_at: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    handed_off_at: Optional[str] = None
    dead_at: Optional[str] = None
    discarded_at: Optional[str] = None
    #: Set for a streamed reply: {"seq": the last append taken, "finished": bool}.
    stream: Optional[Dict[str, Any]] = None
    json: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "OutboundStatus":
        return cls(id=d.get("id", ""), handoff_state=d.get("handoff_state", ""), provider_state=d.get("provider_state", ""),
                   account_id=d.get("account_id", ""), conversation_id=d.get("conversation_id", ""),
                   thread_id=d.get("thread_id"), kind=d.get("kind") or "message", reaction=d.get("reaction"),
                   text=d.get("text", ""), attempts=int(d.get("attempts", 0)),
                   last_error=d.get("last_error"), provider_message_id=d.get("provider_message_id"),
                   events=d.get("events") or [], idempotency_key=d.get("idempotency_key", ""),
                   channel_type=d.get("channel_type", ""), rich_content=d.get("rich_content"),
                   attachments=d.get("attachments") or [], edit_of=d.get("edit_of"), attempt=int(d.get("attempt", 0)),
                   series=int(d.get("series", 0)), next_attempt_at=d.get("next_attempt_at"),
                   created_at=d.get("created_at"), updated_at=d.get("updated_at"),
                   handed_off_at=d.get("handed_off_at"), dead_at=d.get("dead_at"), discarded_at=d.get("discarded_at"),
                   stream=d.get("stream"), json=d)


@dataclass
class ConversationItem:
    """One message of a conversation's history: inbound (message) or outbound (outbound)."""

    direction: str
    id: str
    at: str
    message: Optional[Message] = None
    outbound: Optional[OutboundStatus] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ConversationItem":
        return cls(direction=d.get("direction", ""), id=d.get("id", ""), at=d.get("at", ""),
                   message=Message.from_json(d["message"]) if d.get("message") else None,
                   outbound=OutboundStatus.from_json(d["outbound"]) if d.get("outbound") else None)


@dataclass
class ConversationPage:
    """A page of a conversation's history, oldest first; next_cursor fetches the older page."""

    items: List[ConversationItem] = field(default_factory=list)
    next_cursor: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ConversationPage":
        return cls(items=[ConversationItem.from_json(i) for i in d.get("items") or []], next_cursor=d.get("next_cursor"))


@dataclass
class TypingResult:
    status: str
    error: Optional[str] = None
