"""The web console in a real browser (headless Debian chromium + chromedriver) against a real
``serve`` process on a free 127.0.0.1 port, and its security checks over plain HTTP.

Screenshots are kept under ``test-artifacts/console/``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, EngineCLI, engine_env
from tests.test_park import make_task, park

pytestmark = pytest.mark.timeout(900)  # waits on the page are guarded by HANG_GUARD_S

ARTIFACTS = ROOT / "test-artifacts" / "console"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, db: Path, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "serve", "--port", str(self.port), "--db", str(db),
             *extra], cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("serve did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def server(cli: EngineCLI) -> Iterator[Server]:
    s = Server(cli.db)
    yield s
    s.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path / 'chrome-profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


HANG_GUARD_S = 180.0
"""How long a wait on the page may take before the test gives up: a hang guard, not a speed
claim (a busy CI machine once took more than 30 s to show three new steps)."""


def wait_for(fn, timeout: float = HANG_GUARD_S,  # type: ignore[no-untyped-def]
             every: float = 0.05, seen=None):
    """``fn()`` once it is truthy; on timeout the error carries ``seen()``, what the page and
    the store showed, so a failure on a CI machine says which side stopped."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("timed out waiting" + (f"; seen: {seen()}" if seen else ""))


def _text(driver, element_id: str) -> str:  # type: ignore[no-untyped-def]
    """The element's text, or "" while the page that has it is still loading."""
    return str(driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e ? e.textContent : ''",
        element_id))


def _rows(driver, css: str) -> int:  # type: ignore[no-untyped-def]
    return int(driver.execute_script(f"return document.querySelectorAll('{css}').length"))


# -- browser ----------------------------------------------------------------------------------


