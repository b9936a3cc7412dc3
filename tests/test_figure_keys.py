"""Figures drawn once and copied after (ddrl.report.figure_keys, Reporter.draw): the key follows the content, the store is
read without writing, and a figure function that reads a file is never stored."""

from __future__ import annotations

import base64
import functools
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ddrl.study import figures as SF  # noqa: E402
from ddrl.report.figure_keys import figure_key, reads_while  # noqa: E402
from ddrl.report.figure_store import FIGURE_CACHE  # noqa: E402
from ddrl.report.reporter import Reporter  # noqa: E402

LONG = pd.DataFrame({"num_ops": [3, 4, 5, 3, 4, 5], "metric": ["maj@64"] * 3 + ["pass@1"] * 3,
                     "value": [0.9, 0.6, 0.3, 0.8, 0.5, 0.2]})


def test_the_key_follows_the_content_not_the_objects():
    f = SF.regime_candidates_figure
    key = figure_key(f, (LONG,))
    assert figure_key(f, (LONG.copy(),)) == key  # another object, the same content
    changed = LONG.assign(value=LONG.value.where(LONG.index != 2, 0.31))
    others = [figure_key(f, (changed,)),  # one value
              figure_key(f, (LONG[["metric", "num_ops", "value"]],)),  # column order
              figure_key(f, (LONG.astype({"num_ops": float}),)),  # a dtype
              figure_key(SF.power_figure, (LONG,)),  # the function
              figure_key(f, (LONG,), {"extra": 1}),  # a keyword
              figure_key(f, (LONG,), dpi=300),  # the saved resolution
              figure_key(f, ({"a": 1, "b": 2},)), figure_key(f, ({"b": 2, "a": 1},))]  # a dict's order draws panels
    assert len({key, *others}) == len(others) + 1
    with matplotlib.rc_context({"axes.titleweight": "normal" if plt.rcParams["axes.titleweight"] == "bold"
                                else "bold"}):
        assert figure_key(f, (LONG,)) != key  # the style
    with matplotlib.rc_context({"interactive": not plt.rcParams["interactive"]}):
        assert figure_key(f, (LONG,)) == key  # how figures are shown is not what they are


def test_only_ddrl_functions_and_known_types_are_keyed():
    with pytest.raises(TypeError, match="not a function of the ddrl package"):
        figure_key(plt.subplots, ())
    with pytest.raises(TypeError, match="not a function of the ddrl package"):
        figure_key(lambda t: None, (LONG,))
    for arg in ({1, 2}, object()):  # a set's order is not its content's; an object's content is unknown
        with pytest.raises(TypeError, match="cannot key an argument of type"):
            figure_key(SF.power_figure, (arg,))


def test_the_key_is_the_same_in_another_process(tmp_path):
    """No hash randomisation, id or memory address reaches the key: another interpreter (another PYTHONHASHSEED)
    computes the same one."""
    data = tmp_path / "t.csv"
    LONG.to_csv(data, index=False)
    code = ("import sys, numpy as np, pandas as pd; from ddrl.study import figures as SF; "
            "from ddrl.report.plotting import set_style; from ddrl.report.figure_keys import figure_key; set_style(); "
            f"t = pd.read_csv({str(data)!r}); "
            "args = (t, {'x': [1, 2.5, None], 'y': np.float64(3)}); "
            "print(figure_key(SF.regime_candidates_figure, args, {'k': (1, 2)}))")
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": s}).stdout.strip() for s in ("1", "2")}
    assert len(keys) == 1 and len(next(iter(keys))) == 64


def test_reads_while_notes_the_data_files_a_function_opens(tmp_path):
    data = tmp_path / "in.json"
    data.write_text("[1, 2]")
    value, opened = reads_while(lambda: json.loads(data.read_text()))
    assert value == [1, 2] and opened == [str(data)]
    font = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "matplotlibrc")
    assert reads_while(lambda: open(font).close())[1] == []  # the installed packages' own files are not data


def _counting(fn):
    """``fn`` (same module and name: the same key) counting its calls."""
    @functools.wraps(fn)
    def wrapper(*a, **k):
        wrapper.calls += 1
        return fn(*a, **k)
    wrapper.calls = 0
    return wrapper


