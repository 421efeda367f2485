"""KgboxMqtt against a real broker and a live device answering over MQTT 5."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import pytest

from conftest import Broker, missing
from kgbox_client import AskResult, KgboxError, KgboxMqtt, KgboxTimeout, QueryResult

# Films of the demo bundle with one director each: every request has its own answer.
DIRECTORS = {
    "Blade Runner": "Ridley Scott",
    "Eraserhead": "David Lynch",
    "Chinatown": "Roman Polanski",
    "Anatomy of a Murder": "Otto Preminger",
    "Crazy Heart": "Scott Cooper",
    "Foxes": "Adrian Lyne",
    "The Sun Shines Bright": "John Ford",
    "Otello": "Franco Zeffirelli",
    "The Pride of the Yankees": "Sam Wood",
    "Hilary and Jackie": "Anand Tucker",
}


@pytest.fixture(scope="module")
def kg(broker: Broker) -> Iterator[KgboxMqtt]:
    with KgboxMqtt(broker.host, broker.port, device_id=broker.device_id, timeout=30) as client:
        yield client


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.mqtt
def test_ask_round_trip(kg: KgboxMqtt, broker: Broker) -> None:
    assert kg.reply_topic.startswith(f"reply/{kg.client_id}/")
    r = kg.ask("who directed [Blade Runner]")
    assert isinstance(r, AskResult)
    assert r.names == ["Ridley Scott"]
    assert r.query == '"Blade Runner" -> directed_by'
    assert r.planner == "learned"
    assert r.best is not None and r.best.paths == [[("Blade Runner", "directed_by", "Ridley Scott")]]
    assert kg.pending == 0


@pytest.mark.mqtt
def test_query_round_trip(kg: KgboxMqtt) -> None:
    r = kg.query('"Hampton Fancher" -> written_by_inv -> directed_by', paths=False, render="sparql")
    assert isinstance(r, QueryResult)
    assert r.names == ["Ridley Scott"]
    assert r.total == 1
    assert r.best is not None and r.best.paths == []
    assert r.rendered is not None and r.rendered.language == "sparql"


@pytest.mark.mqtt
def test_error_replies_raise_kgbox_error(kg: KgboxMqtt) -> None:
    with pytest.raises(KgboxError) as info:
        kg.query("AND(( ->")
    assert (info.value.status, info.value.code) == (400, "syntax_error")
    assert info.value.details["column"] == 7
    with pytest.raises(KgboxError) as info:
        kg.query('"Blade Runer" -> directed_by')
    assert (info.value.status, info.value.code) == (404, "unknown_entity")
    assert info.value.suggestions == ["Blade Runner"]
    with pytest.raises(KgboxError) as info:
        kg.ask("qwxz zzqv")
    assert (info.value.status, info.value.code) == (422, "no_entity")
    # Malformed payloads get the HTTP handlers' replies.
    with pytest.raises(KgboxError) as info:
        kg.request("ask", {"question": "who directed [Blade Runner]", "colour": "red"})
    assert (info.value.status, info.value.code) == (422, "bad_json")
    with pytest.raises(KgboxError) as info:
        kg.request("query", b"not json")
    assert (info.value.status, info.value.code) == (400, "bad_json")
    assert kg.pending == 0


@pytest.mark.mqtt
def test_raw_request_returns_the_reply_body(kg: KgboxMqtt) -> None:
    body = kg.request("query", {"query": '"Eraserhead" -> directed_by', "top_k": 1})
    assert [a["name"] for a in body["answers"]] == ["David Lynch"]


@pytest.mark.mqtt
def test_concurrent_requests_get_their_own_replies(kg: KgboxMqtt) -> None:
    films = list(DIRECTORS) * 3
    # From many threads at once, questions and queries mixed ...
    def one(i_film: tuple) -> tuple:
        i, film = i_film
        if i % 2:
            return film, kg.ask(f"who directed [{film}]").names
        return film, kg.query(f'"{film}" -> directed_by').names

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(one, enumerate(films)))
    assert len(results) == len(films)
    for film, names in results:
        assert names == [DIRECTORS[film]], film

    # ... and all sent before any reply is read.
    futures = [kg.submit_query(f'"{film}" -> directed_by', paths=False) for film in films]
    assert [f.result(timeout=60).names for f in futures] == [[DIRECTORS[f]] for f in films]
    assert kg.pending == 0


@pytest.mark.mqtt
def test_two_clients_share_a_broker_without_crossing_replies(broker: Broker) -> None:
    a = KgboxMqtt(broker.host, broker.port, device_id=broker.device_id, timeout=30)
    b = KgboxMqtt(broker.host, broker.port, device_id=broker.device_id, timeout=30)
    try:
        assert a.reply_topic != b.reply_topic
        fa = [a.submit_query(f'"{f}" -> directed_by') for f in DIRECTORS]
        fb = [b.submit_ask(f"who directed [{f}]") for f in reversed(list(DIRECTORS))]
        assert [f.result(60).names for f in fa] == [[d] for d in DIRECTORS.values()]
        assert [f.result(60).names for f in fb] == [[d] for d in reversed(list(DIRECTORS.values()))]
    finally:
        a.close()
        b.close()


@pytest.mark.mqtt
def test_retained_status(kg: KgboxMqtt, broker: Broker) -> None:
    status = kg.status(timeout=30)
    assert status.device_id == broker.device_id
    assert status.online is True
    assert status.bundle_name == "demo-movies"
    assert status.health == "good"
    assert status.source == "demo"


@pytest.mark.mqtt
def test_group_request(broker: Broker) -> None:
    """``device_id=None`` publishes to kgbox/ask, answered by one device of
    the shared-subscription group."""
    if not broker.group:
        missing("a device in an mqtt.group", "KGBOXCLIENT_TEST_GROUP=1")
    with KgboxMqtt(broker.host, broker.port, device_id=None, timeout=30) as kg:
        assert kg.ask("who directed [Chinatown]").names == ["Roman Polanski"]
        assert kg.query('"Foxes" -> directed_by').names == ["Adrian Lyne"]
        with pytest.raises(ValueError):
            kg.status()


@pytest.mark.mqtt
def test_timeout_when_the_device_is_not_there(broker: Broker) -> None:
    with KgboxMqtt(broker.host, broker.port, device_id="nobody-home", timeout=0.5) as kg:
        start = time.monotonic()
        with pytest.raises(KgboxTimeout) as info:
            kg.ask("who directed [Blade Runner]")
        took = time.monotonic() - start
        assert 0.5 <= took < 10, took
        assert isinstance(info.value, TimeoutError)
        assert info.value.code == "timeout" and info.value.status is None
        assert "kgbox/nobody-home/ask" in info.value.message
        assert kg.pending == 0

        # Retries: each attempt waits its own timeout.
        start = time.monotonic()
        with pytest.raises(KgboxTimeout, match="3 attempts"):
            kg.query('"Blade Runner" -> directed_by', retries=2)
        assert time.monotonic() - start >= 1.5

        # Many at once all time out, none is left behind.
        futures = [kg.submit_ask(f"who directed [{f}]") for f in DIRECTORS]
        for f in futures:
            with pytest.raises(KgboxTimeout):
                f.result(timeout=30)
        assert kg.pending == 0

        with pytest.raises(KgboxTimeout):
            kg.status(timeout=0.5)  # no retained status either


@pytest.mark.mqtt
def test_close_fails_waiting_requests(broker: Broker) -> None:
    kg = KgboxMqtt(broker.host, broker.port, device_id="nobody-home", timeout=60)
    future = kg.submit_ask("who directed [Blade Runner]")
    closer = threading.Timer(0.2, kg.close)
    closer.start()
    with pytest.raises(KgboxError) as info:
        future.result(timeout=30)
    closer.join()
    assert info.value.code == "closed"
    with pytest.raises(KgboxError):
        kg.submit_ask("who directed [Blade Runner]")


def test_unreachable_broker() -> None:
    with pytest.raises(KgboxError) as info:
        KgboxMqtt("127.0.0.1", closed_port(), device_id="edge-1", connect_timeout=5)
    assert info.value.code == "unreachable"
    assert info.value.status is None


def test_bad_device_ids_are_refused() -> None:
    for bad in ["", "a/b", "a+b", "#", "x" * 65]:
        with pytest.raises(ValueError):
            KgboxMqtt("127.0.0.1", closed_port(), device_id=bad)


@pytest.mark.mqtts
def test_tls_round_trip(tls_broker: Broker) -> None:
    with KgboxMqtt(
        tls_broker.host,
        tls_broker.port,
        device_id=tls_broker.device_id,
        ca_file=tls_broker.ca_file,
        timeout=30,
    ) as kg:
        assert kg.ask("who directed [Blade Runner]").names == ["Ridley Scott"]
        assert kg.query('"Otello" -> directed_by').names == ["Franco Zeffirelli"]
        assert kg.status(timeout=30).online is True


@pytest.mark.mqtts
def test_tls_refuses_a_broker_the_ca_did_not_sign(tls_broker: Broker) -> None:
    # The system's CAs did not sign the test broker's certificate.
    with pytest.raises(KgboxError) as info:
        KgboxMqtt(tls_broker.host, tls_broker.port, device_id=tls_broker.device_id, tls=True, connect_timeout=10)
    assert info.value.code == "unreachable"
    assert "TLS" in info.value.message or "certificate" in info.value.message

