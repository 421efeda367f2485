"""The HTTP client (standard library only: ``urllib``)."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from typing import Any, Dict, Mapping, Optional, Tuple

from . import wire
from .errors import BAD_REPLY, UNREACHABLE, KgboxError, KgboxTimeout
from .results import AskResult, DeviceStatus, QueryResult

__all__ = ["KgboxHttp"]


class KgboxHttp:
    """A kgbox device over HTTP (docs/http-api.md).

    >>> kg = KgboxHttp("http://edge-7.lan:8080")
    >>> kg.ask("who directed [Blade Runner]").names
    ['Ridley Scott']

    ``base_url`` is the device's address (``http.listen``); a trailing
    ``/v1`` (as an OpenAI client takes it) is dropped. ``token``, when given,
    goes out as ``Authorization: Bearer <token>`` on every request (the
    admin routes need it; a reverse proxy in front of the device may too).
    ``timeout`` (seconds) bounds each request; ``ssl_context`` is for an
    ``https://`` address with a private CA.

    Errors raise :class:`~kgbox_client.KgboxError` (the device's status,
    ``code`` and ``message``); no reply in time raises
    :class:`~kgbox_client.KgboxTimeout`.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        token: Optional[str] = None,
        timeout: float = 30.0,
        *,
        headers: Optional[Mapping[str, str]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        url = base_url.rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url {base_url!r} must start with http:// or https://")
        self.base_url = url
        self.timeout = timeout
        self._headers: Dict[str, str] = {"Accept": "application/json", **dict(headers or {})}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._ssl = ssl_context

    def __repr__(self) -> str:
        return f"KgboxHttp({self.base_url!r})"

    def ask(self, question: str, *, timeout: Optional[float] = None, **options: Any) -> AskResult:
        """Asks a question in plain language (``POST /v1/ask``).

        ``options`` are the request's optional fields: ``top_k``, ``planner``,
        ``executor``, ``seppr_k``, ``paths``, ``rerank``, ``repair``,
        ``strategies`` (``None`` leaves the device's default).
        """
        body = wire.ask_body(question, **options)
        return AskResult.from_json(self._json("POST", wire.ASK_PATH, body, timeout))

    def query(self, query: str, *, timeout: Optional[float] = None, **options: Any) -> QueryResult:
        """Runs a query (``POST /v1/query``): kgbox's query language, or
        read-only openCypher or SPARQL with ``language="cypher"`` /
        ``"sparql"``.

        ``options``: ``language``, ``top_k``, ``paths``, ``include_anchors``,
        ``executor``, ``seppr_k``, ``render``, ``repair``, ``tighten``,
        ``max_answers``, ``tighten_with``.
        """
        body = wire.query_body(query, **options)
        return QueryResult.from_json(self._json("POST", wire.QUERY_PATH, body, timeout))

    def status(self, *, timeout: Optional[float] = None) -> DeviceStatus:
        """What the device serves (``GET /v1/status``)."""
        return DeviceStatus.from_json(self._json("GET", wire.STATUS_PATH, None, timeout))

    def health(self, *, timeout: Optional[float] = None) -> bool:
        """Liveness (``GET /healthz``): ``True`` when the process answers;
        raises :class:`~kgbox_client.KgboxError` when it cannot be reached."""
        status, _ = self.request("GET", wire.HEALTH_PATH, timeout=timeout, raise_for_status=True)
        return status == 200

    def ready(self, *, timeout: Optional[float] = None) -> bool:
        """Readiness (``GET /v2/health/ready``): ``True`` once the bundle is
        loaded, ``False`` while the device answers 503."""
        status, body = self.request("GET", wire.READY_PATH, timeout=timeout, raise_for_status=False)
        if status == 503:
            return False
        if status != 200:
            raise KgboxError.from_reply(status, body)
        return bool(_parse(body, wire.READY_PATH).get("ready"))

    def request(
        self,
        method: str,
        path: str,
        body: Optional[Any] = None,
        *,
        timeout: Optional[float] = None,
        raise_for_status: bool = True,
    ) -> Tuple[int, bytes]:
        """One request to ``path`` (JSON ``body`` when given): ``(status, body bytes)``.

        With ``raise_for_status`` a status of 400 or more raises
        :class:`~kgbox_client.KgboxError`. For routes this client does not wrap.
        """
        data = None
        headers = dict(self._headers)
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        limit = self.timeout if timeout is None else timeout
        where = f"{method} {self.base_url}{path}"
        try:
            with urllib.request.urlopen(req, timeout=limit, context=self._ssl) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, payload = e.code, e.read()
            request_id = e.headers.get("x-request-id") if e.headers is not None else None
            e.close()
            if raise_for_status:
                raise KgboxError.from_reply(status, payload, request_id) from None
            return status, payload
        except (socket.timeout, TimeoutError) as e:
            raise KgboxTimeout(f"{where}: no reply within {limit} s") from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise KgboxTimeout(f"{where}: no reply within {limit} s") from e
            raise KgboxError(f"{where}: {e.reason}", code=UNREACHABLE) from e
        except (ConnectionError, OSError) as e:
            raise KgboxError(f"{where}: {e}", code=UNREACHABLE) from e

    def _json(self, method: str, path: str, body: Optional[Any], timeout: Optional[float]) -> Dict[str, Any]:
        _, payload = self.request(method, path, body, timeout=timeout)
        return _parse(payload, path)


def _parse(payload: bytes, path: str) -> Dict[str, Any]:
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise KgboxError(f"{path}: the reply is not JSON ({e})", code=BAD_REPLY) from None
    if not isinstance(value, dict):
        raise KgboxError(f"{path}: the reply is not a JSON object", code=BAD_REPLY)
    return value