def test_run_list_and_diagram_highlight(cli: EngineCLI, server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    info = cli.json("run", "machines/coding_agent.yaml")
    browser.get(server.url + "/")
    wait_for(lambda: _rows(browser, f'tr[data-run="{info["run_id"]}"]') == 1)
    assert "completed" in browser.find_element("css selector", "#runs").text
    browser.save_screenshot(str(ARTIFACTS / "runs.png"))
    browser.get(f"{server.url}/runs/{info['run_id']}")
    wait_for(lambda: browser.execute_script("return !!document.querySelector('#diagram svg')"))
    fill = browser.execute_script("""
        for (const g of document.querySelectorAll('#diagram g.node')) {
          if (g.querySelector('title').textContent === arguments[0]) {
            const shape = g.querySelector('polygon,ellipse,path');
            return shape && shape.getAttribute('fill'); } }
        return null;""", info["state"])
    assert fill == "#fff3b0", fill
    other = browser.execute_script("""
        for (const g of document.querySelectorAll('#diagram g.node')) {
          if (g.querySelector('title').textContent === 'plan')
            return g.querySelector('polygon,ellipse,path').getAttribute('fill'); }""")
    assert other != "#fff3b0"
    assert "Let me run the tests first" in browser.find_element("css selector", "#stream").text
    diff = browser.execute_script(
        "return [...document.querySelectorAll('pre.diff')].map(p => p.textContent).join('')")
    assert "+        total += item.price * item.quantity" in diff
    assert _rows(browser, "#audit tbody tr") == len(cli.json("audit", info["run_id"])) > 0
    assert _rows(browser, "#timeline .bar") == info["steps"]
    browser.save_screenshot(str(ARTIFACTS / "run.png"))


SLOW_POLICY = """\
default: deny
rules:
  - {decision: allow, tool: run_shell, command: "sleep"}
  - {decision: allow, tool: run_shell, command: "echo"}
"""


GATE = "gate"
"""Step 2's command prints ``tick 2``, then waits until the test creates this file in the
run's workspace before it prints ``tock 2``: the page is read while the command is mid-way
however slow the machine (a 1 s sleep was once not long enough under load)."""


def test_running_run_shows_new_steps_without_reload(cli: EngineCLI, server: Server, browser,  # type: ignore[no-untyped-def]
                                                    tmp_path: Path) -> None:
    task = make_task(tmp_path)
    (task / "task.yaml").write_text((task / "task.yaml").read_text().replace(
        "approval: park", "approval: policy"))
    (task / "policy.yaml").write_text(SLOW_POLICY)
    waits = ["sleep 1", "sleep 1", f"until [ -e {GATE} ]; do sleep 0.1; done", "sleep 1"]
    # the gate's wait is bounded by the test's guards, never by the tool's default timeout
    turns = [{"text": f"Waiting {i}.", "tool_calls": [
        {"name": "run_shell", "args": {"command": f"echo tick {i}; {wait}; echo tock {i}",
                                       "timeout_s": 3600}}]}
        for i, wait in enumerate(waits)]
    (task / "turns.yaml").write_text(json.dumps([*turns, {"text": "Done."}]))
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml",
                             "--golden", str(task), "--db", str(cli.db), "--json"], cwd=ROOT,
                            env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        run_id = wait_for(lambda: _first_run(server))
        browser.get(f"{server.url}/runs/{run_id}")
        browser.execute_script("window.__marker = 42")
        before = _rows(browser, "#steps tbody tr")
        wait_for(lambda: _rows(browser, "#steps tbody tr") >= before + 3)
        assert browser.execute_script("return window.__marker") == 42  # no reload happened
        # tool output streams in while the run is still going
        wait_for(lambda: "tick 2" in _text(browser, "stream"))
        assert "tock 2" not in _text(browser, "stream")  # mid-command: it waits for the gate
        assert proc.poll() is None
        browser.save_screenshot(str(ARTIFACTS / "running.png"))
        (Path(cli.json("show", run_id)["workspace"]) / GATE).write_text("")
        wait_for(lambda: "tock 2" in _text(browser, "stream"), seen=lambda: (
            _text(browser, "stream")[-600:], _steps_told(cli, run_id)))
        assert proc.wait(timeout=HANG_GUARD_S) == 0
        wait_for(lambda: "completed" in _text(browser, "run-status"))
        assert browser.execute_script("return window.__marker") == 42
    finally:
        if proc.poll() is None:
            proc.kill()


def _steps_told(cli: EngineCLI, run_id: str) -> object:
    """The store's last steps of the run, for a failure message."""
    shown = cli.json("show", run_id)
    return {"status": shown["status"], "state": shown["state"],
            "last": shown["steps_detail"][-3:]}


def _first_run(server: Server) -> str | None:
    runs = json.loads(urllib.request.urlopen(server.url + "/api/runs", timeout=5).read())
    return runs[0]["run_id"] if runs and runs[0]["steps"] > 0 else None


