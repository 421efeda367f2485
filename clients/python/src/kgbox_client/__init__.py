"""Python client for kgbox devices: questions and queries over HTTP
(:class:`KgboxHttp`, standard library only) and over MQTT 5 request/response
(:class:`KgboxMqtt`, paho-mqtt 2), with typed results and one error type.

    from kgbox_client import KgboxHttp, KgboxMqtt, KgboxError

    kg = KgboxHttp("http://edge-7.lan:8080")
    print(kg.ask("who directed [Blade Runner]").names)      # ['Ridley Scott']

    with KgboxMqtt("broker.lan", device_id="edge-7") as kg:
        print(kg.query('"Blade Runner" -> directed_by').best)
"""

from typing import Any

from . import wire
from .errors import KgboxError, KgboxTimeout
from .httpclient import KgboxHttp
from .results import Answer, AskResult, DeviceStatus, LinkedEntity, QueryResult, Rendered, RepairedAnswerWarning

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "AskResult",
    "DeviceStatus",
    "KgboxError",
    "KgboxHttp",
    "KgboxMqtt",
    "KgboxTimeout",
    "LinkedEntity",
    "QueryResult",
    "Rendered",
    "RepairedAnswerWarning",
    "wire",
]


def __getattr__(name: str) -> Any:
    # KgboxMqtt imports paho-mqtt: only when it is asked for, so HTTP works without it.
    if name == "KgboxMqtt":
        try:
            from .mqttclient import KgboxMqtt
        except ModuleNotFoundError as e:
            if e.name is None or not e.name.startswith("paho"):
                raise
            raise ModuleNotFoundError(
                "KgboxMqtt needs paho-mqtt 2: pip install 'kgbox-client[mqtt]'",
                name=e.name,
            ) from e

        return KgboxMqtt
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
