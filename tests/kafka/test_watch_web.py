"""The watcher's web page in a real browser (the Chromium of the Debian packages, driven through
its chromedriver by Selenium) on the session's Apache Kafka cluster: the page loads, shows the
brokers of the running cluster in their racks, refuses a changing request made without
credentials, and follows an execution it asked for (a throttled rebalance of one topic) to the end.

Without Chromium or its driver the test fails with the reason (scripts/setup.sh installs both)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.kafka_cluster import KafkaCluster
from tests.kafka.conftest import RACKS, Topics
from tests.kafka.following import ROOT, follower, stop_watcher, wait_for

pytestmark = [pytest.mark.browser]
TOKEN = "browser-test-token-0123456789"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture
def browser() -> Iterator[Any]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if shutil.which(path) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not installed: apt-get install chromium chromium-driver "
                    "(scripts/setup.sh does)", pytrace=False)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        pytest.fail(f"selenium not installed ({exc}): scripts/setup.sh installs the test extra", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def watcher(kafka: KafkaCluster, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """``watch`` with its web listener on a free loopback port, leaving the test's topics alone."""
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n")
    state = tmp_path / "watch"
    out = tmp_path / "watch.out"
    with follower(kafka, tmp_path, replica_assignor_class_name="multi-level") as server, \
            open(out, "w") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "kafka_replica_assignor.cli.main", "watch", "--bootstrap-server", kafka.bootstrap,
             "--assignor", server.bootstrap, "--state-dir", str(state), "--refresh-interval-ms", "500",
             "--timeout-ms", "10000", "--exclude-topics", "web-.*", "--http-listener", "0",
             "--http-token-file", str(tokens)],
            cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True)
        try:
            started = wait_for(lambda: _started(out), timeout=60, what="the watcher's start")
            yield started["http_port"], state
        finally:
            stop_watcher(process)


def _started(out: Path) -> dict[str, Any] | None:
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if record["event"] == "started":
            return record
    return None


def _produce(kafka: KafkaCluster, topic: str, megabytes: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", linger_ms=20, batch_size=512 * 1024,
                             max_request_size=2 * 1024 * 1024)
    value = b"x" * 100_000
    for i in range(megabytes * 10):
        producer.send(topic, value, partition=i % 6)
    producer.flush(timeout=120)
    producer.close()


def _text(driver: Any, element_id: str) -> str:
    return str(driver.find_element("id", element_id).text)


def test_the_page_shows_the_cluster_refuses_without_credentials_and_follows_an_execution(
        kafka: KafkaCluster, topics: Topics, watcher: tuple[int, Path], browser: Any) -> None:
    from selenium.webdriver.support.ui import Select

    port, state = watcher
    driver = browser
    name = topics.name("web-rebalance")
    # six partitions on brokers 0 and 3 only (both in /dc1/zone-a): a rebalance of the topic moves replicas
    out = kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--create", "--topic", name,
                     "--replica-assignment", "0:3,3:0,0:3,3:0,0:3,3:0")
    assert out.returncode == 0, out.stderr
    _produce(kafka, name, 24)

    driver.get(f"http://127.0.0.1:{port}/")
    assert driver.title == "replica-assignor watch"
    # not signed in: the state is refused, and so is a changing request
    wait_for(lambda: "401" in _text(driver, "message"), timeout=20, what="the state refused without credentials")
    driver.find_element("css selector", "button[data-control='cancel']").click()
    wait_for(lambda: "cancel refused: 401" in _text(driver, "message"), timeout=20,
             what="a cancel without credentials refused")
    driver.find_element("id", "action-dryrun").click()          # a real rebalance, still without credentials
    driver.find_element("id", "action-button").click()
    wait_for(lambda: "refused: 401" in _text(driver, "action-result"), timeout=20,
             what="a rebalance without credentials refused")
    assert not (state / "plans").exists() or not any((state / "plans").iterdir())

    # signed in: the brokers of the running cluster, in their racks
    driver.find_element("id", "login-secret").send_keys(TOKEN)
    driver.find_element("id", "login-button").click()

    def brokers() -> dict[int, str]:     # read in one script: the page redraws the tree every second
        chips = driver.execute_script("return [...document.querySelectorAll('#racks span.broker[data-broker-id]')]"
                                      ".map(c => [c.dataset.brokerId, c.dataset.state])")
        return {int(b): state for b, state in chips}

    shown = wait_for(lambda: brokers() if len(brokers()) == 5 else None, timeout=30, what="the five brokers")
    assert shown == dict.fromkeys(range(5), "up")
    racks = driver.execute_script("return [...document.querySelectorAll('#racks summary')].map(s => s.textContent)")
    assert set(racks) >= {"/dc1", "/dc2"} | {"/".join(r.split("/")[:3]) for r in RACKS}, racks

    # a throttled rebalance of the topic, asked through the page, followed to its end
    Select(driver.find_element("id", "action-endpoint")).select_by_value("rebalance")
    Select(driver.find_element("id", "action-mode")).select_by_value("replica")
    driver.find_element("id", "action-topics").send_keys(name)
    driver.find_element("id", "action-threshold").send_keys("0")
    driver.find_element("id", "action-throttle").send_keys("4000000")
    assert not driver.find_element("id", "action-dryrun").is_selected()
    driver.find_element("id", "action-button").click()
    result = wait_for(lambda: "task" in _text(driver, "action-result") and _text(driver, "action-result"),
                      timeout=120, what="the rebalance accepted")
    assert "queued" in result, result
    seen: list[tuple[str, float]] = []

    def ended() -> bool:
        status, percent = driver.execute_script(
            "return [document.getElementById('execution-status').dataset.status || '',"
            " parseFloat(document.getElementById('progress').dataset.percent || '0')]")
        percent = float(percent)
        if status and (not seen or seen[-1] != (status, percent)):
            seen.append((status, percent))
        return status not in ("", "running")

    began = time.monotonic()
    wait_for(ended, timeout=240, what="the execution's end on the page")
    print(f"execution followed for {time.monotonic() - began:.1f} s: {seen}")
    assert seen[-1] == ("done", 100.0), seen
    assert any(status == "running" for status, _ in seen), seen
    assert "last: operator rebalance task" in _text(driver, "execution-title")
    # the plan with its report in the page's list, the request in the audit log
    wait_for(lambda: driver.execute_script("return document.querySelector('#plans tbody').textContent")
             .count("report.md"), timeout=20, what="the plan listed with its report")
    records = [json.loads(line) for line in (state / "audit.jsonl").read_text().splitlines()]
    assert any(r["event"] == "requested" and r["endpoint"] == "rebalance" and r["user"] == "token" for r in records)
    assert any(r["event"] == "executed" and r["kind"] == "operator" and r["status"] == "done" for r in records)