def test_draw_stores_a_figure_once_and_copies_it_after(tmp_path, monkeypatch):
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    draw = _counting(SF.regime_candidates_figure)
    first = Reporter(tmp_path / "a", "nb").draw("cand", draw, LONG, data=LONG)
    store = tmp_path / "cache" / FIGURE_CACHE
    stored = sorted(p.name for p in store.iterdir())
    assert draw.calls == 1 and len(stored) == 3
    plt.close("all")  # outside a kernel drawing inline the figure stays open, as Reporter.figure leaves it
    before = {p: p.stat().st_mtime_ns for p in store.iterdir()}
    again = Reporter(tmp_path / "b", "nb").draw("cand", draw, LONG.copy(), data=LONG)
    assert draw.calls == 1 and not plt.get_fignums()  # copied, not drawn: no figure built
    assert {p: p.stat().st_mtime_ns for p in store.iterdir()} == before  # read without writing
    for ext in ("png", "pdf"):
        assert again.with_suffix(f".{ext}").read_bytes() == first.with_suffix(f".{ext}").read_bytes()
    csv = [(tmp_path / d / "figures" / "cand.csv").read_text() for d in ("a", "b")]
    assert csv[0] == csv[1]
    logged = [json.loads(x) for x in (tmp_path / "b" / "artifacts" / "nb.jsonl").read_text().splitlines()]
    assert [x["path"] for x in logged] == ["figures/cand.png", "figures/cand.pdf", "figures/cand.csv"]
    Reporter(tmp_path / "c", "nb").draw("cand", draw, LONG.assign(value=LONG.value / 2))
    assert draw.calls == 2 and len(list(store.iterdir())) == 6  # other data: drawn and stored beside
    (store / stored[0]).unlink()  # an entry missing a file is drawn again
    Reporter(tmp_path / "d", "nb").draw("cand", draw, LONG)
    assert draw.calls == 3


def test_draw_never_stores_a_figure_whose_function_reads_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "values.json"
    data.write_text("[1, 3, 2]")

    def from_file():
        fig, ax = plt.subplots()
        ax.plot(json.loads(data.read_text()))
        return fig
    from_file.__module__, from_file.__qualname__ = "ddrl.example", "from_file"  # keyed like a ddrl function
    figure_key(from_file)  # it has a key ...
    png = Reporter(tmp_path / "a", "nb").draw("f", from_file)
    assert png.is_file() and not (tmp_path / "cache" / FIGURE_CACHE).exists()  # ... but what it read is not in it
    data.write_text("[3, 1, 2]")
    again = Reporter(tmp_path / "b", "nb").draw("f", from_file)
    assert again.read_bytes() != png.read_bytes()  # drawn again from the new file


def test_draw_of_nothing_saves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    empty = pd.DataFrame({"regime": [], "seed": []})
    assert Reporter(tmp_path, "nb").draw("sel", SF.selection_errors_figure, empty) is None
    assert not (tmp_path / "figures").exists() or not any((tmp_path / "figures").iterdir())


