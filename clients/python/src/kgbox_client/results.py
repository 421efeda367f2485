"""Typed results: the JSON bodies of ``/v1/ask``, ``/v1/query`` and
``/v1/status`` (docs/http-api.md) as dataclasses.

Each keeps the whole body in ``raw``, so fields this version does not name
are still at hand. Parsing is lenient: a field the device leaves out gets
its default.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import BAD_REPLY, KgboxError

Triple = Tuple[str, str, str]
"""``(head, relation, tail)``, by name."""
Path = List[Triple]
"""A provenance path: the triples that lead from the query's anchors to an answer."""


def _obj(value: Any, what: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise KgboxError(f"{what}: expected a JSON object, got {value!r:.200}", code=BAD_REPLY)
    return value


def _paths(value: Any) -> List[Path]:
    if not isinstance(value, list):
        return []
    return [[tuple(t) for t in path if isinstance(t, list) and len(t) == 3] for path in value if isinstance(path, list)]  # type: ignore[misc]


def _float_map(value: Any) -> Dict[str, Optional[float]]:
    if not isinstance(value, dict):
        return {}
    return {k: (float(v) if isinstance(v, (int, float)) else None) for k, v in value.items()}


@dataclass(frozen=True)
class Answer:
    """One answer: an entity of the graph with its score and provenance."""

    id: int
    """The entity's id in the served bundle (``#ID`` in a query names it)."""
    name: str
    score: float
    paths: List[Path] = field(default_factory=list)
    """Up to ``paths`` provenance paths (empty when the request asked for none)."""
    rerank_score: Optional[float] = None
    """The reranker's score, when it ran."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def entity(self) -> int:
        """The entity id (``/v1/ask``'s deprecated ``entity`` field)."""
        return self.id

    @classmethod
    def from_json(cls, value: Any) -> "Answer":
        d = _obj(value, "answer")
        ident = d.get("id", d.get("entity"))
        rerank = d.get("rerank_score")
        return cls(
            id=int(ident) if isinstance(ident, int) else -1,
            name=str(d.get("name", "")),
            score=float(d.get("score", 0.0)),
            paths=_paths(d.get("paths")),
            rerank_score=float(rerank) if isinstance(rerank, (int, float)) else None,
            raw=d,
        )


@dataclass(frozen=True)
class LinkedEntity:
    """An entity found in the question (``/v1/ask``'s ``topic`` and ``linked``)."""

    entity: int
    name: str
    mention: str
    """The text of the question that named it."""
    probability: float
    method: str
    """``exact``, ``alias``, ``fuzzy`` or ``dense``."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "LinkedEntity":
        d = _obj(value, "linked entity")
        return cls(
            entity=int(d.get("entity", -1)),
            name=str(d.get("name", "")),
            mention=str(d.get("mention", "")),
            probability=float(d.get("probability", 0.0)),
            method=str(d.get("method", "")),
            raw=d,
        )


def _answers(d: Dict[str, Any]) -> List[Answer]:
    answers = d.get("answers")
    if not isinstance(answers, list):
        raise KgboxError(f"a reply without answers: {d!r:.200}", code=BAD_REPLY)
    return [Answer.from_json(a) for a in answers]


class RepairedAnswerWarning(UserWarning):
    """Issued by :attr:`AskResult.names` when the answers come from a
    repaired query (the question's own query found nothing, or too much):
    they are a guess. The message is the device's ``caveat``. Silence it
    with ``warnings.simplefilter("ignore", RepairedAnswerWarning)``."""


class _Answers:
    answers: List[Answer]

    @property
    def names(self) -> List[str]:
        """The answers' names, best first."""
        return [a.name for a in self.answers]

    @property
    def best(self) -> Optional[Answer]:
        """The best answer, or ``None`` when there is none."""
        return self.answers[0] if self.answers else None


@dataclass(frozen=True)
class AskResult(_Answers):
    """The answer to a question (``POST /v1/ask``)."""

    answers: List[Answer]
    query: Optional[str]
    """The query (in kgbox's query language) that ran."""
    planner: Optional[str]
    """``learned``, ``zeroshot``, ``llm`` or ``local``."""
    executor: Optional[str]
    topic: Optional[LinkedEntity]
    linked: List[LinkedEntity]
    timings_ms: Dict[str, Optional[float]]
    """``link``, ``plan``, ``execute``, ``rerank``, ``arbitrate``, ``strategies``, ``total``."""
    candidates: int = 0
    plan: Dict[str, Any] = field(default_factory=dict)
    arbitration: Dict[str, Any] = field(default_factory=dict)
    repair: Optional[Dict[str, Any]] = None
    rerank: Optional[Dict[str, Any]] = None
    strategies: Optional[List[Dict[str, Any]]] = None
    confidence: Optional[str] = None
    """``high``; ``repaired`` when the answers come from a repaired query (a
    guess); ``low`` when there is none or the best scores under the device's
    low-confidence bound. ``None`` from a device too old to say."""
    caveat: Optional[str] = None
    """Why the answers are not ``high`` confidence, in words (``None`` when they are)."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def repaired(self) -> bool:
        """Whether the answers come from a repaired query, not the question's own."""
        if self.confidence is not None:
            return self.confidence == "repaired"
        return bool(self.repair and self.repair.get("repaired"))

    @property
    def names(self) -> List[str]:
        """The answers' names, best first. For a repaired query's answers
        (:attr:`repaired`) a :class:`RepairedAnswerWarning` says so first."""
        if self.answers and self.repaired:
            note = self.caveat or f"repaired query: {(self.repair or {}).get('repaired')}"
            warnings.warn(note, RepairedAnswerWarning, stacklevel=2)
        return [a.name for a in self.answers]

    @classmethod
    def from_json(cls, value: Any) -> "AskResult":
        d = _obj(value, "ask reply")
        topic = d.get("topic")
        linked = d.get("linked")
        strategies = d.get("strategies")
        return cls(
            answers=_answers(d),
            query=d.get("query"),
            planner=d.get("planner"),
            executor=d.get("executor"),
            topic=LinkedEntity.from_json(topic) if isinstance(topic, dict) else None,
            linked=[LinkedEntity.from_json(x) for x in linked] if isinstance(linked, list) else [],
            timings_ms=_float_map(d.get("timings_ms")),
            candidates=int(d.get("candidates", 0) or 0),
            plan=d.get("plan") if isinstance(d.get("plan"), dict) else {},
            arbitration=d.get("arbitration") if isinstance(d.get("arbitration"), dict) else {},
            repair=d.get("repair") if isinstance(d.get("repair"), dict) else None,
            rerank=d.get("rerank") if isinstance(d.get("rerank"), dict) else None,
            strategies=strategies if isinstance(strategies, list) else None,
            confidence=d.get("confidence") if isinstance(d.get("confidence"), str) else None,
            caveat=d.get("caveat") if isinstance(d.get("caveat"), str) else None,
            raw=d,
        )


@dataclass(frozen=True)
class Rendered:
    """The query in another language (``render``)."""

    language: str
    """``cypher`` or ``sparql``."""
    text: str


@dataclass(frozen=True)
class QueryResult(_Answers):
    """The answers of a query (``POST /v1/query``)."""

    answers: List[Answer]
    total: int
    """Entities with a non-zero score (``answers`` holds the ``top_k`` best)."""
    executor: Optional[str]
    edge_visits: int
    timings_ms: Dict[str, Optional[float]]
    """``parse``, ``bind``, ``execute``, ``repair`` (``None`` when repair did not run), ``total``."""
    rendered: Optional[Rendered] = None
    translated: Optional[str] = None
    """For an openCypher or SPARQL query: the query-language text it became."""
    repair: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "QueryResult":
        d = _obj(value, "query reply")
        rendered = d.get("rendered")
        return cls(
            answers=_answers(d),
            total=int(d.get("total", 0) or 0),
            executor=d.get("executor"),
            edge_visits=int(d.get("edge_visits", 0) or 0),
            timings_ms=_float_map(d.get("timings_ms")),
            rendered=(
                Rendered(str(rendered.get("language", "")), str(rendered.get("text", "")))
                if isinstance(rendered, dict)
                else None
            ),
            translated=d.get("translated"),
            repair=d.get("repair") if isinstance(d.get("repair"), dict) else None,
            raw=d,
        )


@dataclass(frozen=True)
class DeviceStatus:
    """What a device serves (``GET /v1/status``, or its retained MQTT status)."""

    bundle_name: Optional[str]
    bundle_version: Optional[str]
    source: Optional[str]
    """``slot-a``, ``slot-b`` or ``demo``."""
    slot: Optional[str]
    health: Optional[str]
    """``pending``, ``trial``, ``good`` or ``bad``."""
    digest: Optional[str] = None
    uptime_s: Optional[int] = None
    kgbox_version: Optional[str] = None
    last_deploy: Optional[Dict[str, Any]] = None
    device_id: Optional[str] = None
    """MQTT only: ``mqtt.device_id``."""
    online: Optional[bool] = None
    """MQTT only: ``False`` in the last will and after a clean shutdown."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "DeviceStatus":
        d = _obj(value, "status")
        bundle = d.get("bundle") if isinstance(d.get("bundle"), dict) else {}
        uptime = d.get("uptime_s")
        online = d.get("online")
        return cls(
            bundle_name=bundle.get("name"),
            bundle_version=bundle.get("version"),
            source=d.get("source"),
            slot=d.get("slot"),
            health=d.get("health"),
            digest=d.get("digest"),
            uptime_s=int(uptime) if isinstance(uptime, (int, float)) else None,
            kgbox_version=d.get("kgbox_version"),
            last_deploy=d.get("last_deploy") if isinstance(d.get("last_deploy"), dict) else None,
            device_id=d.get("device_id"),
            online=online if isinstance(online, bool) else None,
            raw=d,
        )
