"""Where requests go and what they carry: the HTTP paths, the MQTT topic
scheme (docs/mqtt.md; ``runtime/protocol/src/topics.rs`` on the device) and
the request bodies of ``/v1/ask`` and ``/v1/query`` (docs/http-api.md).

The Node-RED example flow (``clients/node-red/``) is checked against these
by ``tests/test_node_red_flow.py``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

ASK_PATH = "/v1/ask"
QUERY_PATH = "/v1/query"
STATUS_PATH = "/v1/status"
HEALTH_PATH = "/healthz"
READY_PATH = "/v2/health/ready"

ROOT = "kgbox"
"""The first level of every device topic."""
REPLY_ROOT = "reply"
"""Where replies go: ``reply/<account>/...`` is what the shipped broker ACL
(firmware-config/mosquitto.acl) lets an application read."""

ASK = "ask"
QUERY = "query"
KINDS = {ASK: ASK_PATH, QUERY: QUERY_PATH}
"""Request kinds: the last level of a request topic, and the HTTP route that answers it."""

ASK_OPTIONS = frozenset(
    {"top_k", "planner", "executor", "seppr_k", "paths", "rerank", "repair", "strategies"}
)
"""``/v1/ask``'s optional fields (besides ``question``)."""
QUERY_OPTIONS = frozenset(
    {
        "language",
        "top_k",
        "paths",
        "include_anchors",
        "executor",
        "seppr_k",
        "render",
        "repair",
        "tighten",
        "max_answers",
        "tighten_with",
    }
)
"""``/v1/query``'s optional fields (besides ``query``)."""

_LEVEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def valid_topic_level(s: str) -> bool:
    """Whether ``s`` can be a device id or group name: 1-64 of ``A-Za-z0-9_-.``."""
    return bool(_LEVEL.match(s))


def request_topic(kind: str, device_id: Optional[str] = None) -> str:
    """``kgbox/{device_id}/{kind}``; with no device, ``kgbox/{kind}``, which
    one device of a shared-subscription group (``mqtt.group``) answers."""
    if kind not in KINDS:
        raise ValueError(f"unknown request kind {kind!r} (expected one of {sorted(KINDS)})")
    if device_id is None:
        return f"{ROOT}/{kind}"
    if not valid_topic_level(device_id):
        raise ValueError(f"device id {device_id!r} is not 1-64 characters of A-Za-z0-9_-.")
    return f"{ROOT}/{device_id}/{kind}"


def parse_request_topic(topic: str) -> Optional[tuple]:
    """``(kind, device_id)`` of a request topic (``device_id`` is ``None`` for a
    group request), or ``None`` when ``topic`` is not one."""
    parts = topic.split("/")
    if len(parts) == 2 and parts[0] == ROOT and parts[1] in KINDS:
        return parts[1], None
    if len(parts) == 3 and parts[0] == ROOT and parts[2] in KINDS and valid_topic_level(parts[1]):
        return parts[2], parts[1]
    return None


def status_topic(device_id: str) -> str:
    """``kgbox/{device_id}/status``: the device's retained status."""
    if not valid_topic_level(device_id):
        raise ValueError(f"device id {device_id!r} is not 1-64 characters of A-Za-z0-9_-.")
    return f"{ROOT}/{device_id}/status"


def _checked(kind: str, allowed: frozenset, options: Dict[str, Any]) -> Dict[str, Any]:
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(
            f"unknown {kind} option(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )
    return {k: v for k, v in options.items() if v is not None}


def ask_body(question: str, **options: Any) -> Dict[str, Any]:
    """The ``/v1/ask`` request body. Options left ``None`` take the device's
    defaults; an unknown option is a ``TypeError``."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a string, not {type(question).__name__}")
    return {"question": question, **_checked("ask", ASK_OPTIONS, options)}


def query_body(query: str, **options: Any) -> Dict[str, Any]:
    """The ``/v1/query`` request body (``query`` in kgbox's query language, or
    openCypher/SPARQL with ``language``)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, not {type(query).__name__}")
    body = _checked("query", QUERY_OPTIONS, options)
    if "tighten_with" in body:
        body["tighten_with"] = list(body["tighten_with"])
    return {"query": query, **body}
