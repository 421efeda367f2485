"""The Node-RED example flow (clients/node-red/kgbox-flow.json) against what
the device expects: the same topics, request body and routes as this
client library, so the flow cannot drift from the device unnoticed.
No broker or device needed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List
from urllib.parse import urlsplit

import pytest

from kgbox_client import wire

FLOW = Path(__file__).resolve().parents[2] / "node-red" / "kgbox-flow.json"


@pytest.fixture(scope="module")
def flow() -> List[Dict[str, Any]]:
    nodes = json.loads(FLOW.read_text(encoding="utf-8"))
    assert isinstance(nodes, list) and all(isinstance(n, dict) for n in nodes)
    return nodes


def of_type(flow: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    return [n for n in flow if n.get("type") == kind]


def one(flow: List[Dict[str, Any]], kind: str) -> Dict[str, Any]:
    found = of_type(flow, kind)
    assert len(found) == 1, f"expected one {kind!r} node, found {len(found)}"
    return found[0]


def by_id(flow: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    return {n["id"]: n for n in flow}


def upstream(flow: List[Dict[str, Any]], node_id: str) -> List[Dict[str, Any]]:
    return [n for n in flow if any(node_id in out for out in n.get("wires", []))]


def test_flow_is_an_importable_node_red_flow(flow: List[Dict[str, Any]]) -> None:
    ids = [n.get("id") for n in flow]
    assert all(isinstance(i, str) and i for i in ids)
    assert len(ids) == len(set(ids)), "node ids must be unique"
    nodes = by_id(flow)
    tab = one(flow, "tab")
    config_types = {"tab", "mqtt-broker"}
    for n in flow:
        if n["type"] in config_types:
            continue
        assert n.get("z") == tab["id"], f"{n['id']} is not on the flow's tab"
        assert isinstance(n.get("x"), int) and isinstance(n.get("y"), int), n["id"]
        wires = n.get("wires")
        assert isinstance(wires, list) and all(isinstance(out, list) for out in wires), n["id"]
        for out in wires:
            for target in out:
                assert target in nodes, f"{n['id']} is wired to a missing node {target}"
                assert nodes[target]["type"] not in config_types
    for n in of_type(flow, "mqtt out") + of_type(flow, "mqtt in"):
        assert nodes.get(n["broker"], {}).get("type") == "mqtt-broker", n["id"]
    for kind in ["inject", "function", "mqtt out", "mqtt in", "json", "debug", "http request"]:
        assert of_type(flow, kind), f"no {kind!r} node"


def test_mqtt_request_matches_the_device(flow: List[Dict[str, Any]]) -> None:
    broker = one(flow, "mqtt-broker")
    assert broker["protocolVersion"] == "5", "request/response needs MQTT 5"

    out = one(flow, "mqtt out")
    parsed = wire.parse_request_topic(out["topic"])
    assert parsed is not None, f"{out['topic']!r} is not a device request topic"
    kind, device = parsed
    assert kind == wire.ASK
    assert out["topic"] == wire.request_topic(wire.ASK, device)
    assert out["qos"] == "1"
    # Left empty so that the message's properties (set by the function) apply.
    assert out["respTopic"] == "" and out["correl"] == ""

    (props,) = upstream(flow, out["id"])
    assert props["type"] == "function"
    code = props["func"]
    response_topic = re.search(r'msg\.responseTopic\s*=\s*"([^"]+)"', code)
    assert response_topic, "the function sets no msg.responseTopic"
    assert re.search(r"msg\.correlationData\s*=\s*Buffer\.from\(msg\._msgid\)", code)

    reply = one(flow, "mqtt in")
    assert reply["topic"] == response_topic.group(1), "replies are read where they are sent"
    assert reply["topic"].startswith(wire.REPLY_ROOT + "/"), "the broker ACL lets apps read reply/<account>/#"
    assert not any(c in reply["topic"] for c in "+#")
    assert reply["qos"] == "1"
    parse = by_id(flow)[reply["wires"][0][0]]
    assert parse["type"] == "json" and parse["action"] == "obj"
    assert by_id(flow)[parse["wires"][0][0]]["type"] == "debug"

    (inject,) = upstream(flow, props["id"])
    assert inject["type"] == "inject" and inject["payloadType"] == "json"
    payload = json.loads(inject["payload"])
    options = {k: v for k, v in payload.items() if k != "question"}
    assert wire.ask_body(payload["question"], **options) == payload

    node = shutil.which("node")
    if node is not None:
        # Run the function's code as Node-RED would, on the injected message.
        script = (
            "const f = new Function('msg', 'node', 'env', process.argv[1]);"
            "const out = f({payload: JSON.parse(process.argv[2]), _msgid: 'abc123'}, {}, {get: () => undefined});"
            "console.log(JSON.stringify({responseTopic: out.responseTopic,"
            " correlation: out.correlationData.toString(), contentType: out.contentType, payload: out.payload}));"
        )
        run = subprocess.run([node, "-e", script, code, inject["payload"]], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        assert result == {
            "responseTopic": reply["topic"],
            "correlation": "abc123",
            "contentType": "application/json",
            "payload": payload,
        }


def test_http_alternative_matches_the_api(flow: List[Dict[str, Any]]) -> None:
    request = one(flow, "http request")
    assert request["method"] == "POST"
    assert urlsplit(request["url"]).path == wire.ASK_PATH
    assert request["ret"] == "obj"
    headers = {h["keyType"]: h["valueType"] for h in request.get("headers", [])}
    assert headers.get("Content-Type") == "application/json"
    (inject,) = upstream(flow, request["id"])
    payload = json.loads(inject["payload"])
    assert wire.ask_body(payload["question"], **{k: v for k, v in payload.items() if k != "question"}) == payload
    assert by_id(flow)[request["wires"][0][0]]["type"] == "debug"