def test_a_stored_figure_is_shown_inline_as_drawn(tmp_path):
    """In a kernel drawing inline, the second draw (copied) shows the same image at the same size as the first."""
    import nbformat
    from nbclient import NotebookClient

    from ddrl.run import reproduce
    from ddrl.infra.pool import environ

    data = tmp_path / "long.csv"
    LONG.to_csv(data, index=False)
    code = ("import pandas as pd\nfrom ddrl.study import figures as SF\nfrom ddrl.report.plotting import set_style\n"
            "from ddrl.report.reporter import Reporter\nset_style()\n"
            f"t = pd.read_csv({str(data)!r})\n"
            f"Reporter({str(tmp_path / 'a')!r}, 'nb').draw('c', SF.regime_candidates_figure, t)\n"
            f"Reporter({str(tmp_path / 'b')!r}, 'nb').draw('c', SF.regime_candidates_figure, t)")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    with environ(MPLBACKEND=reproduce.KERNEL_MPLBACKEND, DDRL_CACHE_DIR=str(tmp_path / "cache")):
        NotebookClient(nb, kernel_name="python3", timeout=120,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    images = [o for o in nb.cells[0].outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2 and len(list((tmp_path / "cache" / FIGURE_CACHE).iterdir())) == 3
    saved = (tmp_path / "a" / "figures" / "c.png").read_bytes()
    assert [base64.b64decode(i["data"]["image/png"]) for i in images] == [saved, saved]
    assert images[0]["metadata"] == images[1]["metadata"]
    assert images[0]["metadata"]["image/png"]["width"] == round(int.from_bytes(saved[16:20], "big") * 110 / 150)


def test_a_store_deleted_while_copying_is_drawn_instead(tmp_path, monkeypatch):
    """The store can be deleted at any time: a figure whose files vanish between the check and the copy is drawn."""
    import shutil

    from ddrl.report import reporter

    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    draw = _counting(SF.regime_candidates_figure)
    Reporter(tmp_path / "a", "nb").draw("cand", draw, LONG)
    plt.close("all")

    found = reporter.figure_store.find

    def found_then_gone(key):
        hit = found(key)
        shutil.rmtree(tmp_path / "cache")
        return hit
    monkeypatch.setattr(reporter.figure_store, "find", found_then_gone)
    png = Reporter(tmp_path / "b", "nb").draw("cand", draw, LONG)
    assert draw.calls == 2 and png.read_bytes() == (tmp_path / "a" / "figures" / "cand.png").read_bytes()
    plt.close("all")


def test_a_copied_figure_records_the_legibility_found_when_it_was_drawn(tmp_path, monkeypatch):
    """A figure copied from a store is not drawn, so not checked: its entry keeps the findings of when it was drawn
    and the copying render records them (``"stored": true``); an entry stored without them is drawn again."""
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DDRL_FIGURE_STORE", "")
    draw = _counting(SF.regime_candidates_figure)

    def render(run):
        Reporter(tmp_path / run, "nb").draw("cand", draw, LONG)
        plt.close("all")
        return [json.loads(x) for x in (tmp_path / run / "artifacts" / "nb.legibility.jsonl").read_text().splitlines()]
    drawn = render("a")
    assert draw.calls == 1 and [list(d) for d in drawn] == [["name", "overlaps", "legend_on_data"]]
    assert render("b") == [{**drawn[0], "stored": True}] and draw.calls == 1
    [stored] = (tmp_path / "cache" / FIGURE_CACHE).glob("*.json")
    stored.write_text(json.dumps({k: v for k, v in json.loads(stored.read_text()).items() if k != "legibility"}))
    assert render("c") == drawn and draw.calls == 2  # kept before the findings were: drawn and checked again


def test_the_code_a_figure_depends_on_is_what_it_can_run():
    """code_deps: the modules a figure function can reach (its own, the ddrl functions and modules its code names,
    to the end) and what those import (their constants), not the whole package; an edit of one of them retires it."""
    from ddrl.study import claims as C
    from ddrl.report import figure_keys as FK

    assert FK.reachable_modules(SF.regime_candidates_figure) == ["study/figures.py"]
    deps = FK.code_deps(C.scorecard_figure)
    assert {"study/claims.py", "paper.py", "report/stats.py"} <= set(deps) and "train.py" not in deps and len(deps) < 20
    assert FK.deps_current(deps)
    assert not FK.deps_current({**deps, "claims.py": "0" * 64}) and not FK.deps_current({"gone.py": "0" * 64})
    # a module imported inside a function, and a relative import of a subpackage, are followed
    assert "testbed/model.py" in FK._imports("testbed/pretrain.py", FK.module_sha("testbed/pretrain.py"))


def test_a_module_is_keyed_by_its_code_not_its_prose(tmp_path, monkeypatch):
    """module_sha hashes a module's syntax tree without docstrings: an edit of a docstring, a comment or the layout
    keeps every figure that depends on it stored; a changed constant or statement retires them. deps_current takes
    a module whose bytes are still the recorded ones (``files``) as current without parsing it."""
    from ddrl.report import figure_keys as FK

    monkeypatch.setattr(FK, "PACKAGE", tmp_path)
    stamps = iter(range(1, 10))

    def write(text: str) -> None:  # each version its own mtime (the file clock is coarser than these writes)
        (tmp_path / "m.py").write_text(text)
        os.utime(tmp_path / "m.py", ns=(0, next(stamps) * 10**9))

    src = '"""A module."""\n\nPALETTE = ("#000", "#fff")  # two colours\n\n\ndef f(x):\n    """Doc."""\n    return x + 1\n'
    write(src)
    deps, files = {"m.py": FK.module_sha("m.py")}, FK.file_shas({"m.py": ""})
    assert FK.deps_current(deps, files) and FK.deps_current(deps)
    prose = src.replace("A module.", "What it is, at length.").replace("# two colours", "").replace("Doc.", "D.")
    write(prose.replace("\n\n\ndef", "\n\n\n\ndef"))
    assert FK.file_sha("m.py") != files["m.py"] and FK.module_sha("m.py") == deps["m.py"]
    assert FK.deps_current(deps, files)
    for code in (src.replace('"#fff"', '"#eee"'), src.replace("x + 1", "x + 2"), src.replace('    """Doc."""\n', "")
                 + "Y = 1\n"):
        write(code)
        assert FK.module_sha("m.py") != deps["m.py"] and not FK.deps_current(deps, files), code


def test_a_committed_store_serves_a_fresh_cache_while_its_code_and_files_hold(tmp_path, monkeypatch):
    """figure_store: a render's figures committed (``commit``) are copied by a render with an empty cache, without
    drawing and without writing that cache; a committed file whose bytes changed, or an entry whose code changed, is
    drawn instead; ``DDRL_FIGURE_STORE`` empty turns the committed store off."""
    from ddrl.report import figure_store

    store = tmp_path / "docs"
    store.mkdir()
    monkeypatch.setenv("DDRL_FIGURE_STORE", str(store))
    monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / "cache0"))
    draw = _counting(SF.regime_candidates_figure)
    Reporter(tmp_path / "r0", "06_claims").draw("cand", draw, LONG)
    plt.close("all")
    assert figure_store.commit(tmp_path / "r0", store) == ["cand"] and figure_store.commit(tmp_path / "r0", store) == []
    [e] = figure_store.manifest(store)
    assert e["name"] == "cand" and e["png"] == figure_store.sha256_file(store / "cand.png")

    def render(run):
        monkeypatch.setenv("DDRL_CACHE_DIR", str(tmp_path / f"cache{run}"))
        png = Reporter(tmp_path / f"r{run}", "06_claims").draw("cand", draw, LONG.copy())
        plt.close("all")
        return png
    png = render(1)
    assert draw.calls == 1 and not (tmp_path / "cache1").exists()  # copied from the committed store, nothing written
    assert png.read_bytes() == (store / "cand.png").read_bytes()
    assert figure_store.recorded(tmp_path / "r1") == [e]
    (store / "cand.pdf").write_bytes(b"%PDF-1.4 another drawing")
    render(2)
    assert draw.calls == 2  # the committed file is not the entry's: drawn
    figure_store.commit(tmp_path / "r0", store)
    stale = {rel: "0" * 64 for rel in e["files"]}  # bytes since edited (prose only: the same code)
    (store / figure_store.MANIFEST).write_text(json.dumps([{**e, "files": stale}]))
    render(3)
    assert draw.calls == 2  # each module parsed again, the code is the entry's: copied
    (store / figure_store.MANIFEST).write_text(json.dumps([{**e, "deps": {**e["deps"], "plotting.py": "0" * 64},
                                                            "files": stale}]))
    render(3)
    assert draw.calls == 3  # its code changed since: drawn
    figure_store.commit(tmp_path / "r0", store)
    monkeypatch.setenv("DDRL_FIGURE_STORE", "")
    render(4)
    assert draw.calls == 4  # no committed store
    with pytest.raises(FileNotFoundError, match="no figure entries"):
        figure_store.recorded(tmp_path / "nowhere")


