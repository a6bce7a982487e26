"""Exceptions carrying the API's error code."""

from __future__ import annotations


class MioError(Exception):
    """Base of the SDK's exceptions."""


class APIError(MioError):
    """An error answer of the server: HTTP status, the API's error code and message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"mio: {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class NotFound(APIError):
    """404: no such consumer, message, account or outbound message."""


class LeaseLost(APIError):
    """409 lease_lost: the delivery is no longer leased to this consumer; nothing was written."""


class Conflict(APIError):
    """409 conflict (an idempotency key used for a different command, ...)."""


class ConsumerExists(APIError):
    """412: Consumer.create found a consumer by that name; it was left as it is."""


class Term(MioError):
    """Raise from a consume handler to terminate the delivery (dead-letter it, never redelivered)."""

    def __init__(self, reason: str = "terminated by handler"):
        super().__init__(reason)
        self.reason = reason


def api_error(status: int, code: str, message: str) -> APIError:
    if status == 404:
        return NotFound(status, code, message)
    if status == 409 and code == "lease_lost":
        return LeaseLost(status, code, message)
    if status == 409:
        return Conflict(status, code, message)
    if status == 412:
        return ConsumerExists(status, code, message)
    return APIError(status, code, message)
