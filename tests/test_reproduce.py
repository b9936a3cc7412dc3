"""The papermill runner: parameter checking, presets, outputs and manifest (on a throwaway notebook)."""

from __future__ import annotations

import json

import jupytext
import pytest
from conftest import full_disk_open

from ddrl.run import reproduce

NOTEBOOK = '''# %% tags=["parameters"]
preset = "default"
output_dir = "../outputs/interactive"
n = 3  # how many squares

# %%
from ddrl.report.reporter import Reporter
import pandas as pd
rep = Reporter(output_dir, "01_squares")
df = pd.DataFrame({"x": list(range(n)), "y": [i * i for i in range(n)]})
rep.table(df, "squares")
rep.metrics({"n": n, "sum": int(df.y.sum())})
'''


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    nb_dir, params_dir = tmp_path / "notebooks", tmp_path / "params"
    nb_dir.mkdir()
    nb = jupytext.reads(NOTEBOOK, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    jupytext.write(nb, nb_dir / "01_squares.ipynb")
    (params_dir / "smoke").mkdir(parents=True)
    (params_dir / "smoke" / "01_squares.yaml").write_text("n: 2\n")
    monkeypatch.setattr(reproduce, "NOTEBOOK_DIR", nb_dir)
    monkeypatch.setattr(reproduce, "PARAMS_DIR", params_dir)
    return tmp_path


def test_declared_parameters(workspace):
    params = reproduce.declared_parameters(workspace / "notebooks" / "01_squares.ipynb")
    assert set(params) == {"preset", "output_dir", "n"}


def test_unknown_override_is_an_error_listing_valid_ones(workspace, capsys):
    rc = reproduce.main(["--preset", "smoke", "-p", "m", "4", "--output-dir", str(workspace / "out")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "-p m" in err and "'n'" in err


def test_unknown_preset_entry_is_an_error(workspace, capsys):
    (workspace / "params" / "smoke" / "01_squares.yaml").write_text("n: 2\nbogus: 1\n")
    rc = reproduce.main(["--preset", "smoke", "--output-dir", str(workspace / "out")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "bogus" in err and "01_squares.yaml" in err and "valid parameters" in err


def test_runner_param_cannot_be_overridden(workspace, capsys):
    assert reproduce.main(["-p", "output_dir", "/tmp/x"]) == 2
    assert "set by the runner" in capsys.readouterr().err


def test_only_must_match(workspace, capsys):
    assert reproduce.main(["--only", "07"]) == 2


def test_runs_and_writes_manifest(workspace):
    out = workspace / "out"
    rc = reproduce.main(["--preset", "smoke", "-p", "n", "5", "--output-dir", str(out)])
    assert rc == 0
    metrics = json.loads((out / "01_squares" / "metrics" / "01_squares.json").read_text())
    assert metrics == {"n": 5, "sum": 30}  # the -p override beat the preset file's n: 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["notebooks"]["01_squares"]["parameters"]["n"] == 5
    kinds = {a["kind"] for a in manifest["artifacts"]}
    assert {"executed-notebook", "html", "table", "metrics"} <= kinds
    for a in manifest["artifacts"]:
        assert a["bytes"] and len(a["sha256"]) == 64, a
    assert (out / "01_squares.html").stat().st_size > 0



def test_the_kernel_talks_to_the_runner_over_unix_sockets_not_tcp(workspace, capfd):
    """The notebooks' kernel listens on Unix sockets in a private folder (jupyter_client's ipc transport), never on
    TCP ports any local process could connect to and run code through; ipykernel's warning stays out of the log."""
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(workspace / "out")]) == 0
    err = capfd.readouterr().err
    assert "without encryption" not in err and "IPKernelApp" not in err
    assert not list((workspace / "notebooks").glob("kernel*"))  # no socket files beside the notebooks

def test_the_kernel_is_interrupted_while_it_runs_but_not_once_asked_to_shut_down(tmp_path):
    """jupyter_client sends SIGINT before every shutdown; one that reaches the idle kernel between two messages logs
    ipykernel's "KeyboardInterrupt caught in kernel" into the batch log (a flaky failure of the test above, under
    load). The runner's kernel manager still interrupts a running kernel, and shuts it down without the signal."""
    import asyncio
    import signal

    async def session() -> list[list[int]]:
        km = reproduce._ipc_kernel_manager(str(tmp_path))(kernel_name="python3")
        await km.start_kernel()
        sent, signal_kernel = [], km._async_signal_kernel

        async def recorded(signum: int) -> None:
            sent.append(signum)
            await signal_kernel(signum)

        km._async_signal_kernel = recorded
        try:
            await km.interrupt_kernel()
            interrupted = list(sent)
            await km.shutdown_kernel()
        finally:
            if km.has_kernel:
                await km.shutdown_kernel(now=True)
        return [interrupted, sent[len(interrupted):]]

    interrupted, at_shutdown = asyncio.run(session())
    assert interrupted == [signal.SIGINT] and signal.SIGINT not in at_shutdown


def test_rerunning_one_notebook_keeps_the_others_in_the_manifest(workspace):
    nb_dir = workspace / "notebooks"
    twin = (nb_dir / "01_squares.ipynb").read_text().replace("01_squares", "02_squares")
    (nb_dir / "02_squares.ipynb").write_text(twin)
    (workspace / "params" / "smoke" / "02_squares.yaml").write_text("n: 3\n")
    out = workspace / "out"
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(out)]) == 0
    first = json.loads((out / "manifest.json").read_text())
    assert set(first["notebooks"]) == {"01_squares", "02_squares"}
    assert reproduce.main(["--preset", "smoke", "--no-html", "--only", "02", "-p", "n", "4",
                           "--output-dir", str(out)]) == 0
    second = json.loads((out / "manifest.json").read_text())
    assert set(second["notebooks"]) == {"01_squares", "02_squares"}
    assert second["notebooks"]["01_squares"] == first["notebooks"]["01_squares"]
    assert second["notebooks"]["02_squares"]["parameters"]["n"] == 4
    assert {a["notebook"] for a in second["artifacts"]} == {"01_squares", "02_squares"}
    assert any(a["path"] == "02_squares/metrics/02_squares.json" for a in second["artifacts"])
    assert set(json.loads((out / "timings.json").read_text())) == {"01_squares", "02_squares"}




def _twin(workspace, stem: str, extra: str = "", n: int = 3) -> None:
    """A second notebook ``stem``: 01_squares's code (the same table and metrics names) under its own name."""
    nb_dir = workspace / "notebooks"
    nb = jupytext.reads(NOTEBOOK.replace("01_squares", stem) + extra, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    jupytext.write(nb, nb_dir / f"{stem}.ipynb")
    (workspace / "params" / "smoke" / f"{stem}.yaml").write_text(f"n: {n}\n")


def test_notebooks_writing_one_name_keep_both_files_and_the_manifest_matches_them(workspace):
    """Issue 98: two notebooks writing the table "squares" each keep theirs (each writes in its own folder); every
    artifact path of the manifest is claimed once and every sha256 is its file's."""
    from ddrl.infra.storage import sha256_file

    _twin(workspace, "02_squares", n=4)
    out = workspace / "out"
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    paths = [a["path"] for a in manifest["artifacts"]]
    assert len(paths) == len(set(paths)), paths
    for a in manifest["artifacts"]:
        assert sha256_file(out / a["path"]) == a["sha256"], a
    one, two = ((out / stem / "tables" / "squares.csv").read_text() for stem in ("01_squares", "02_squares"))
    assert one.splitlines()[-1] == "1,1" and two.splitlines()[-1] == "3,9"  # n: 2 and n: 4, both kept


def test_a_path_claimed_by_two_notebooks_fails_the_batch_by_name(workspace, capsys):
    """A manifest listing a path under two notebooks (here: an older manifest says 02_squares wrote what 01_squares
    writes now) is refused: the batch fails naming the path and both notebooks, and no manifest claims it twice."""
    out = workspace / "out"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"notebooks": {"02_squares": {"seconds": 1.0}}, "artifacts": [
        {"path": "01_squares/tables/squares.csv", "kind": "table", "notebook": "02_squares"}]}))
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(out)]) == 1
    captured = capsys.readouterr()
    assert "01_squares/tables/squares.csv: 02_squares, 01_squares" in captured.err
    assert "FAILED: its artifacts' paths are another notebook's" in captured.out
    manifest = json.loads((out / "manifest.json").read_text())
    assert not reproduce.claimed_twice(manifest["artifacts"])


