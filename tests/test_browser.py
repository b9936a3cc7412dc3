"""The interactive path in a real browser: JupyterLab on the loopback, driven by Playwright + system Chromium.

``make test-browser`` (marker ``browser``, excluded from ``make test``). For each notebook with widgets
(02, then 01), the test writes a parametrised copy (the smoke preset: tiny testbed, few questions, but
``interactive = True``) into a temporary root, opens it in JupyterLab, runs all cells, checks that no cell
raised and that every figure was decoded by the browser, drags one slider of the ``ipywidgets.interact``
controls and checks that the figure's PNG bytes change. Another test opens a paired ``notebooks/NN_*.py`` the
way a double click does and checks that it opens as a notebook (the default viewer ``make install`` sets,
``ddrl.run.labsettings``) whose cells run. Screenshots land in ``outputs/browser/``.

JupyterLab runs on 127.0.0.1, a free port and a random token, in its own process group with its own
settings/runtime/workspace directories; it is shut down through its REST API and then by signal, kernels
included, whether the test passed or not.
"""

from __future__ import annotations

import base64
import re
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

CHROMIUM = os.environ.get("DDRL_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = REPO / "outputs" / "browser"
#: (notebook, label of the slider to drag, drag distance in px): 02's ``m`` (positives out of K) and
#: 01's ``N`` (samples per question).
WIDGET_NOTEBOOKS = [("02_grpo_amplification", "m", 20), ("01_frequency_and_bayes", "N", -60)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(url: str, token: str, path: str, method: str = "GET", timeout: float = 5.0) -> bytes:
    req = urllib.request.Request(f"{url}{path}", method=method, headers={"Authorization": f"token {token}"},
                                 data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def stop_jupyter(proc: subprocess.Popen, url: str, token: str) -> None:
    """Stop JupyterLab and every kernel it started: REST shutdown, then SIGTERM/SIGKILL to whatever is left
    (the server's process group, and the kernels, which jupyter_client starts in sessions of their own)."""
    import psutil

    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    try:
        _api(url, token, "/api/shutdown", "POST")
        proc.wait(timeout=20)
    except Exception:  # noqa: BLE001 - whatever went wrong, fall through to signals
        pass
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            break
        for p in alive:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=grace)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """``(url, token, root)`` of a JupyterLab serving a fresh temporary root; stopped on teardown."""
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (or set DDRL_CHROMIUM); "
                    "`make test-browser` installs it")
    pytest.importorskip("playwright.sync_api", reason="pip install -e '.[browser]' (make test-browser does)")
    base = tmp_path_factory.mktemp("jupyterlab")
    root, home = base / "root", base / "home"
    settings = home / "settings"
    root.mkdir()
    # Lab settings for a test: every cell in the DOM (no windowing), no news/update toasts over the figures.
    for rel, value in {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                            "checkForUpdates": False},
    }.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(value))
    port, token = free_port(), secrets.token_hex(24)
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(home / "ws"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    # SIGTERM (a CI timeout, `kill`) becomes KeyboardInterrupt, so the teardown below still stops the server.
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    log = open(base / "jupyterlab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}: {(base / 'jupyterlab.log').read_text()[-3000:]}")
            try:
                json.loads(_api(url, token, "/api/status"))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not answer on {url} within 90 s")
                time.sleep(0.5)
        with pytest.raises(urllib.error.HTTPError, match="403"):  # the token is required
            urllib.request.urlopen(f"{url}/api/contents", timeout=5)
        yield url, token, root
    finally:
        stop_jupyter(proc, url, token)
        signal.signal(signal.SIGTERM, previous)
        log.close()
        assert proc.poll() is not None, "JupyterLab is still running after shutdown"


@pytest.fixture(scope="module")
def browser(jupyterlab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    """A fresh page per notebook (the lab workspace is reset on load, so no earlier tab is reopened)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    yield page
    page.close()


def prepare(stem: str, root: Path, out: Path) -> Path:
    """A copy of ``notebooks/<stem>.ipynb`` with the smoke preset's parameters injected (papermill
    ``prepare_only``), but ``interactive = True``, writing its artifacts under ``out``."""
    import papermill

    from ddrl.run.reproduce import NOTEBOOK_DIR, load_preset

    params = {**load_preset("smoke", NOTEBOOK_DIR / f"{stem}.ipynb"), "interactive": True, "progress": False,
              "preset": "smoke", "output_dir": str(out)}
    dest = root / f"{stem}.ipynb"
    papermill.execute_notebook(str(NOTEBOOK_DIR / f"{stem}.ipynb"), str(dest), parameters=params,
                               prepare_only=True, kernel_name="python3", progress_bar=False)
    return dest


CELL_OUTPUTS_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  return nb.widgets.map((c) => {
    const j = c.model.toJSON();
    return {type: j.cell_type, source: Array.isArray(j.source) ? j.source.join('') : j.source,
            count: j.execution_count ?? null, outputs: j.outputs || []};
  });
}"""


def widget_png(page, cell) -> bytes:
    """The PNG the ``interact`` output of ``cell`` shows, as the browser has it (decoded from its data URL)."""
    img = cell.locator(".widget-interact img").first
    img.wait_for(state="visible", timeout=60_000)
    src = img.get_attribute("src")
    assert src and src.startswith("data:image/png;base64,"), f"interact output is not an inline PNG: {src[:60]!r}"
    assert img.evaluate("(el) => el.complete && el.naturalWidth") > 100, "the browser did not decode the figure"
    return base64.b64decode(src.split(",", 1)[1])


KERNEL_STATUS_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"


def wait_until_settled(page, cell, before: bytes, timeout: float = 90.0, quiet: float = 2.0) -> None:
    """Wait until the widget's figure differs from ``before`` and has stopped changing: the kernel idle and
    the same image for ``quiet`` seconds (a drag sends one redraw per slider step; the last one counts)."""
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        src = cell.locator(".widget-interact img").first.get_attribute("src")
        idle = page.evaluate(KERNEL_STATUS_JS) == "idle"
        if src != last or not idle:
            last, since = src, time.monotonic()
        elif time.monotonic() - since >= quiet and base64.b64decode(src.split(",", 1)[1]) != before:
            return
        time.sleep(0.25)
    raise AssertionError(f"the widget's figure did not settle on a new image within {timeout:.0f} s")


@pytest.mark.parametrize("stem, slider, dx", WIDGET_NOTEBOOKS, ids=[w[0][:2] for w in WIDGET_NOTEBOOKS])
def test_notebook_runs_and_widget_redraws(jupyterlab, page, tmp_path, stem, slider, dx):
    url, token, root = jupyterlab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    short = stem[:2]
    nb_path = prepare(stem, root, tmp_path / "outputs")
    t0 = time.perf_counter()
    page.goto(f"{url}/lab/tree/{nb_path.name}?reset&token={token}")
    page.wait_for_function(
        """(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
             const k = w && w.context && w.context.path.endsWith(name) && w.sessionContext.session
                       && w.sessionContext.session.kernel;
             return k && k.status === 'idle'; }""", arg=nb_path.name, timeout=120_000)
    # Everything below is looked up inside this notebook's panel only.
    panel = page.locator("#" + page.evaluate("() => window.jupyterapp.shell.currentWidget.id"))
    assert panel.locator(".jp-Notebook").count() == 1
    ok = page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    cells = page.evaluate(CELL_OUTPUTS_JS)
    errors = [(i, o.get("ename"), o.get("evalue")) for i, c in enumerate(cells) for o in c["outputs"]
              if o.get("output_type") == "error"]
    assert not errors, f"{stem}: cells raised in JupyterLab: {errors}"
    code = [c for c in cells if c["type"] == "code"]
    assert ok is not False and all(c["count"] for c in code), f"{stem}: not every code cell ran"
    page.wait_for_timeout(500)
    seconds = time.perf_counter() - t0
    page.screenshot(path=str(SCREENSHOTS / f"{short}_run_all.png"), full_page=True)

    # Figures: every static PNG output (and the widget's) was decoded by the browser.
    imgs = panel.locator(".jp-OutputArea-output img")
    n = imgs.count()
    assert n >= 2, f"{stem}: only {n} figure(s) rendered"
    widths = imgs.evaluate_all("(els) => els.map((e) => e.complete ? e.naturalWidth : 0)")
    assert all(w > 100 for w in widths), f"{stem}: figures not decoded by the browser (natural widths {widths})"
    imgs.first.scroll_into_view_if_needed()
    imgs.first.screenshot(path=str(SCREENSHOTS / f"{short}_first_figure.png"))

    # The interact controls: drag one slider, the figure must change.
    cell = panel.locator(".jp-Cell", has=page.locator(".widget-interact")).first
    cell.scroll_into_view_if_needed()
    before = widget_png(page, cell)
    cell.screenshot(path=str(SCREENSHOTS / f"{short}_widget_before.png"))
    row = cell.locator(".widget-slider", has=page.locator(".widget-label", has_text=re.compile(f"^{re.escape(slider)}$"))).first
    readout = row.locator(".widget-readout")
    value_before = readout.inner_text()
    handle = row.locator(".noUi-handle")
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + dx, box["y"] + box["height"] / 2, steps=10)
    page.mouse.up()
    value_after = readout.inner_text()
    assert value_after != value_before, f"{stem}: dragging slider {slider!r} did not change it ({value_before})"
    wait_until_settled(page, cell, before)
    after = widget_png(page, cell)
    cell.screenshot(path=str(SCREENSHOTS / f"{short}_widget_after.png"))
    assert before[:8] == after[:8] == b"\x89PNG\r\n\x1a\n"
    h0, h1 = hashlib.sha256(before).hexdigest(), hashlib.sha256(after).hexdigest()
    assert h0 != h1, f"{stem}: the figure did not change when {slider} went {value_before} -> {value_after}"
    (SCREENSHOTS / f"{short}_widget.json").write_text(json.dumps({
        "notebook": stem, "slider": slider, "value_before": value_before, "value_after": value_after,
        "figure_sha256_before": h0, "figure_sha256_after": h1, "run_all_seconds": round(seconds, 1),
        "figures_rendered": n}, indent=2))