def test_a_path_in_the_repository_is_keyed_by_its_place_there(tmp_path, monkeypatch):
    """A clone in another folder keys a figure whose arguments hold a path inside it (a design's results folder) as
    this one does: the path relative to the repository; a path outside it stays absolute."""
    from ddrl.report import figure_keys as FK

    keys = {}
    for clone in ("a", "b"):
        (tmp_path / clone / "ddrl").mkdir(parents=True)
        monkeypatch.setattr(FK, "PACKAGE", tmp_path / clone / "ddrl")
        keys[clone] = FK.figure_key(SF.power_figure, (tmp_path / clone / "results",))
        outside = FK.figure_key(SF.power_figure, (tmp_path / "a" / "results",))
    assert keys["a"] == keys["b"] and outside != keys["b"]


def test_a_damaged_manifest_is_named(tmp_path):
    from ddrl.report import figure_store

    (tmp_path / figure_store.MANIFEST).write_text('[{"name": "x"}]')
    with pytest.raises(ValueError, match=r"figures.json: not a figure store's manifest.*lacks"):
        figure_store.manifest(tmp_path)
    (tmp_path / figure_store.MANIFEST).write_text("{truncated")
    with pytest.raises(ValueError, match="make figures"):
        figure_store.manifest(tmp_path)