def test_a_skipped_section_is_said_in_the_log_the_table_and_the_manifest(workspace, capsys):
    """Issue 98: a notebook that leaves a section out (data absent by design) does not read as a plain "ok"."""
    _twin(workspace, "02_squares", extra='\n# %%\nrep.skipped("the SVAMP part", "offline, no local copy", '
                                         'file="rollouts/svamp.jsonl")\n')
    out = workspace / "out"
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(out)]) == 0
    log = capsys.readouterr().out
    said = "ok, 1 section skipped: rollouts/svamp.jsonl: offline, no local copy"
    assert f"02_squares.ipynb: " in log and said in log.split("| 02_squares")[0]  # the notebook's own line
    row = next(line for line in log.splitlines() if line.startswith("| 02_squares"))
    assert said in row and "1/1" not in row
    assert "2/2 ok (1 with sections skipped)" in log
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["notebooks"]["02_squares"]["status"] == said
    assert manifest["notebooks"]["02_squares"]["skipped"][0]["file"] == "rollouts/svamp.jsonl"
    assert manifest["notebooks"]["01_squares"]["status"] == "ok"


def test_a_missing_preset_file_is_an_error_naming_it(workspace, capsys):
    """Issue 98: a notebook run without its preset file never runs at its built-in scale."""
    _twin(workspace, "02_squares")
    (workspace / "params" / "smoke" / "02_squares.yaml").unlink()
    out = workspace / "out"
    assert reproduce.main(["--preset", "smoke", "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{workspace / 'params' / 'smoke' / '02_squares.yaml'}: no such preset file" in err
    assert "['01_squares.yaml']" in err and not out.exists()
    assert reproduce.main(["--preset", "smoke", "--only", "01", "--no-html", "--output-dir", str(out)]) == 0


def test_a_preset_folder_of_ones_own_is_a_preset(workspace, capsys):
    mine = workspace / "mine"
    mine.mkdir()
    (mine / "01_squares.yaml").write_text("n: 6\n")
    out = workspace / "out"
    assert reproduce.main(["--preset", str(mine), "--no-html", "--output-dir", str(out)]) == 0
    assert json.loads((out / "01_squares" / "metrics" / "01_squares.json").read_text()) == {"n": 6, "sum": 55}
    assert reproduce.preset_label(str(mine)) == "mine"
    assert reproduce.main(["--preset", str(workspace / "nope"), "--output-dir", str(out)]) == 2
    assert "neither a built-in preset ['smoke', 'default', 'paper', 'study'] nor a folder" in capsys.readouterr().err


def test_a_full_disk_while_writing_the_executed_notebook_names_it_and_leaves_nothing(workspace, monkeypatch, capsys):
    """Issue 98: the executed notebook is written whole (a temporary file, then a rename): a full disk is an error
    naming the file, and neither a truncated notebook nor a temporary file is left."""
    import builtins

    real_open = builtins.open
    full = full_disk_open(after_bytes=100)
    monkeypatch.setattr(builtins, "open", lambda f, mode="r", *a, **k: (full if str(f).endswith(".tmp") and
                                                                        "01_squares.ipynb" in str(f) else real_open)(
        f, mode, *a, **k))
    out = workspace / "out"
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"No space left on device (ENOSPC) while writing {out / '01_squares.ipynb'}" in err
    assert not (out / "01_squares.ipynb").exists()
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_a_failed_table_write_names_the_path_and_leaves_nothing(tmp_path, monkeypatch):
    import builtins
    import errno

    import pandas as pd

    from ddrl.report.reporter import Reporter

    rep = Reporter(tmp_path, "01_x")
    monkeypatch.setattr(builtins, "open", full_disk_open(after_bytes=10))
    with pytest.raises(OSError, match=f"ENOSPC.*{tmp_path / 'tables' / 't.csv'}") as e:
        rep.table(pd.DataFrame({"x": range(100)}), "t")
    assert e.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert not [p for p in (tmp_path / "tables").iterdir()]  # no truncated t.csv, no temporary file
    monkeypatch.setattr(builtins, "open", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    with pytest.raises(OSError, match=f"Permission denied while writing {tmp_path / 'tables' / 't.csv'}"):
        rep.table(pd.DataFrame({"x": [1]}), "t")


def test_no_notebooks_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "NOTEBOOK_DIR", tmp_path)
    assert reproduce.main([]) == 0
    assert "no notebooks" in capsys.readouterr().out


def test_peak_memory_counts_the_kernel_like_child_process():
    """The runner's memory figure must include descendants (papermill's kernel is a child process)."""
    import subprocess
    import sys

    from ddrl.run.reproduce import PeakMemory

    code = "x = bytearray(300 * 2**20); x[::4096] = b'1' * len(x[::4096]); import time; time.sleep(1.0)"
    alone = PeakMemory._tree_mib()  # this process, with whatever earlier tests imported
    with PeakMemory(interval=0.05) as mem:
        subprocess.run([sys.executable, "-c", code], check=True)
    assert mem.peak_mib >= alone + 300, (alone, mem.peak_mib)


def test_a_failed_batch_does_not_print_a_manifest_it_never_wrote(workspace, capsys):
    (workspace / "params" / "smoke" / "01_squares.yaml").write_text("n: -1\n")  # range(-1): runs, then fails below
    nb = workspace / "notebooks" / "01_squares.ipynb"
    nb.write_text(nb.read_text().replace("rep.metrics(", "assert n > 0, 'n must be positive'\\nrep.metrics("))
    out = workspace / "out"
    assert reproduce.main(["--preset", "smoke", "--no-html", "--output-dir", str(out)]) == 1
    printed = capsys.readouterr().out
    assert not (out / "manifest.json").exists()
    assert "manifest.json" not in printed and "no manifest written" in printed


def test_declared_parameters_agree_with_papermills_inspector():
    """The runner reads parameters cells itself (papermill's import takes seconds); papermill is the reference."""
    import papermill

    for nb in reproduce.discover():
        ref = {name: info["default"] for name, info in papermill.inspect_notebook(str(nb)).items()}
        assert reproduce.cell_parameters(nb) == ref, nb.name


def test_progress_bars_go_to_the_progress_file(tmp_path, monkeypatch):
    from ddrl.infra import progress

    path = tmp_path / "bars.txt"
    path.write_text("")  # the runner makes the file; a bar never does
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(path))
    for _ in progress.tqdm(range(7), desc="grading", mininterval=0):
        pass
    bar = progress.latest_bar(path)
    assert bar.startswith("grading: 100% 7/7 ["), bar
    assert progress.latest_bar(path, since=path.stat().st_size) is None  # nothing new after that point
    monkeypatch.delenv(progress.PROGRESS_FILE_ENV)
    assert progress.latest_bar(tmp_path / "missing.txt") is None


def test_a_testbed_build_made_on_first_use_shows_its_bar(tmp_path, monkeypatch):
    """The first notebook builds the default testbed (minutes) inside ``model_fingerprint``; its bar reaches the
    runner's status line through the progress file. A build already made shows none."""
    from ddrl.infra import progress
    from ddrl.run.fingerprints import model_fingerprint

    path = tmp_path / "bars.txt"
    path.write_text("")  # the runner makes the file; a bar never does
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(path))
    model_fingerprint("testbed:tiny")
    assert progress.latest_bar(path).startswith("pretraining testbed: 100%"), path.read_text()[-300:]
    size = path.stat().st_size
    model_fingerprint("testbed:tiny")  # cached: no new bar
    assert progress.latest_bar(path, since=size) is None


