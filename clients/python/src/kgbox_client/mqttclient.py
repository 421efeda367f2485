"""The MQTT 5 client (paho-mqtt 2): request/response with a response topic
and correlation data (docs/mqtt.md)."""

from __future__ import annotations

import heapq
import itertools
import json
import ssl
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from . import wire
from .errors import BAD_REPLY, CLOSED, CONNECT_REFUSED, UNREACHABLE, KgboxError, KgboxTimeout
from .results import AskResult, DeviceStatus, QueryResult

__all__ = ["KgboxMqtt"]

T = TypeVar("T")


class _Request:
    """One request in flight: its future, the correlation data of each attempt,
    and when the current attempt gives up."""

    __slots__ = ("future", "topic", "payload", "parse", "timeout", "attempts_left", "correlations", "deadline")

    def __init__(
        self,
        future: "Future[Any]",
        topic: str,
        payload: bytes,
        parse: Callable[[Dict[str, Any]], Any],
        timeout: float,
        retries: int,
    ) -> None:
        self.future = future
        self.topic = topic
        self.payload = payload
        self.parse = parse
        self.timeout = timeout
        self.attempts_left = retries
        self.correlations: List[bytes] = []
        self.deadline = 0.0


class KgboxMqtt:
    """A kgbox device over MQTT 5 (docs/mqtt.md).

    >>> with KgboxMqtt("broker.lan", device_id="edge-7") as kg:
    ...     kg.ask("who directed [Blade Runner]").names
    ['Ridley Scott']

    Requests go to ``kgbox/{device_id}/ask`` or ``/query`` (with
    ``device_id=None``: ``kgbox/ask``, which one device of a
    shared-subscription group answers) with QoS 1, this client's reply topic
    as the MQTT 5 *response topic* and a fresh *correlation data* per
    request; the reply with the same correlation data completes it. The
    client subscribes to its reply topic once, at connect (and again after
    a reconnect). Its default, ``reply/{username or client_id}/{random}``,
    fits the shipped broker ACL (``reply/<account>/#``).

    ``timeout`` (seconds) bounds each attempt; ``retries`` sends a request
    again (with new correlation data; a late reply to an earlier attempt
    still counts) when an attempt times out. TLS: ``tls=True`` with the
    system's CAs, or ``ca_file`` (implies TLS), ``certfile``/``keyfile`` for
    a client certificate, ``tls_insecure`` to skip the host name check, or a
    ready ``ssl_context``. ``port`` defaults to 8883 with TLS, else 1883.

    Errors: the device's error replies raise :class:`~kgbox_client.KgboxError`
    (its ``status`` property, ``code``, ``message``); no reply in time raises
    :class:`~kgbox_client.KgboxTimeout`; a broker that cannot be reached or
    refuses the connection raises :class:`~kgbox_client.KgboxError` at
    construction (``code`` ``"unreachable"`` or ``"connect_refused"``).
    Thread-safe: requests from several threads share one connection.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: Optional[int] = None,
        *,
        device_id: Optional[str],
        timeout: float = 30.0,
        retries: int = 0,
        client_id: Optional[str] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
        reply_topic: Optional[str] = None,
        tls: bool = False,
        ca_file: Optional[str] = None,
        certfile: Optional[str] = None,
        keyfile: Optional[str] = None,
        tls_insecure: bool = False,
        ssl_context: Optional[ssl.SSLContext] = None,
        keepalive: int = 60,
        connect_timeout: float = 10.0,
    ) -> None:
        if device_id is not None and not wire.valid_topic_level(device_id):
            raise ValueError(f"device id {device_id!r} is not 1-64 characters of A-Za-z0-9_-.")
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        self.device_id = device_id
        self.timeout = timeout
        self.retries = retries
        self.client_id = client_id or f"kgbox-py-{uuid.uuid4().hex[:12]}"
        account = username or self.client_id
        self.reply_topic = reply_topic or f"{wire.REPLY_ROOT}/{account}/{uuid.uuid4().hex}"
        if any(c in self.reply_topic for c in "+#"):
            raise ValueError(f"reply topic {self.reply_topic!r} must not hold wildcards")
        use_tls = tls or ca_file is not None or certfile is not None or ssl_context is not None
        self.host = host
        self.port = port if port is not None else (8883 if use_tls else 1883)

        self._lock = threading.Lock()
        self._requests: Dict[bytes, _Request] = {}
        self._status_waiters: Dict[str, List["Future[DeviceStatus]"]] = {}
        self._deadlines: List[Tuple[float, int, _Request]] = []
        self._tie = itertools.count()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._subscribed = threading.Event()
        self._connect_error: Optional[KgboxError] = None
        self._reply_mid: Optional[int] = None

        c = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=mqtt.MQTTv5,
        )
        if username is not None:
            c.username_pw_set(username, password)
        if ssl_context is not None:
            c.tls_set_context(ssl_context)
        elif use_tls:
            c.tls_set(ca_certs=ca_file, certfile=certfile, keyfile=keyfile)
        if tls_insecure:
            c.tls_insecure_set(True)
        c.connect_timeout = connect_timeout
        c.reconnect_delay_set(min_delay=1, max_delay=30)
        c.on_connect = self._on_connect
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        c.on_disconnect = self._on_disconnect
        self._client = c

        where = f"the MQTT broker {self.host}:{self.port}"
        try:
            c.connect(self.host, self.port, keepalive=keepalive, clean_start=True)
        except ssl.SSLError as e:
            raise KgboxError(f"{where}: TLS failed: {e}", code=UNREACHABLE) from e
        except (OSError, ValueError) as e:
            raise KgboxError(f"cannot reach {where}: {e}", code=UNREACHABLE) from e
        c.loop_start()
        self._reaper = threading.Thread(target=self._reap, name="kgbox-mqtt-timeouts", daemon=True)
        self._reaper.start()
        if not self._subscribed.wait(connect_timeout) or self._connect_error is not None:
            error = self._connect_error or KgboxTimeout(
                f"{where}: not connected and subscribed to {self.reply_topic} within {connect_timeout} s"
            )
            self.close()
            raise error

    # --- the public API -------------------------------------------------------

    def ask(
        self,
        question: str,
        *,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        **options: Any,
    ) -> AskResult:
        """Asks a question (``kgbox/{id}/ask``); ``options`` as for
        :meth:`KgboxHttp.ask <kgbox_client.KgboxHttp.ask>`."""
        return self.submit_ask(question, timeout=timeout, retries=retries, **options).result()

    def query(
        self,
        query: str,
        *,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        **options: Any,
    ) -> QueryResult:
        """Runs a query (``kgbox/{id}/query``); ``options`` as for
        :meth:`KgboxHttp.query <kgbox_client.KgboxHttp.query>`."""
        return self.submit_query(query, timeout=timeout, retries=retries, **options).result()

    def submit_ask(
        self,
        question: str,
        *,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        **options: Any,
    ) -> "Future[AskResult]":
        """Sends a question and returns at once: a future of its
        :class:`~kgbox_client.AskResult` (or its error), completed within the
        timeout (per attempt)."""
        body = wire.ask_body(question, **options)
        return self.submit(wire.ASK, body, AskResult.from_json, timeout=timeout, retries=retries)

    def submit_query(
        self,
        query: str,
        *,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
        **options: Any,
    ) -> "Future[QueryResult]":
        """Sends a query and returns at once: a future of its
        :class:`~kgbox_client.QueryResult`."""
        body = wire.query_body(query, **options)
        return self.submit(wire.QUERY, body, QueryResult.from_json, timeout=timeout, retries=retries)

    def request(self, kind: str, body: Any, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Sends ``body`` as it is (any JSON value, or ``bytes`` sent unchanged)
        to the ``kind`` topic (``"ask"`` or ``"query"``) and returns the reply's
        JSON object; an error reply raises."""
        return self.submit(kind, body, lambda d: d, timeout=timeout).result()

    def submit(
        self,
        kind: str,
        body: Any,
        parse: Callable[[Dict[str, Any]], T],
        *,
        timeout: Optional[float] = None,
        retries: Optional[int] = None,
    ) -> "Future[T]":
        """Sends ``body`` to the ``kind`` topic; the future's result is
        ``parse`` of the reply's JSON object."""
        topic = wire.request_topic(kind, self.device_id)
        payload = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        future: "Future[T]" = Future()
        req = _Request(
            future,
            topic,
            payload,
            parse,
            self.timeout if timeout is None else timeout,
            self.retries if retries is None else retries,
        )
        with self._lock:
            if self._closed:
                raise KgboxError("the client is closed", code=CLOSED)
            correlation = self._attempt(req)
        self._publish(req, correlation)
        return future

    def status(self, *, timeout: Optional[float] = None) -> DeviceStatus:
        """The device's retained status (``kgbox/{id}/status``): what it
        serves, and ``online`` (``False`` once it went away)."""
        if self.device_id is None:
            raise ValueError("status() needs a device_id")
        topic = wire.status_topic(self.device_id)
        future: "Future[DeviceStatus]" = Future()
        with self._lock:
            waiters = self._status_waiters.setdefault(topic, [])
            first = not waiters
            waiters.append(future)
        if first:
            self._client.subscribe(topic, qos=1)
        limit = self.timeout if timeout is None else timeout
        try:
            return future.result(limit)
        except Exception as e:
            if isinstance(e, KgboxError):
                raise
            raise KgboxTimeout(f"no retained status on {topic} within {limit} s") from None
        finally:
            with self._lock:
                waiters = self._status_waiters.get(topic, [])
                if future in waiters:
                    waiters.remove(future)
                last = not waiters
                if last:
                    self._status_waiters.pop(topic, None)
            if last and not self._closed:
                self._client.unsubscribe(topic)

    @property
    def pending(self) -> int:
        """Requests waiting for their reply."""
        with self._lock:
            return len({id(r) for r in self._requests.values()})

    def close(self) -> None:
        """Fails the requests still waiting (``code`` ``"closed"``) and disconnects."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiting = {id(r): r for r in self._requests.values()}.values()
            self._requests.clear()
            self._deadlines.clear()
            statuses = [f for fs in self._status_waiters.values() for f in fs]
            self._wake.notify_all()
        for r in waiting:
            _fail(r.future, KgboxError("the client was closed", code=CLOSED))
        for f in statuses:
            _fail(f, KgboxError("the client was closed", code=CLOSED))
        try:
            self._client.disconnect()
        finally:
            self._client.loop_stop()

    def __enter__(self) -> "KgboxMqtt":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KgboxMqtt({self.host!r}, {self.port}, device_id={self.device_id!r})"

    # --- inside ---------------------------------------------------------------

    def _attempt(self, req: _Request) -> bytes:
        """Registers a new attempt of ``req`` (holding the lock): its
        correlation data, which it returns, and its deadline."""
        correlation = uuid.uuid4().hex.encode("ascii")
        req.correlations.append(correlation)
        req.deadline = time.monotonic() + req.timeout
        self._requests[correlation] = req
        heapq.heappush(self._deadlines, (req.deadline, next(self._tie), req))
        self._wake.notify()
        return correlation

    def _publish(self, req: _Request, correlation: bytes) -> None:
        """Publishes one attempt (not holding the lock: paho takes its own)."""
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = self.reply_topic
        props.CorrelationData = correlation
        props.ContentType = "application/json"
        info = self._client.publish(req.topic, req.payload, qos=1, properties=props)
        # MQTT_ERR_NO_CONN: queued until the connection is back (or the timeout).
        if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
            with self._lock:
                self._forget(req)
            error = f"cannot publish to {req.topic}: {mqtt.error_string(info.rc)}"
            _fail(req.future, KgboxError(error, code=UNREACHABLE))

    def _forget(self, req: _Request) -> None:
        for c in req.correlations:
            self._requests.pop(c, None)

    def _reap(self) -> None:
        """Times out attempts past their deadline: sends the next attempt, or
        fails the request."""
        while True:
            again: List[Tuple[_Request, bytes]] = []
            failed: List[_Request] = []
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                while self._deadlines and self._deadlines[0][0] <= now:
                    deadline, _, req = heapq.heappop(self._deadlines)
                    if req.future.done() or deadline != req.deadline:
                        continue
                    if req.attempts_left > 0:
                        req.attempts_left -= 1
                        again.append((req, self._attempt(req)))
                    else:
                        self._forget(req)
                        failed.append(req)
                if not again and not failed:
                    wait = self._deadlines[0][0] - now if self._deadlines else None
                    self._wake.wait(wait)
                    continue
            for req, correlation in again:
                self._publish(req, correlation)
            for req in failed:
                attempts = len(req.correlations)
                _fail(
                    req.future,
                    KgboxTimeout(
                        f"no reply on {self.reply_topic} to the request on {req.topic} "
                        f"within {req.timeout} s"
                        + (f" ({attempts} attempts)" if attempts > 1 else "")
                    ),
                )

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            self._connect_error = KgboxError(
                f"the MQTT broker {self.host}:{self.port} refused the connection: {reason}",
                code=CONNECT_REFUSED,
            )
            self._subscribed.set()
            client.disconnect()
            return
        _, mid = client.subscribe(self.reply_topic, qos=1)
        self._reply_mid = mid
        with self._lock:
            statuses = list(self._status_waiters)
        for topic in statuses:
            client.subscribe(topic, qos=1)

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reasons: Any, properties: Any) -> None:
        if mid != self._reply_mid:
            return
        if any(r.is_failure for r in reasons):
            self._connect_error = KgboxError(
                f"the MQTT broker refused the subscription to {self.reply_topic}: {reasons}",
                code=CONNECT_REFUSED,
            )
        self._subscribed.set()

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        self._subscribed.clear()

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        if msg.topic == self.reply_topic:
            self._on_reply(msg)
            return
        with self._lock:
            waiters = self._status_waiters.get(msg.topic, [])
            ready = list(waiters)
        for f in ready:
            try:
                status = DeviceStatus.from_json(json.loads(msg.payload.decode("utf-8")))
            except (KgboxError, UnicodeDecodeError, ValueError) as e:
                _fail(f, KgboxError(f"{msg.topic}: not a status message ({e})", code=BAD_REPLY))
                continue
            _resolve(f, status)

    def _on_reply(self, msg: mqtt.MQTTMessage) -> None:
        props = msg.properties
        correlation = getattr(props, "CorrelationData", None)
        if correlation is None:
            return
        with self._lock:
            req = self._requests.get(bytes(correlation))
            if req is None:
                return  # a late reply, or a duplicate (QoS 1 after a reconnect)
            self._forget(req)
        user = dict(getattr(props, "UserProperty", None) or [])
        payload = bytes(msg.payload)
        try:
            status = int(user.get("status", "200"))
        except ValueError:
            status = 500
        if status >= 400:
            _fail(req.future, KgboxError.from_reply(status, payload, user.get("request-id")))
            return
        try:
            value = json.loads(payload.decode("utf-8"))
            if not isinstance(value, dict):
                raise ValueError("not a JSON object")
            result = req.parse(value)
        except KgboxError as e:
            _fail(req.future, e)
        except (UnicodeDecodeError, ValueError, TypeError) as e:
            _fail(req.future, KgboxError(f"a reply on {msg.topic} that is not usable JSON: {e}", code=BAD_REPLY))
        else:
            _resolve(req.future, result)


def _resolve(future: "Future[Any]", value: Any) -> None:
    if not future.done():
        try:
            future.set_result(value)
        except Exception:  # completed meanwhile (InvalidStateError, 3.8+)
            pass


def _fail(future: "Future[Any]", error: BaseException) -> None:
    if not future.done():
        try:
            future.set_exception(error)
        except Exception:
            pass
