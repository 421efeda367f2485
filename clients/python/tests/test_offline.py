"""What needs no device: topics, request bodies, error and result parsing."""

from __future__ import annotations

import json
import warnings

import pytest

from kgbox_client import AskResult, DeviceStatus, KgboxError, KgboxTimeout, QueryResult, RepairedAnswerWarning, wire


def test_topics_follow_the_device_scheme() -> None:
    assert wire.request_topic("ask", "edge-7") == "kgbox/edge-7/ask"
    assert wire.request_topic("query", "edge-7") == "kgbox/edge-7/query"
    assert wire.request_topic("ask") == "kgbox/ask"
    assert wire.status_topic("edge-7") == "kgbox/edge-7/status"
    assert wire.parse_request_topic("kgbox/edge-7/query") == ("query", "edge-7")
    assert wire.parse_request_topic("kgbox/ask") == ("ask", None)
    for other in ["kgbox/edge-7/status", "kgbox/a/b/ask", "other/edge-7/ask", "kgbox/edge 7/ask"]:
        assert wire.parse_request_topic(other) is None, other
    for bad in ["", "a/b", "a+b", "#", "x" * 65]:
        with pytest.raises(ValueError):
            wire.request_topic("ask", bad)
    with pytest.raises(ValueError):
        wire.request_topic("link", "edge-7")
    assert wire.KINDS == {"ask": "/v1/ask", "query": "/v1/query"}


def test_request_bodies() -> None:
    assert wire.ask_body("who directed [Blade Runner]") == {"question": "who directed [Blade Runner]"}
    assert wire.ask_body("q", top_k=3, paths=None, rerank=False) == {"question": "q", "top_k": 3, "rerank": False}
    body = wire.query_body('"Blade Runner" -> directed_by', tighten_with=("Drama",), render="sparql")
    assert body == {"query": '"Blade Runner" -> directed_by', "tighten_with": ["Drama"], "render": "sparql"}
    with pytest.raises(TypeError, match="colour"):
        wire.ask_body("q", colour="red")
    with pytest.raises(TypeError):
        wire.query_body(5)  # type: ignore[arg-type]


def test_error_envelopes() -> None:
    body = json.dumps(
        {"error": {"code": "unknown_entity", "message": 'unknown entity "Blade Runer"', "suggestions": ["Blade Runner"], "line": 1}}
    ).encode()
    e = KgboxError.from_reply(404, body, "c5e5a65ce939882c")
    assert type(e) is KgboxError
    assert e.request_id == "c5e5a65ce939882c"
    assert (e.status, e.code, e.message) == (404, "unknown_entity", 'unknown entity "Blade Runer"')
    assert e.suggestions == ["Blade Runner"] and e.details["line"] == 1

    # A request past the device's deadline: 408 with an empty body.
    e = KgboxError.from_reply(408, b"")
    assert isinstance(e, KgboxTimeout) and isinstance(e, TimeoutError)
    assert (e.status, e.code) == (408, "timeout")

    e = KgboxError.from_reply(502, b"<html>bad gateway</html>")
    assert (e.status, e.code, e.message) == (502, "internal", "<html>bad gateway</html>")
    e = KgboxError.from_reply(405, b"")
    assert (e.code, e.message) == ("bad_request", "HTTP 405")


def test_results_keep_unknown_fields_and_tolerate_missing_ones() -> None:
    raw = {
        "answers": [{"id": 7, "entity": 7, "name": "Ridley Scott", "score": 0.9, "rerank_score": 0.8, "new": 1}],
        "query": '"Blade Runner" -> directed_by',
        "planner": "learned",
        "executor": "hybrid",
        "topic": None,
        "timings_ms": {"total": 1.5, "strategies": None},
        "something_new": {"x": 1},
    }
    r = AskResult.from_json(raw)
    assert r.names == ["Ridley Scott"]
    assert r.best is not None and r.best.rerank_score == 0.8 and r.best.paths == []
    assert r.best.raw["new"] == 1
    assert r.topic is None and r.linked == [] and r.repair is None
    assert r.timings_ms == {"total": 1.5, "strategies": None}
    assert r.raw["something_new"] == {"x": 1}

    q = QueryResult.from_json({"answers": [], "total": 0})
    assert q.best is None and q.names == [] and q.executor is None

    s = DeviceStatus.from_json({"device_id": "edge-7", "online": False})
    assert (s.device_id, s.online, s.bundle_name) == ("edge-7", False, None)

    with pytest.raises(KgboxError) as info:
        AskResult.from_json({"error": "no answers here"})
    assert info.value.code == "bad_reply"


def test_a_repaired_answer_says_so() -> None:
    caveat = 'repaired query: "Acme" -> employs — the question\'s query "Acme" -> member found nothing; this is a guess'
    raw = {
        "answers": [{"id": 3, "name": "Carol", "score": 1.0}],
        "query": '"Acme" -> member',
        "repair": {"kind": "relax", "original": '"Acme" -> member', "repaired": '"Acme" -> employs'},
        "confidence": "repaired",
        "caveat": caveat,
    }
    r = AskResult.from_json(raw)
    assert r.repaired and r.confidence == "repaired" and r.caveat == caveat
    with pytest.warns(RepairedAnswerWarning, match="this is a guess"):
        assert r.names == ["Carol"]
    # A high-confidence answer, and one from a device that does not say: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        high = AskResult.from_json({**raw, "repair": None, "confidence": "high", "caveat": None})
        assert not high.repaired and high.names == ["Carol"]
        old = AskResult.from_json({"answers": raw["answers"]})
        assert old.confidence is None and not old.repaired and old.names == ["Carol"]
    # A device that predates the field: the repair report tells.
    older = AskResult.from_json({k: v for k, v in raw.items() if k not in ("confidence", "caveat")})
    assert older.repaired
    with pytest.warns(RepairedAnswerWarning, match="employs"):
        assert older.names == ["Carol"]
