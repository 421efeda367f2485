"""KgboxHttp against a live `kgbox serve` of the built-in demo bundle."""

from __future__ import annotations

import socket

import pytest

from kgbox_client import Answer, AskResult, KgboxError, KgboxHttp, KgboxTimeout, QueryResult, wire

pytestmark = pytest.mark.http

BLADE_RUNNER = ("Blade Runner", "directed_by", "Ridley Scott")


@pytest.fixture(scope="module")
def kg(base_url: str) -> KgboxHttp:
    return KgboxHttp(base_url, timeout=30)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_health_ready_and_status(kg: KgboxHttp) -> None:
    assert kg.health() is True
    assert kg.ready() is True
    status = kg.status()
    assert status.bundle_name == "demo-movies"
    assert status.source == "demo"
    assert status.slot is None
    assert status.health == "good"
    assert status.kgbox_version
    assert status.uptime_s is not None and status.uptime_s >= 0
    assert status.raw["bundle"]["name"] == "demo-movies"


def test_base_url_may_end_in_v1(base_url: str) -> None:
    kg = KgboxHttp(base_url.rstrip("/") + "/v1/")
    assert kg.base_url == base_url.rstrip("/")
    assert kg.query('"Blade Runner" -> directed_by').names == ["Ridley Scott"]


def test_ask_who_directed_blade_runner(kg: KgboxHttp) -> None:
    r = kg.ask("who directed [Blade Runner]")
    assert isinstance(r, AskResult)
    assert r.names == ["Ridley Scott"]
    best = r.best
    assert isinstance(best, Answer)
    assert best.name == "Ridley Scott"
    assert best.score == pytest.approx(1.0)
    assert best.id >= 0 and best.entity == best.id
    assert best.paths == [[BLADE_RUNNER]]
    assert r.query == '"Blade Runner" -> directed_by'
    assert r.planner == "learned"
    assert r.executor == "symbolic"
    assert r.topic is not None and r.topic.name == "Blade Runner"
    assert r.topic.mention == "Blade Runner" and r.topic.method == "exact"
    assert [e.name for e in r.linked] == ["Blade Runner"]
    assert r.arbitration["method"] == "threshold"
    assert r.plan["alternatives"][0]["template"] == "{topic} -> directed_by"
    assert r.candidates == 1
    total = r.timings_ms["total"]
    assert total is not None and total > 0
    assert set(r.timings_ms) >= {"link", "plan", "execute", "total"}


def test_ask_two_hops_with_options(kg: KgboxHttp) -> None:
    r = kg.ask("who directed the films written by [Hampton Fancher]", top_k=5, paths=False)
    assert r.names == ["Ridley Scott"]
    assert r.query == '"Hampton Fancher" -> written_by_inv -> directed_by'
    assert r.best is not None and r.best.paths == []


def test_query_in_the_dsl(kg: KgboxHttp) -> None:
    r = kg.query('"Blade Runner" -> directed_by')
    assert isinstance(r, QueryResult)
    assert r.names == ["Ridley Scott"]
    assert r.total == 1
    assert r.executor == "symbolic"
    assert r.edge_visits >= 1
    assert r.answers[0].paths == [[BLADE_RUNNER]]
    assert r.rendered is None and r.translated is None
    assert set(r.timings_ms) >= {"parse", "bind", "execute", "total"}


def test_query_rendered_and_translated(kg: KgboxHttp) -> None:
    r = kg.query('"Blade Runner" -> directed_by', render="sparql", top_k=3)
    assert r.names == ["Ridley Scott"]
    assert r.rendered is not None and r.rendered.language == "sparql"
    assert "SELECT" in r.rendered.text and "directed_by" in r.rendered.text

    cypher = 'MATCH (f {name: "Blade Runner"})-[:directed_by]->(d) RETURN d'
    r = kg.query(cypher, language="cypher")
    assert r.names == ["Ridley Scott"]
    assert r.translated == '"Blade Runner" -> directed_by'


def test_bad_dsl_is_a_400_with_its_code(kg: KgboxHttp) -> None:
    with pytest.raises(KgboxError) as info:
        kg.query("AND(( ->")
    e = info.value
    assert e.status == 400
    assert e.code == "syntax_error"
    assert "expected" in e.message
    assert e.details["line"] == 1 and e.details["column"] == 7
    assert str(e).startswith("400 syntax_error: ")


def test_unknown_entity_is_a_404_with_suggestions(kg: KgboxHttp) -> None:
    with pytest.raises(KgboxError) as info:
        kg.query('"Blade Runer" -> directed_by')
    assert info.value.status == 404
    assert info.value.code == "unknown_entity"
    assert info.value.suggestions == ["Blade Runner"]


def test_question_without_an_entity_is_a_422(kg: KgboxHttp) -> None:
    with pytest.raises(KgboxError) as info:
        kg.ask("qwxz zzqv")
    assert (info.value.status, info.value.code) == (422, "no_entity")
    with pytest.raises(KgboxError) as info:
        kg.ask("who directed [Blade Runner]", top_k=0)
    assert (info.value.status, info.value.code) == (400, "bad_request")


def test_unknown_options_fail_before_sending(kg: KgboxHttp) -> None:
    with pytest.raises(TypeError, match="colour"):
        kg.ask("who directed [Blade Runner]", colour="red")
    with pytest.raises(TypeError, match="topk"):
        kg.query('"Blade Runner" -> directed_by', topk=3)
    # The device refuses unknown fields too (422 bad_json): the raw route.
    status, body = kg.request("POST", wire.ASK_PATH, {"question": "x", "colour": 1}, raise_for_status=False)
    assert status == 422
    assert b"bad_json" in body


def test_every_option_the_client_knows_is_accepted(kg: KgboxHttp) -> None:
    """The client's option lists (wire.ASK_OPTIONS, wire.QUERY_OPTIONS)
    against the device: a renamed or removed field fails here."""
    ask = {
        "top_k": 3,
        "planner": "learned",
        "executor": "symbolic",
        "seppr_k": 100,
        "paths": 2,
        "rerank": False,
        "repair": True,
        "strategies": False,
    }
    assert set(ask) == wire.ASK_OPTIONS
    assert kg.ask("who directed [Blade Runner]", **ask).names == ["Ridley Scott"]
    query = {
        "language": "dsl",
        "top_k": 3,
        "paths": 1,
        "include_anchors": False,
        "executor": "symbolic",
        "seppr_k": 100,
        "render": "cypher",
        "repair": "auto",
        "tighten": False,
        "max_answers": 50,
        "tighten_with": [],
    }
    assert set(query) == wire.QUERY_OPTIONS
    r = kg.query('"Blade Runner" -> directed_by', **query)
    assert r.names == ["Ridley Scott"]
    assert r.rendered is not None and r.rendered.language == "cypher"


def test_unreachable_device() -> None:
    kg = KgboxHttp(f"http://127.0.0.1:{closed_port()}", timeout=5)
    with pytest.raises(KgboxError) as info:
        kg.status()
    assert info.value.code == "unreachable"
    assert info.value.status is None
    assert not isinstance(info.value, KgboxTimeout)


def test_no_reply_in_time_is_a_timeout() -> None:
    # A socket that accepts connections (the kernel's backlog) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        kg = KgboxHttp(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.5)
        with pytest.raises(KgboxTimeout) as info:
            kg.ask("who directed [Blade Runner]")
    assert isinstance(info.value, TimeoutError)
    assert info.value.code == "timeout"
