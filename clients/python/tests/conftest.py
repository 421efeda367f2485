"""Where the live device and brokers are, from the environment.

The tests marked ``http``, ``mqtt`` and ``mqtts`` run against a real
``kgbox serve`` (serving the built-in demo bundle) and real brokers; the
others need nothing. ``tests/e2e/clients/python.rs`` starts all of them and
sets every variable below. By hand:

    KGBOXCLIENT_TEST_URL=http://127.0.0.1:8080      the device's HTTP address
    KGBOXCLIENT_TEST_MQTT_HOST=127.0.0.1            the broker (default 127.0.0.1)
    KGBOXCLIENT_TEST_MQTT_PORT=1883                 ... and its port
    KGBOXCLIENT_TEST_DEVICE=edge-1                  the device's mqtt.device_id
    KGBOXCLIENT_TEST_GROUP=1                        the device is in an mqtt.group
                                                    (tests kgbox/ask; optional)
    KGBOXCLIENT_TEST_MQTTS_PORT=8883                a TLS broker on MQTT_HOST ...
    KGBOXCLIENT_TEST_MQTTS_CA=/path/ca.pem          ... its CA ...
    KGBOXCLIENT_TEST_MQTTS_DEVICE=edge-tls          ... and a device behind it
    KGBOXCLIENT_TEST_REQUIRE=1                      fail, not skip, what lacks its variables

(The prefix is not ``KGBOX_``: ``kgbox`` reads every ``KGBOX_*`` variable as
configuration and refuses the ones it does not know.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import pytest

PREFIX = "KGBOXCLIENT_TEST_"


def env(name: str) -> Optional[str]:
    value = os.environ.get(PREFIX + name, "").strip()
    return value or None


def missing(what: str, names: str) -> None:
    """Skips the test, or fails it with KGBOXCLIENT_TEST_REQUIRE=1."""
    message = f"{what}: set {names} (see tests/conftest.py)"
    if env("REQUIRE") == "1":
        pytest.fail(message)
    pytest.skip(message)


@dataclass(frozen=True)
class Broker:
    host: str
    port: int
    device_id: str
    ca_file: Optional[str] = None
    group: bool = False


@pytest.fixture(scope="session")
def base_url() -> str:
    url = env("URL")
    if url is None:
        missing("a live kgbox serve", PREFIX + "URL")
    return url  # type: ignore[return-value]


@pytest.fixture(scope="session")
def broker() -> Broker:
    port, device = env("MQTT_PORT"), env("DEVICE")
    if port is None or device is None:
        missing("a broker and a device on it", f"{PREFIX}MQTT_PORT and {PREFIX}DEVICE")
    return Broker(env("MQTT_HOST") or "127.0.0.1", int(port), device, group=env("GROUP") == "1")  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def tls_broker() -> Broker:
    port, ca, device = env("MQTTS_PORT"), env("MQTTS_CA"), env("MQTTS_DEVICE")
    if port is None or ca is None or device is None:
        missing(
            "a TLS broker and a device on it",
            f"{PREFIX}MQTTS_PORT, {PREFIX}MQTTS_CA and {PREFIX}MQTTS_DEVICE",
        )
    return Broker(env("MQTT_HOST") or "127.0.0.1", int(port), device, ca_file=ca)  # type: ignore[arg-type]
