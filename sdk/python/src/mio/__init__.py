"""MIO client: pull inbound chat messages, reply with ack, send, edit and show typing.

    import mio
    client = mio.Client("http://localhost:8080", token)
    consumer = client.consumer("agent")
    consumer.put(ack_wait="30s")
    consumer.consume(lambda d: consumer.reply(d, text="echo: " + d.message.text))

Standard library only; Python 3.9 or newer.
"""

from .client import Client, Consumer
from .errors import APIError, Conflict, ConsumerExists, LeaseLost, MioError, NotFound, Term
from .types import (Attachment, ConsumerInfo, ConsumerStats, Conversation, ConversationItem, ConversationPage, Delivery,
                    Interaction, Message, OutboundStatus, Reaction, RichBlock, RichButton, RichContent, RichOption,
                    RichSelect, Sender, Sent, SettleResult, TypingResult)

__version__ = "0.1.0"

__all__ = [
    "Client", "Consumer", "APIError", "Conflict", "ConsumerExists", "LeaseLost", "MioError", "NotFound", "Term", "Attachment",
    "ConsumerInfo", "ConsumerStats", "Conversation", "ConversationItem", "ConversationPage", "Delivery", "Interaction", "Message", "OutboundStatus", "Reaction", "RichBlock", "RichButton", "RichContent", "RichOption", "RichSelect", "Sender", "Sent",
    "SettleResult", "TypingResult",
]