def test_summary_table_lists_every_planned_notebook():
    table = reproduce.summary_table(
        ["01_a", "02_b", "03_c"], {"01_a": {"seconds": 12.3, "peak_rss_mib": 800}}, {"02_b": "ValueError after 4 s"})
    lines = table.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:5]] == ["notebook", "status", "seconds", "peak MiB"]
    assert "01_a" in lines[2] and " ok " in lines[2] and "12.3" in lines[2] and "800" in lines[2]
    assert "FAILED: ValueError after 4 s" in lines[3] and "not run" in lines[4]
    assert "1/3 ok" in lines[5]


SLOW_NOTEBOOK = '''# %% tags=["parameters"]
preset = "default"
output_dir = "../outputs/interactive"

# %%
import time
from ddrl.infra.progress import tqdm
for _ in tqdm(range(8), desc="busy work", mininterval=0):
    time.sleep(0.25)
'''


def test_live_progress_reports_cell_and_kernel_bar(workspace, capsys):
    """A running notebook prints status lines naming the code cell and the kernel's ddrl bar, then the summary."""
    nb = jupytext.reads(SLOW_NOTEBOOK, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    jupytext.write(nb, workspace / "notebooks" / "02_slow.ipynb")
    (workspace / "params" / "smoke" / "02_slow.yaml").write_text("# no parameters: the declared defaults\n")
    out = workspace / "out"
    rc = reproduce.main(["--preset", "smoke", "--only", "02", "--no-html", "--progress-interval", "0.5",
                         "--output-dir", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    status = [ln for ln in text.splitlines() if ln.startswith("  [02 ")]  # 3 code cells: + injected parameters
    assert any("code cell 3/3" in ln and "busy work:" in ln and "/8 [" in ln for ln in status), text
    assert "| 02_slow " in text and "| total " in text
    import nbformat

    outputs = [o for c in nbformat.read(out / "02_slow.ipynb", as_version=4).cells for o in c.get("outputs", [])]
    assert not any("busy work" in json.dumps(o) for o in outputs)  # the bars did not land in the notebook


def test_a_figure_rendered_twice_writes_the_same_pdf(tmp_path):
    """save_figure's PDF carries no creation date: re-rendering a committed figure leaves its bytes (and git) as
    they were unless what it shows changed."""
    import matplotlib.pyplot as plt

    from ddrl.report.reporter import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    a, b = save_figure(fig, tmp_path / "a", "f")["pdf"], save_figure(fig, tmp_path / "b", "f")["pdf"]
    plt.close(fig)
    assert b"/CreationDate" not in a.read_bytes() and a.read_bytes() == b.read_bytes()


def test_reporter_figure_outside_a_kernel_saves_and_leaves_the_figure_open(tmp_path):
    """In a script (no IPython kernel) Reporter.figure only writes files; the caller's figure stays open."""
    import matplotlib.pyplot as plt

    from ddrl.report.reporter import Reporter, show_saved

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    png = Reporter(tmp_path, "nb").figure(fig, "f")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.with_suffix(".pdf").is_file()
    assert not show_saved(fig, png) and plt.fignum_exists(fig.number)
    plt.close(fig)


def test_reporter_figure_in_an_inline_kernel_shows_the_saved_png_once(tmp_path):
    """In a Jupyter kernel drawing inline, the cell's one figure output is the PNG written to disk, shown at the
    inline backend's size (figure.dpi / savefig dpi of its pixels), and the inline backend draws nothing more."""
    import base64

    import nbformat
    from nbclient import NotebookClient

    from ddrl.infra.pool import environ

    code = (f"import matplotlib.pyplot as plt\nfrom ddrl.report.reporter import Reporter\n"
            f"fig, ax = plt.subplots(dpi=110)\nax.plot([0, 1], [1, 0])\n"
            f"print(Reporter({str(tmp_path)!r}, 'nb').figure(fig, 'f'))\nprint(plt.get_fignums())")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    with environ(MPLBACKEND=reproduce.KERNEL_MPLBACKEND):
        NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = nb.cells[0].outputs
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, outputs  # shown once: not drawn again by the inline backend at the end of the cell
    saved = (tmp_path / "figures" / "f.png").read_bytes()
    assert base64.b64decode(images[0]["data"]["image/png"]) == saved
    width = int.from_bytes(saved[16:20], "big")
    assert images[0]["metadata"]["image/png"]["width"] == round(width * 110 / 150)
    assert "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream").split()[-1] == "[]"


def test_the_runner_loads_papermill_without_the_iri_checker_and_still_validates_notebooks():
    """reproduce.skip_iri_checker: papermill, nbformat and nbconvert load in the runner's process without
    rfc3987_syntax (a Lark grammar built at import, seconds of every render's start), and nbformat's validation still
    accepts a notebook and rejects a broken one."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from ddrl.run import reproduce\n"
            "reproduce.skip_iri_checker()\n"
            "import papermill, nbconvert, nbformat\n"
            "nb = nbformat.read('notebooks/06_claims.ipynb', as_version=4)\n"
            "nbformat.validate(nb)\n"
            "nb.cells[0]['cell_type'] = 'nonsense'\n"
            "try:\n    nbformat.validate(nb)\nexcept nbformat.ValidationError:\n    print('rejected')\n"
            "print(sys.modules.get('rfc3987_syntax', 'absent'))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=reproduce.REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["rejected", "None"]
