"""Errors: the device's JSON error envelope as an exception.

Every error kgbox answers, over HTTP or MQTT, is
``{"error": {"code": "...", "message": "...", ...}}`` with an HTTP status
(docs/http-api.md, "Error codes"). :class:`KgboxError` carries the status,
the stable ``code`` (for programs), the ``message`` (for people) and the
whole ``error`` object (``details``: ``suggestions``, ``line``, ``column``,
``snippet``, ``query``, ... depending on the code).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

# Codes this client gives errors that did not come from the device.
UNREACHABLE = "unreachable"
"""The device (HTTP) or the broker (MQTT) cannot be reached."""
TIMEOUT = "timeout"
"""No reply in time. Also the device's own code for a request past its deadline (408)."""
CONNECT_REFUSED = "connect_refused"
"""The MQTT broker refused the connection (credentials, client id, ...)."""
CLOSED = "closed"
"""The MQTT client was closed while the request waited."""
BAD_REPLY = "bad_reply"
"""A reply that is not the JSON the API promises."""

# Codes of bodies that are not JSON, as the device's MQTT front end names them.
_STATUS_CODES = {408: "timeout", 413: "too_large"}


class KgboxError(Exception):
    """An error answered by a kgbox device, or met on the way to it.

    ``status`` is the HTTP status (over MQTT, the reply's ``status`` user
    property), or ``None`` when no reply came (``code`` is then one of
    :data:`UNREACHABLE`, :data:`TIMEOUT`, :data:`CONNECT_REFUSED`,
    :data:`CLOSED`).
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        details: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details: Dict[str, Any] = dict(details or {})
        self.request_id = request_id
        """The device's id of the request (the ``x-request-id`` header, or the
        MQTT reply's ``request-id`` user property) when it sends one: the key
        to its access-log line."""

    @property
    def suggestions(self) -> List[str]:
        """Names the device suggests for an unknown or misspelt one."""
        s = self.details.get("suggestions")
        return list(s) if isinstance(s, list) else []

    def __str__(self) -> str:
        head = " ".join(str(p) for p in (self.status, self.code) if p is not None)
        return f"{head}: {self.message}" if head else self.message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r})"
        )

    @staticmethod
    def from_reply(status: int, body: bytes, request_id: Optional[str] = None) -> "KgboxError":
        """The error of a reply with ``status`` >= 400 and ``body`` (its bytes):
        a :class:`KgboxTimeout` for 408 (the request ran past the device's
        deadline), else a :class:`KgboxError`."""
        cls = KgboxTimeout if status == 408 else KgboxError
        try:
            value = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, ValueError):
            value = None
        err = value.get("error") if isinstance(value, dict) else None
        if isinstance(err, dict):
            code = err.get("code")
            message = err.get("message")
            return cls(
                message if isinstance(message, str) else f"HTTP {status}",
                status=status,
                code=code if isinstance(code, str) else None,
                details=err,
                request_id=request_id,
            )
        text = body.decode("utf-8", "replace").strip()
        code = _STATUS_CODES.get(status, "bad_request" if 400 <= status < 500 else "internal")
        return cls(text or f"HTTP {status}", status=status, code=code, request_id=request_id)


class KgboxTimeout(KgboxError, TimeoutError):
    """No reply within the time limit (``code`` is ``"timeout"``)."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = TIMEOUT,
        details: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message, status=status, code=code, details=details, request_id=request_id)