#: the paired source opened as a notebook: 06's first code cell (its parameters) needs nothing beyond the kernel
PY_NOTEBOOK = "06_claims"


def test_py_source_opens_as_a_notebook_and_runs_a_cell(jupyterlab, page):
    """A double click on ``notebooks/NN_*.py`` (``/lab/tree/<file>``: its default viewer) opens it as a notebook,
    through jupytext, and its first code cell runs in the kernel; the text editor would have no cells to run."""
    import jupytext

    from ddrl.run import labsettings

    override = labsettings.overrides_path()
    assert override.is_file(), f"{override}: missing; `make install` writes it (python -m ddrl.run.labsettings)"
    url, token, root = jupyterlab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = f"{PY_NOTEBOOK}.py"
    shutil.copy(REPO / "notebooks" / name, root / name)
    code = [c.source for c in jupytext.read(root / name).cells if c.cell_type == "code"]
    page.goto(f"{url}/lab/tree/{name}?reset&token={token}")
    page.wait_for_function(  # a document widget on the file, whichever viewer opened it
        """(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
             return w && w.context && w.context.path.endsWith(name); }""", arg=name, timeout=60_000)
    factory = page.evaluate(f"() => window.jupyterapp.docRegistry.defaultWidgetFactory('{name}').name")
    assert factory == "Jupytext Notebook", f"{name} opens with {factory!r}, not as a notebook"
    page.wait_for_function(
        """() => { const w = window.jupyterapp.shell.currentWidget;
             const k = w.content && w.content.widgets && w.sessionContext && w.sessionContext.session
                       && w.sessionContext.session.kernel;
             return k && k.status === 'idle'; }""", timeout=120_000)
    cells = page.evaluate(CELL_OUTPUTS_JS)
    assert [c["source"] for c in cells if c["type"] == "code"] == code, "the notebook's cells are the .py's"
    first = next(i for i, c in enumerate(cells) if c["type"] == "code")
    page.evaluate(f"""() => {{ const nb = window.jupyterapp.shell.currentWidget.content;
                               nb.activeCellIndex = {first}; }}""")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
    page.wait_for_function(f"""() => {{ const c = window.jupyterapp.shell.currentWidget.content.widgets[{first}];
                                        return c.model.executionCount !== null
                                               && window.jupyterapp.shell.currentWidget.sessionContext.session
                                                    .kernel.status === 'idle'; }}""", timeout=60_000)
    ran = page.evaluate(CELL_OUTPUTS_JS)[first]
    assert ran["count"], f"{name}: its first code cell did not run"
    errors = [o for o in ran["outputs"] if o.get("output_type") == "error"]
    assert not errors, f"{name}: its first code cell raised {errors}"
    page.screenshot(path=str(SCREENSHOTS / f"{PY_NOTEBOOK[:2]}_py_as_notebook.png"))