def test_approve_with_a_click_completes_the_run(cli: EngineCLI, server: Server, browser,  # type: ignore[no-untyped-def]
                                                tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    browser.get(server.url + "/approvals")
    card = browser.find_element("css selector", ".approval")
    assert "edit_file" in card.text and "item.price * item.quantity" in card.text
    browser.save_screenshot(str(ARTIFACTS / "approvals.png"))
    browser.get(f"{server.url}/runs/{info['run_id']}")
    wait_for(lambda: browser.execute_script("return !!document.querySelector('#diagram svg')"))
    assert _text(browser, "run-status") == "waiting_approval"
    browser.save_screenshot(str(ARTIFACTS / "parked.png"))
    card = browser.find_element("css selector", ".approval")
    card.find_element("css selector", "button.allow").click()
    wait_for(lambda: f"/runs/{info['run_id']}" in browser.current_url)
    wait_for(lambda: _text(browser, "run-status") == "completed")
    browser.save_screenshot(str(ARTIFACTS / "approved.png"))
    audit = cli.json("audit", info["run_id"])
    assert [(a["decision"], a["decided_by"]) for a in audit if a["tool"] == "edit_file"] == [
        ("allow", "web")]
    ws = Path(info["workspace"]) / "inventory.py"
    assert "total += item.price * item.quantity" in ws.read_text()


def _stream_lines(driver) -> list[str]:  # type: ignore[no-untyped-def]
    return _text(driver, "stream").splitlines()


def test_live_output_tokens_timeline_and_resume_on_the_run_page(  # type: ignore[no-untyped-def]
        cli: EngineCLI, server: Server, browser, tmp_path: Path) -> None:
    """One page kept open from a running run, through Ctrl-C, to Resume and completion:
    each step's output in its own block (live as after a reload), the header's token count
    as the store has it, a Resume button only while nothing drives the run, labelled
    timeline bars."""
    task = make_task(tmp_path)
    (task / "task.yaml").write_text((task / "task.yaml").read_text().replace(
        "approval: park", "approval: policy"))
    (task / "policy.yaml").write_text(SLOW_POLICY)
    # step 1 waits for the gate, so the run is surely mid-way when Ctrl-C comes (a 1 s sleep
    # per step once let a loaded machine finish the run before the signal)
    waits = ["sleep 1", f"until [ -e {GATE} ]; do sleep 0.1; done", "sleep 1"]
    turns = [{"text": f"Waiting {i}.", "tool_calls": [
        {"name": "run_shell", "args": {"command": f"echo tick {i}; {wait}; echo tock {i}",
                                       "timeout_s": 3600}}]}
        for i, wait in enumerate(waits)]
    (task / "turns.yaml").write_text(json.dumps([*turns, {"text": "Done."}]))
    proc = subprocess.Popen([sys.executable, "-m", "engine", "run", "machines/coding_agent.yaml",
                             "--golden", str(task), "--db", str(cli.db)], cwd=ROOT,
                            env=engine_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        run_id = wait_for(lambda: _first_run(server))
        browser.get(f"{server.url}/runs/{run_id}")
        browser.execute_script("window.__marker = 42")
        assert not browser.find_element("css selector", "form.resume").is_displayed()
        wait_for(lambda: "tick 1" in _text(browser, "stream"))
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert cli.json("show", run_id)["status"] == "interrupted"
    (Path(cli.json("show", run_id)["workspace"]) / GATE).write_text("")  # resumed, it ends
    wait_for(lambda: _text(browser, "run-status") == "interrupted")
    button = wait_for(lambda: browser.find_element("css selector", "button.resume")
                      if browser.find_element("css selector", "form.resume").is_displayed()
                      else None)
    browser.save_screenshot(str(ARTIFACTS / "interrupted.png"))
    button.click()
    wait_for(lambda: _text(browser, "run-status") == "completed")
    info = cli.json("show", run_id)
    assert info["status"] == "completed"
    tokens = str(info["input_tokens"] + info["output_tokens"])
    wait_for(lambda: _text(browser, "run-tokens") == tokens)
    wait_for(lambda: "Done." in _text(browser, "stream"))
    assert not browser.find_element("css selector", "form.resume").is_displayed()
    live = _stream_lines(browser)
    browser.get(f"{server.url}/runs/{run_id}")
    wait_for(lambda: "Done." in _text(browser, "stream"))
    assert _stream_lines(browser) == live  # the page built live reads as the page loaded
    assert _text(browser, "run-tokens") == tokens
    headers = [line for line in live if line.startswith("── step ")]
    assert len(headers) == len(set(headers)) >= 6  # each model turn and each tool's output
    for i in range(3):
        assert f"Waiting {i}." in live, live
    assert "Done." in live
    labels = browser.execute_script(
        "return [...document.querySelectorAll('#timeline .lane .label')].map(l => l.textContent)")
    steps = info["steps_detail"]
    assert [label.split()[:2] for label in labels] == [[str(s["step"]), s["state"]]
                                                       for s in steps]
    assert _rows(browser, "#timeline .lane .bar") == len(steps)
    browser.save_screenshot(str(ARTIFACTS / "resumed.png"))


def test_resume_from_the_page_is_refused_for_a_run_that_is_not_stopped(
        cli: EngineCLI, server: Server) -> None:
    info = cli.json("run", "machines/coding_agent.yaml")
    page = urllib.request.urlopen(f"{server.url}/runs/{info['run_id']}", timeout=10).read()
    csrf = page.decode().split('name="csrf" value="', 1)[1].split('"', 1)[0]
    body = urllib.parse.urlencode({"csrf": csrf}).encode()
    request = urllib.request.Request(f"{server.url}/runs/{info['run_id']}/resume", data=body,
                                     headers={"Origin": server.url}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 409
    assert b"is completed, not interrupted or crashed" in refused.value.read()
    cross = urllib.request.Request(f"{server.url}/runs/{info['run_id']}/resume", data=body,
                                   headers={"Origin": "http://evil.example"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as forbidden:
        urllib.request.urlopen(cross, timeout=10)
    assert forbidden.value.code == 403


# -- measurements -----------------------------------------------------------------------------


def _synthetic_run(db: Path, steps: int) -> tuple[object, str]:
    """A run of ``steps`` committed steps of the coding agent, written through the store."""
    from engine.actions.registry import ACTIONS
    from engine.store.base import StepBegin, StepCommit
    from engine.store.sqlite import SqliteStore
    from engine.validation import load_machine
    from engine.vocabulary.state import RunInfo, RunState, Usage

    spec = load_machine(ROOT / "machines" / "coding_agent.yaml", ACTIONS)
    store = SqliteStore(db)
    now = time.time()
    run_id = f"synthetic-{steps}"
    store.create_run(RunInfo(run_id, spec.name, str(ROOT / "machines" / "coding_agent.yaml"),
                             spec.source_hash, "running", "plan", str(ROOT), now, now, 0, 0, 0,
                             0.0, {}), RunState(run_id, spec.name, "plan", 0, (), {}),
                     StepBegin(0, "plan", "plan", now))
    cycle = ["call_model", "await_approval", "exec_tool", "checkpoint", "evaluate_stop"]
    trig = {"call_model": ("tool_calls", "await_approval"),
            "await_approval": ("decided", "exec_tool"), "exec_tool": ("done", "checkpoint"),
            "checkpoint": ("saved", "evaluate_stop"), "evaluate_stop": ("continue", "call_model")}

    def commit(seq: int) -> None:
        state = "plan" if seq == 0 else cycle[(seq - 1) % 5]
        t, dest = ("ready", "call_model") if seq == 0 else trig[state]
        at = time.time()
        store.commit_step(run_id, StepCommit(
            seq=seq, state=state, trigger=t, dest=dest, ended_at=at, updates={}, messages=(),
            first_message_seq=0, usage=Usage(), note=f"step {seq}",
            next_step=StepBegin(seq + 1, dest, dest, at)))

    for seq in range(steps):
        commit(seq)
    return commit, run_id


def test_measure_page_load_and_step_latency(cli: EngineCLI, server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    commit, run_id = _synthetic_run(cli.db, 1000)
    loads = []
    for _ in range(3):
        t0 = time.perf_counter()
        browser.get(f"{server.url}/runs/{run_id}")
        loads.append(time.perf_counter() - t0)
    assert _rows(browser, "#steps tbody tr") == 1001  # 1,000 committed + the one in flight
    browser.execute_script("""
        window.__seen = {};
        new MutationObserver(() => {
          const now = Date.now();
          for (const tr of document.querySelectorAll('#steps tbody tr'))
            if (+tr.dataset.seq >= 1000 && !(tr.dataset.seq in window.__seen)
                && tr.querySelector('.st').textContent === 'succeeded')
              window.__seen[tr.dataset.seq] = now;
        }).observe(document.querySelector('#steps tbody'), {childList: true, subtree: true});""")
    time.sleep(0.5)
    committed = {}
    for seq in range(1000, 1020):
        committed[seq] = time.time() * 1000
        commit(seq)  # type: ignore[operator]
        time.sleep(0.15)
    seen = wait_for(lambda: (lambda s: s if len(s) >= 20 else None)(
        browser.execute_script("return window.__seen")), timeout=100)  # a hang guard only
    latencies = [seen[str(k)] - v for k, v in committed.items()]
    result = {"page_load_s_1000_steps": round(statistics.median(loads), 3),
              "page_load_s_all": [round(x, 3) for x in loads],
              "step_to_browser_ms_median": round(statistics.median(latencies), 1),
              "step_to_browser_ms_max": round(max(latencies), 1)}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "measurements.json").write_text(json.dumps(result, indent=2))
    print(result)
    # Every step committed reached the open page, after its commit; how fast is measured
    # (above, and in bench/) but not asserted: a loaded machine must not fail the suite.
    assert sorted(int(k) for k in seen) == list(range(1000, 1020)), result
    assert min(latencies) >= 0, result


# -- security ---------------------------------------------------------------------------------


def test_non_loopback_bind_without_token_refuses_to_start(cli: EngineCLI) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine", "serve", "--host", "0.0.0.0",
                           "--port", str(free_port()), "--db", str(cli.db)], cwd=ROOT,
                          env=engine_env(), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "--token" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_a_busy_port_is_one_line_exit_2(cli: EngineCLI, server: Server) -> None:
    proc = subprocess.run([sys.executable, "-m", "engine", "serve", "--port", str(server.port),
                           "--db", str(cli.db)], cwd=ROOT, env=engine_env(),
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "in use" in proc.stderr


def _request(url: str, *, data: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_token_is_checked_on_every_request(cli: EngineCLI) -> None:
    cli.json("run", "machines/coding_agent.yaml")
    s = Server(cli.db, "--token", "s3cret-token")
    try:
        for path in ("/", "/api/runs", "/events/runs", "/approvals", "/static/console.js"):
            assert _request(s.url + path)[0] == 401, path
            assert _request(s.url + path + "?token=wrong")[0] == 401, path
        assert _request(s.url + "/api/runs",
                        headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        assert _request(s.url + "/?token=s3cret-token")[0] == 200
        assert _request(s.url + "/", headers={"Cookie": "turnstile_token=s3cret-token"})[0] == 200
    finally:
        s.stop()


def test_cross_site_post_and_traversal_are_refused(cli: EngineCLI, server: Server,
                                                   tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    (row,) = json.loads(cli("approvals", "--db", str(cli.db), "--json").stdout)
    url = f"{server.url}/approvals/{info['run_id']}/{row['call_id']}"
    page = _request(server.url + "/approvals")[1]
    csrf = page.split('name="csrf" value="')[1].split('"')[0]
    form = f"decision=allow&args_hash={row['args_hash']}".encode()
    # no CSRF token (a form on another site cannot know it)
    assert _request(url, data=form)[0] == 403
    # the right token but sent from another origin
    evil = {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    assert _request(url, data=form + f"&csrf={csrf}".encode(), headers=evil)[0] == 403
    assert _request(url + "?x=1", data=form + b"&csrf=forged")[0] == 403
    assert json.loads(cli("approvals", "--db", str(cli.db), "--json").stdout) != []
    for bad in ("/runs/..%2F..%2Fetc%2Fpasswd", "/runs/../../etc/passwd",
                "/static/..%2F..%2F..%2Fetc%2Fpasswd", "/static/%2e%2e/%2e%2e/cli.py",
                f"/runs/{info['run_id']}%2F..%2F..", "/approvals/..%2Fx/y"):
        status, body = _request(server.url + bad)
        assert status in (400, 404), (bad, status)
        assert "root:" not in body and "argparse" not in body
    assert _request(server.url + "/runs/a;b")[0] == 400
    # a page elsewhere reaching the console through DNS rebinding names another host
    assert _request(server.url + "/api/runs", headers={"Host": "evil.example"})[0] == 400
    local = {"Host": f"localhost:{server.port}"}
    assert _request(server.url + "/api/runs", headers=local)[0] == 200
    # a decision on a stale view (another arguments hash) is refused, nothing recorded
    stale = f"decision=allow&args_hash=0000000000000000&csrf={csrf}".encode()
    assert _request(url, data=stale)[0] == 409
    assert json.loads(cli("approvals", "--db", str(cli.db), "--json").stdout) != []
    assert os.path.exists(cli.db)


def test_kill_9_of_the_console_while_a_run_waits_changes_nothing(cli: EngineCLI,
                                                                 tmp_path: Path) -> None:
    info = park(cli, make_task(tmp_path))
    s = Server(cli.db)
    status, page = _request(s.url + "/approvals")
    assert status == 200 and info["run_id"] in page
    before = cli("approvals", "--db", str(cli.db), "--json").stdout
    s.proc.kill()  # SIGKILL
    s.proc.wait(timeout=10)
    after = json.loads(cli("approvals", "--db", str(cli.db), "--json").stdout)
    assert [{k: v for k, v in r.items() if k != "age_s"} for r in after] == [
        {k: v for k, v in r.items() if k != "age_s"} for r in json.loads(before)]
    assert cli.json("show", info["run_id"])["status"] == "waiting_approval"
    (row,) = json.loads(before)
    proc = cli("approve", info["run_id"], row["call_id"], "--resume", "--db", str(cli.db))
    assert proc.returncode == 0, proc.stderr
    assert cli.json("show", info["run_id"])["status"] == "completed"


def test_runs_filter_by_status(cli: EngineCLI, server: Server, tmp_path: Path) -> None:
    done = cli.json("run", "machines/coding_agent.yaml")
    parked = park(cli, make_task(tmp_path))
    page = _request(server.url + "/?status=waiting_approval")[1]
    assert parked["run_id"] in page and done["run_id"] not in page
    page = _request(server.url + "/?status=completed")[1]
    assert done["run_id"] in page and parked["run_id"] not in page
    assert _request(server.url + "/?status=bogus")[0] == 400


def test_start_a_golden_task_from_the_page(cli: EngineCLI, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tasks = tmp_path / "tasks"
    shutil.copytree(ROOT / "golden_tasks" / "demo_fix_test", tasks / "demo_fix_test")
    s = Server(cli.db, "--allow-start", "--tasks", str(tasks))
    try:
        browser.get(s.url + "/")
        browser.find_element("id", "start").click()
        wait_for(lambda: "/runs/" in browser.current_url)
        wait_for(lambda: _text(browser, "run-status") == "completed",
                 timeout=60)
        (run,) = cli.json("runs")
        assert run["status"] == "completed"
        from engine.store.sqlite import SqliteStore

        assert SqliteStore(cli.db).get_run(run["run_id"]).config["approval"] == "park"
        page = _request(s.url + "/")[1]
        csrf = page.split('name="csrf" value="')[1].split('"')[0]
        bad = f"task=..%2F..%2Fetc&csrf={csrf}".encode()
        assert _request(s.url + "/start", data=bad)[0] == 400
        assert _request(s.url + "/start", data=b"task=demo_fix_test")[0] == 403
    finally:
        s.stop()


def test_starting_runs_is_off_by_default(cli: EngineCLI, server: Server) -> None:
    page = _request(server.url + "/")[1]
    assert 'action="/start"' not in page
    csrf = page.split('name="csrf" value="')[1].split('"')[0] if 'name="csrf"' in page else ""
    assert _request(server.url + "/start", data=f"task=demo_fix_test&csrf={csrf}".encode())[0] \
        == 404
    assert cli.json("runs") == []
