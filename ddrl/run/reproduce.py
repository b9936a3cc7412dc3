"""Run the companion's notebooks with papermill, as one reproducible batch job.

    python -m ddrl.run.reproduce --preset {smoke,default,paper,study,FOLDER} [--only 03] [-p name value ...]

- Notebooks are ``notebooks/NN_*.ipynb``; parameters come from ``params/<preset>/<notebook>.yaml`` (or
  ``FOLDER/<notebook>.yaml`` for a preset folder of one's own; a notebook that is run without its file is an error
  naming it) and then ``-p`` overrides (values parsed as YAML: ``-p lr 3e-5 -p seeds "[0, 1, 2]"``).
- A parameter a notebook does not declare in its ``parameters`` cell is an error listing the valid ones.
- Always ``kernel_name="python3"`` and the explicit working directory ``notebooks/``.
- Output, under ``outputs/<preset>/``: executed notebooks, an HTML rendering of each, a folder per notebook
  (``<notebook>/figures/``, ``tables/``, ``metrics/``: the notebook's ``output_dir``, so no notebook writes over
  another's file), ``timings.json`` (wall seconds and peak resident memory of each notebook) and ``manifest.json``
  (every artifact with its sha256, the notebook that made it, the sections it skipped and why, its parameters and
  the git sha; a path claimed by two notebooks fails the batch). Every file is written whole (a temporary file,
  then a rename): a failed write names its path and leaves nothing truncated.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import psutil
import yaml
from tabulate import tabulate

from ddrl.run.params import ParameterError, ParameterWarning, check_deferred, check_parameters
from ddrl.run.settings import flatten, nest, settings_of
from ddrl.infra.pool import environ
from ddrl.infra.progress import PROGRESS_FILE_ENV, latest_bar
from ddrl.report.reporter import write_named
from ddrl.infra.storage import REPO, atomic_write_bytes, git_sha, sha256_file

NOTEBOOK_DIR = REPO / "notebooks"
PARAMS_DIR = REPO / "params"
PRESETS = ("smoke", "default", "paper", "study")  # study: notebook 06 only (--only 06)
#: The preset files of a folder: one per notebook, named as the notebook.
PRESET_GLOB = "[0-9][0-9]_*.yaml"
#: Parameters the runner itself sets in every notebook (each notebook declares them).
RUNNER_PARAMS = ("preset", "output_dir")
#: The kernel's matplotlib backend: inline, so every executed notebook and its HTML show their figures. The kernel
#: inherits the runner's environment, and a caller's ``MPLBACKEND`` (the Makefile exports Agg for plain Python
#: processes) would make every ``plt.show()`` in it draw nothing.
KERNEL_MPLBACKEND = "module://matplotlib_inline.backend_inline"
#: The environment each notebook's kernel runs in, and every process it starts inherits (pool workers write to the
#: runner's terminal directly, not into the notebook). Besides the backend: no third-party progress bars, so the batch
#: log holds the runner's own status lines only. ``HF_HUB_DISABLE_PROGRESS_BARS`` turns off huggingface_hub's bars and,
#: read at import by ``transformers.utils.logging``, transformers' "Loading weights" and "Writing model shards" bars;
#: the project's own bars (:func:`ddrl.infra.progress.tqdm`, plain tqdm into the progress file) are unaffected.
KERNEL_ENV = {"MPLBACKEND": KERNEL_MPLBACKEND, "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def discover(only: list[str] | None = None, notebook_dir: Path | None = None) -> list[Path]:
    """The numbered notebooks, in order; ``only`` keeps those whose name starts with one of its entries."""
    found = sorted((notebook_dir or NOTEBOOK_DIR).glob("[0-9][0-9]_*.ipynb"))
    if only:
        unknown = [o for o in only if not any(p.stem.startswith(o) for p in found)]
        if unknown:
            raise ParameterError(f"--only {unknown} matches no notebook; available: {[p.stem for p in found]}")
        found = [p for p in found if any(p.stem.startswith(o) for o in only)]
    return found


def declared_parameters(notebook: Path) -> dict:
    """Every parameter a preset or ``-p`` may set for ``notebook``, name -> default source text: its ``parameters``
    cell's (:func:`cell_parameters`), its ``settings`` mapping spread into the names of
    :data:`ddrl.run.settings.SETTINGS` (the knobs the cell does not show)."""
    cell = cell_parameters(notebook)
    if "settings" not in cell:
        return cell
    return {**{k: v for k, v in cell.items() if k != "settings"},
            **{k: repr(v) for k, v in settings_of(Path(notebook).stem).items()}}


def cell_parameters(notebook: Path) -> dict:
    """Names and default source text of the notebook's ``parameters`` cell, as ``papermill.inspect_notebook``
    reports them (a test checks they agree), read with ``json`` and ``ast``: importing papermill costs 3 s
    (nbformat -> jsonschema compiles a grammar), and a bad ``-p`` value must fail at once."""

    nb = json.loads(Path(notebook).read_text())
    cell = next((c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if cell is None:
        return {}
    src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
    out = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.get_source_segment(src, node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = ast.get_source_segment(src, node.value)
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that gives one key twice (plain YAML keeps the last value silently)."""


def _mapping_without_repeats(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.setdefault(key, key_node.start_mark.line)
        except TypeError:  # an unhashable key: the base constructor says so, with its line
            break
        if first != key_node.start_mark.line:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {first + 1})", key_node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_repeats)


def _yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and, where YAML knows it, the line and column (1-based)."""
    mark = getattr(e, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    return where + (f"{context}: {problem}" if context and "duplicate key" not in problem else problem)


def read_yaml(text: str, where: str) -> object:
    """``text`` parsed as YAML (safe, duplicate keys refused); a :class:`ParameterError` starting with ``where`` (the
    file or the ``-p`` parameter) and giving the line and the problem otherwise."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: constructs plain data only
    except yaml.YAMLError as e:
        raise ParameterError(f"{where}: not valid YAML: {_yaml_problem(e)}") from None


def preset_dir(preset: str, params_dir: Path | None = None) -> Path:
    """The folder of ``--preset``: a built-in name (:data:`PRESETS`, ``params/<name>/``) or a folder of one's own
    holding ``NN_<notebook>.yaml`` files; a :class:`ParameterError` naming both kinds otherwise."""
    if preset in PRESETS or params_dir is not None:
        return (params_dir or PARAMS_DIR) / preset
    path = Path(preset).expanduser()
    if path.is_dir():
        return path.resolve()
    raise ParameterError(f"--preset {preset}: neither a built-in preset {list(PRESETS)} nor a folder "
                         f"(a folder of {PRESET_GLOB} files, one per notebook, is a preset too)")


def preset_label(preset: str) -> str:
    """The preset's short name: a built-in name as it is, a folder by its own name (the default output folder)."""
    return preset if preset in PRESETS else Path(preset).expanduser().resolve().name


def preset_file(preset: str, notebook: Path, params_dir: Path | None = None) -> Path:
    """The preset file of ``notebook``: ``<preset folder>/<notebook>.yaml``."""
    return preset_dir(preset, params_dir) / f"{notebook.stem}.yaml"


def load_preset(preset: str, notebook: Path, params_dir: Path | None = None) -> dict:
    """The parameter values of ``params/<preset>/<notebook>.yaml`` (or ``<folder>/<notebook>.yaml``); a missing
    file, a YAML error or a parameter given twice is a :class:`ParameterError` naming the file (and the line): a
    notebook never runs at its built-in scale because its preset file is not there."""
    path = preset_file(preset, notebook, params_dir)
    if not path.is_file():
        there = sorted(p.name for p in path.parent.glob(PRESET_GLOB)) if path.parent.is_dir() else []
        raise ParameterError(f"{path}: no such preset file, so {notebook.stem} has no parameters for preset {preset!r} "
                             f"(that folder holds {there or 'no preset files'}); write it, or leave the notebook out "
                             "(--only)")
    values = read_yaml(path.read_text(), str(path))
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ParameterError(f"{path}: expected a mapping of parameter names to values, got {type(values).__name__}")
    return values


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """``-p NAME VALUE`` pairs, each value parsed as YAML; a value that is not YAML is a :class:`ParameterError`
    naming the parameter."""
    return {name: read_yaml(value, f"-p {name} {value!r}") for name, value in (pairs or [])}


def check_output_dir(path: Path) -> None:
    """Refuse, by name and before any work, an output directory that cannot be one: an existing file, or a path
    below a file, or below a directory this user cannot write."""
    if path.exists():
        if not path.is_dir():
            raise ParameterError(f"--output-dir {path}: is a file, not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ParameterError(f"--output-dir {path}: not writable")
        return
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ParameterError(f"--output-dir {path}: {parent} is a file, so no directory can be made below it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ParameterError(f"--output-dir {path}: cannot create it, {parent} is not writable")


def resolve_parameters(notebook: Path, preset_values: dict, overrides: dict, source: str, deferred: bool = True) -> dict:
    """Preset values then overrides, checked against the notebook's declared parameters.

    Preset-file entries must all be declared by the notebook (a cell parameter or a setting, by name or inside a
    ``settings`` mapping); a ``-p`` override is applied where the
    notebook declares it (the caller checks that every override is declared by at least one notebook).
    Every value is then coerced to its declared type and checked (:func:`ddrl.run.params.check_parameters`).
    """
    valid = declared_parameters(notebook)
    preset_values = flatten(preset_values, source)
    unknown = sorted(set(preset_values) - set(valid))
    if unknown:
        raise ParameterError(
            f"{source}: unknown parameter(s) {unknown} for {notebook.name}; valid parameters: {sorted(valid)}"
        )
    params = dict(preset_values)
    params.update({k: v for k, v in overrides.items() if k in valid})
    return check_parameters(notebook.stem, valid, params, deferred)  # coerced to the declared types, or a ParameterError


def render_html(executed: Path) -> Path:
    skip_iri_checker()
    from nbconvert import HTMLExporter  # papermill and nbconvert load in seconds: after the parameter check

    body, _ = HTMLExporter().from_filename(str(executed))
    return write_named(executed.with_suffix(".html"), body.encode())


class PeakMemory:
    """Peak resident memory (MiB) of this process plus all its descendants (the notebook's kernel), sampled
    every ``interval`` seconds in a background thread while the ``with`` block runs.

    The sum over the process tree at each sample, maximised over samples: what the job needs from the
    machine. Sampling can miss a spike shorter than ``interval``; the kernel's own high-water mark is read
    from ``/proc/<pid>/status`` (VmHWM) at each sample too, so a spike inside the kernel is still counted.
    """

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _high_water(pid: int) -> int:
        """A process's own peak resident bytes (Linux ``VmHWM``), which sampling cannot miss; 0 if unknown."""
        try:
            with open(f"/proc/{pid}/status") as f:
                return next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:")), 0)
        except (OSError, ValueError):
            return 0

    @classmethod
    def _tree_mib(cls) -> float:

        me = psutil.Process()
        total = me.memory_info().rss  # the runner itself: current size (its import-time peak is not the job's)
        for p in me.children(recursive=True):
            try:
                total += max(p.memory_info().rss, cls._high_water(p.pid))
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mib = max(self.peak_mib, self._tree_mib())
            self._stop.wait(self.interval)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def skip_iri_checker() -> None:
    """Keep jsonschema from loading ``rfc3987_syntax`` in this process. Where it is installed (jupyter-events asks for
    jsonschema's ``format-nongpl`` extra) jsonschema imports it for its optional IRI format check, and it builds a
    Lark grammar at import: 1.5-2.7 s of every render's start here, before the kernel does anything (papermill ->
    nbformat -> jsonschema). No notebook schema checks an IRI (nbformat's validation is unchanged: tested). Blocking
    an import by ``sys.modules[name] = None`` makes it raise ImportError, which jsonschema skips; a process that
    loaded the module already keeps it."""
    sys.modules.setdefault("rfc3987_syntax", None)


def run_notebook(notebook: Path, params: dict, out_dir: Path, progress: bool = True) -> Path:
    """Execute ``notebook`` with papermill into ``out_dir``; ``progress`` is papermill's own per-cell bar
    (off when a :class:`LiveProgress` reports instead). Cell starts are reported to the active
    :class:`LiveProgress`, if any."""
    skip_iri_checker()
    import papermill  # seconds to import (nbformat's schema): after the parameter check

    executed = out_dir / notebook.name
    _write_whole(out_dir)
    with environ(**KERNEL_ENV), tempfile.TemporaryDirectory(prefix="ddrl-kernel-") as sockets:
        papermill.execute_notebook(
            str(notebook), str(executed), parameters=nest(notebook.stem, params), kernel_name="python3", engine_name=_tracking_engine(),
            cwd=str(notebook.parent), progress_bar=progress, request_save_on_cell_execute=True,
            kernel_manager_class=_ipc_kernel_manager(sockets),
        )
    return executed


def _write_whole(out_dir: Path) -> None:
    """Make papermill write every notebook under ``out_dir`` whole: its I/O handler for paths below the folder
    writes through :func:`ddrl.report.reporter.write_named` (a temporary file, then a rename), so a full disk or a kill
    never leaves a truncated executed notebook, and a failed write names the file. Papermill picks a handler by the
    path's prefix (the last registered first); once per folder."""
    from papermill.iorw import LocalHandler, papermill_io

    prefix = str(Path(out_dir).resolve()) + os.sep
    if any(scheme == prefix for scheme, _ in papermill_io._handlers):
        return

    class WholeFileHandler(LocalHandler):
        def write(self, buf, path):
            write_named(path, buf.encode("utf-8"))

    papermill_io.register(prefix, WholeFileHandler())


def _ipc_kernel_manager(sockets: str) -> type:
    """A kernel manager whose kernel talks to the runner over Unix sockets in the private folder ``sockets``
    (jupyter_client's ``ipc`` transport), never over TCP: nothing else on the machine can connect to the kernel and
    run code in it, and ipykernel's warning about an unencrypted TCP kernel stays out of the batch log."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _ipc(self) -> str:
            return "ipc"

        @default("ip")
        def _socket_prefix(self) -> str:
            return os.path.join(sockets, "kernel")

        async def _async_interrupt_kernel(self) -> None:
            # jupyter_client interrupts the kernel before every shutdown; a SIGINT that reaches the idle kernel between
            # two messages puts "[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel" into the batch log (seen
            # under load). The shutdown request goes over the control channel, which a busy kernel still serves, and a
            # kernel that does not stop in time is killed: no interrupt is needed once shutting down.
            if not self.shutting_down:
                await super()._async_interrupt_kernel()

    return IPCKernelManager


# ---------------------------------------------------------------------------------------------------------
# Live progress: what the kernel is doing, one line every few seconds, and the final summary table
# ---------------------------------------------------------------------------------------------------------


def format_seconds(seconds: float) -> str:
    """``75.2`` -> ``"1:15"``, ``3725`` -> ``"1:02:05"``."""
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class LiveProgress:
    """While a notebook runs, print one status line every ``interval`` seconds: elapsed time, the cell being
    executed (index, how long it has run, its first line), the kernel's latest ``ddrl`` progress bar (count,
    rate and tqdm's ETA) and, when the previous run's time is known, the time that should be left.

    The bars reach the runner through a file: ``$DDRL_PROGRESS_FILE`` is set for the kernel (it inherits the
    runner's environment) and :func:`ddrl.infra.progress.tqdm` writes text bars there (see that module).
    """

    def __init__(self, name: str, interval: float = 10.0, expected_s: float | None = None, stream=None):

        self.name, self.interval, self.expected_s = name, interval, expected_s
        self.stream = stream or sys.stdout
        self.path: Path | None = None  # the progress file: exists only inside the ``with`` block
        self.cell: tuple[int, int, str] | None = None  # (index among code cells, their number, first line)
        self.cell_start = self.start = time.monotonic()
        self._bar_offset = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def cell_started(self, index: int, total: int, source: str) -> None:
        lines = [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        # The first line that does something (an imports cell is named by what follows its imports).
        first = next((ln for ln in lines if not ln.startswith(("import ", "from "))), lines[0] if lines else "")
        self.cell, self.cell_start = (index, total, first), time.monotonic()
        self._bar_offset = self.path.stat().st_size if self.path and self.path.exists() else 0  # older bars are done

    def status_line(self) -> str:

        now = time.monotonic()
        parts = [f"  [{self.name} {format_seconds(now - self.start)}]"]
        if self.cell:
            i, n, first = self.cell
            parts.append(f"code cell {i + 1}/{n} ({format_seconds(now - self.cell_start)}): {first[:50]}")
        bar = latest_bar(self.path, since=self._bar_offset) if self.path else None
        if bar:
            parts.append(f"| {bar}")
        if self.expected_s:
            left = self.expected_s - (now - self.start)
            parts.append(f"| ~{format_seconds(left)} left by the last run" if left > 0
                         else f"| {format_seconds(-left)} over the last run's {format_seconds(self.expected_s)}")
        return " ".join(parts)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.status_line(), file=self.stream, flush=True)

    def __enter__(self) -> "LiveProgress":
        sweep_stale_progress_files()
        fd, path = tempfile.mkstemp(prefix=f"ddrl-progress-{self.name}-pid{os.getpid()}-", suffix=".txt")
        os.close(fd)
        self.path = Path(path)
        try:
            self._env = environ(**{PROGRESS_FILE_ENV: path})
            self._env.__enter__()
            _ACTIVE.append(self)
            self._thread.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        """Stop reporting and remove the progress file, whatever ended the block (an error, an interrupt, the
        SIGTERM that :func:`terminate_as_exit` turns into ``SystemExit``): the removal comes first, so a second
        interrupt during the rest cannot skip it."""
        self.path.unlink(missing_ok=True)
        self._stop.set()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        env, self._env = getattr(self, "_env", None), None
        if env is not None:
            env.__exit__(None, None, None)
        if self._thread.is_alive():
            self._thread.join()


_ACTIVE: list[LiveProgress] = []

# A progress file's name: its notebook, the pid of the runner that made it, tempfile's random part (no "-" in it).
_PROGRESS_NAME = re.compile(r"ddrl-progress-.+-pid(\d+)-[^-]+\.txt")


def sweep_stale_progress_files(folder: str | Path | None = None) -> list[Path]:
    """Remove the progress files whose runner is gone: the one exit no ``finally`` sees (``kill -9``, a crash of the
    interpreter) leaves its file, and the next batch removes it. A file whose pid is alive, or whose name carries no
    pid (another program's), is kept. Returns the files removed."""
    removed = []
    for path in Path(folder or tempfile.gettempdir()).glob("ddrl-progress-*.txt"):
        m = _PROGRESS_NAME.fullmatch(path.name)
        if m and not psutil.pid_exists(int(m.group(1))):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


#: At most one write of the executed notebook per this many seconds while it runs. Papermill writes the whole
#: notebook at every cell's start and end (its figures included: ~45 ms at notebook 06's 5.8 MB, 80 code cells); the
#: final write after the last cell, and the one before an error is raised, are papermill's own and always happen.
SAVE_EVERY_S = 10.0


def _tracking_engine() -> str:
    """Register and name a papermill engine that reports each cell start to the active LiveProgress and writes the
    executed notebook at most every :data:`SAVE_EVERY_S` seconds while it runs (and at its end)."""
    from papermill.engines import NBClientEngine, papermill_engines

    class TrackingEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            save, complete = nb_man.save, nb_man.notebook_complete
            last = [time.monotonic()]

            def throttled_save(**kw):
                if time.monotonic() - last[0] >= SAVE_EVERY_S:
                    save(**kw)
                    last[0] = time.monotonic()

            def final_save(**kw):  # the end of the run, whatever ended it: written
                nb_man.save = save
                return complete(**kw)
            nb_man.save, nb_man.notebook_complete = throttled_save, final_save
            cell_start = nb_man.cell_start

            code = [i for i, c in enumerate(nb_man.nb.cells) if c.cell_type == "code"]

            def report(cell, cell_index=None, **kw):
                if cell_index in code:
                    for live in _ACTIVE:
                        live.cell_started(code.index(cell_index), len(code), cell.source)
                return cell_start(cell, cell_index, **kw)

            nb_man.cell_start = report
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register("ddrl", TrackingEngine)
    return "ddrl"


def skipped_sections(out_dir: Path, stem: str) -> list[dict]:
    """The sections notebook ``stem`` recorded as skipped (:meth:`ddrl.report.reporter.Reporter.skipped`)."""
    log = notebook_dir(out_dir, stem) / "artifacts" / f"{stem}.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.is_file() else []
    return [x for x in lines if x.get("kind") == "skipped"]


def run_status(skipped: list[dict]) -> str:
    """``"ok"``, or ``"ok, 2 sections skipped: <file>: <why>; ..."``: a notebook that left a part out never reads
    as a plain ok."""
    if not skipped:
        return "ok"
    said = "; ".join(f"{s['file']}: {s['why']}" if s.get("file") else f"{s['section']}: {s['why']}" for s in skipped)
    return f"ok, {len(skipped)} section{'s' if len(skipped) > 1 else ''} skipped: {said}"


def summary_table(names: list[str], runs: dict[str, dict], failed: dict[str, str]) -> str:
    """Every planned notebook's status, wall time and peak memory, as a GitHub-style table."""

    rows = []
    for name in names:
        if name in runs:
            r = runs[name]
            rows.append([name, run_status(r.get("skipped", []))[:160], f"{r['seconds']:.1f}", r["peak_rss_mib"]])
        elif name in failed:
            rows.append([name, f"FAILED: {failed[name]}"[:70], "", ""])
        else:
            rows.append([name, "not run", "", ""])
    total = sum(r["seconds"] for r in runs.values())
    partial = sum(bool(r.get("skipped")) for r in runs.values())
    rows.append(["total", f"{len(runs)}/{len(names)} ok" + (f" ({partial} with sections skipped)" if partial else ""), f"{total:.1f}", max((r["peak_rss_mib"] for r in runs.values()), default="")])
    return tabulate(rows, headers=["notebook", "status", "seconds", "peak MiB"], tablefmt="github", disable_numparse=True)


def notebook_dir(out_dir: Path, stem: str) -> Path:
    """Where notebook ``stem`` writes its figures, tables and metrics: its own folder of the batch's output folder
    (the notebook's ``output_dir`` parameter), so two notebooks never write one file."""
    return Path(out_dir) / stem


class OwnershipError(RuntimeError):
    """Two notebooks claim one artifact path: the later one wrote over the earlier one's file."""


def claimed_twice(entries: list[dict]) -> dict[str, list[str]]:
    """``{path: [notebooks]}`` for every artifact path more than one notebook claims."""
    owners: dict[str, list[str]] = {}
    for e in entries:
        if e["notebook"] not in owners.setdefault(e["path"], []):
            owners[e["path"]].append(e["notebook"])
    return {p: nbs for p, nbs in owners.items() if len(nbs) > 1}


def build_manifest(out_dir: Path, runs: dict[str, dict], previous: dict | None = None) -> dict:
    """Every artifact under ``out_dir`` with sha256, size and the notebook that made it, and every notebook's
    skipped sections (:func:`skipped_sections`).

    ``previous`` (the manifest already in ``out_dir``) keeps the entries of notebooks this run did not
    execute, so ``--only 04`` into a full output directory updates notebook 04 and leaves the others listed.
    Each notebook entry carries the git sha it was executed at. A path written twice by one notebook is listed
    once; a path two notebooks claim is an :class:`OwnershipError` naming it and them.
    """
    sha = git_sha()
    entries = []
    for stem, info in runs.items():
        files = [(info["executed"], "executed-notebook"), (info["html"], "html")]
        own = notebook_dir(out_dir, stem)
        log = own / "artifacts" / f"{stem}.jsonl"
        if log.is_file():
            lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            files += [(str(own / x["path"]), x["kind"]) for x in lines if "path" in x]
        listed = {}
        for path, kind in files:
            p = Path(path)
            listed[str(p.relative_to(out_dir))] = {
                "path": str(p.relative_to(out_dir)), "kind": kind, "notebook": stem,
                "bytes": p.stat().st_size if p.exists() else None,
                "sha256": sha256_file(p) if p.exists() else None,
            }
        entries += listed.values()
    notebooks = {stem: {"parameters": info["parameters"], "seconds": info["seconds"],
                        "peak_rss_mib": info.get("peak_rss_mib"), "git_sha": sha,
                        "status": run_status(info.get("skipped", [])), "skipped": info.get("skipped", [])}
                 for stem, info in runs.items()}
    if previous:
        kept = {k: v for k, v in previous.get("notebooks", {}).items() if k not in runs}
        notebooks = {**kept, **notebooks}
        entries = [a for a in previous.get("artifacts", []) if a.get("notebook") in kept] + entries
    twice = claimed_twice(entries)
    if twice:
        raise OwnershipError("artifact path(s) claimed by more than one notebook (the last writer wins, the others' "
                             "files are lost): " + "; ".join(f"{p}: {', '.join(nbs)}" for p, nbs in twice.items()))
    return {"git_sha": sha, "notebooks": dict(sorted(notebooks.items())), "artifacts": entries}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ddrl.run.reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="default", metavar="{" + ",".join(PRESETS) + ",FOLDER}",
                    help="a built-in preset (params/<name>/) or a folder holding one NN_<notebook>.yaml per notebook run")
    ap.add_argument("--only", action="append", help="notebook number or name prefix (repeatable), e.g. 03")
    ap.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                    help="override a notebook parameter (value parsed as YAML)")
    ap.add_argument("--output-dir", type=Path, default=None, help="default: outputs/<preset>")
    ap.add_argument("--no-html", action="store_true", help="skip the HTML renderings")
    ap.add_argument("--progress-interval", type=float, default=10.0, metavar="SECONDS",
                    help="seconds between two status lines of a running notebook (default 10)")
    args = ap.parse_args(argv)

    try:
        preset_dir(args.preset)
        out_dir = (args.output_dir or REPO / "outputs" / preset_label(args.preset)).resolve()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ParameterWarning)
            plan = plan_batch(args.preset, args.only, args.parameter, out_dir)
        for message in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, ParameterWarning)):
            print(f"ddrl.run.reproduce: warning: {message}", file=sys.stderr)
        if not plan:
            print(f"ddrl.run.reproduce: no notebooks in {NOTEBOOK_DIR} yet; nothing to run.")
            return 0
    except ParameterError as e:
        print(f"ddrl.run.reproduce: {e}", file=sys.stderr)
        return 2
    with terminate_as_exit():
        return run_batch(args, plan, out_dir)


def plan_batch(preset: str, only: list[str] | None, pairs: list[list[str]] | None, out_dir: Path) -> list[tuple[Path, dict]]:
    """Every selected notebook with its checked parameters, or a :class:`ParameterError` before any work: the
    output directory, then every notebook's cheap checks (well under a second), then the checks that import
    (:func:`ddrl.run.params.check_deferred`)."""
    notebooks = discover(only)
    if not notebooks:
        return []
    check_output_dir(out_dir)
    overrides = flatten(parse_overrides(pairs), "-p settings")
    declared = {nb.stem: declared_parameters(nb) for nb in notebooks}
    for name in overrides:
        if name in RUNNER_PARAMS:
            raise ParameterError(f"-p {name}: set by the runner itself (use --preset / --output-dir)")
        if not any(name in d for d in declared.values()):
            valid = sorted(set().union(*[set(d) for d in declared.values()]) - set(RUNNER_PARAMS))
            raise ParameterError(f"-p {name}: no selected notebook declares it; valid parameters: {valid}")
    cheap = [(nb, resolve_parameters(nb, load_preset(preset, nb), overrides, deferred=False,
                                     source=str(preset_file(preset, nb)))) for nb in notebooks]
    plan = []
    for nb, params in cheap:
        params = check_deferred(nb.stem, declared[nb.stem], params)
        params.update(preset=preset, output_dir=str(notebook_dir(out_dir, nb.stem)))
        plan.append((nb, params))
    return plan


@contextlib.contextmanager
def terminate_as_exit():
    """Inside the block, SIGTERM (``kill``, a scheduler's stop) raises ``SystemExit(143)`` in the main thread instead of
    ending the process on the spot, so every ``with`` block unwinds: the progress file is removed and papermill
    shuts its kernel down. Outside the main thread (no signal handlers there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_batch(args: argparse.Namespace, plan: list[tuple[Path, dict]], out_dir: Path) -> int:
    """Execute the planned notebooks in order (stopping at the first failure), writing timings and the manifest
    after each; prints the summary table and returns the exit status."""
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"ddrl.run.reproduce: preset {args.preset!r}, {len(plan)} notebook(s) -> {out_dir}")
    runs: dict[str, dict] = {}
    timings_path, manifest_path = out_dir / "timings.json", out_dir / "manifest.json"
    previous = json.loads(manifest_path.read_text()) if manifest_path.is_file() else None
    last_seconds = {k: v.get("seconds") for k, v in (previous or {}).get("notebooks", {}).items()}
    failed: dict[str, str] = {}
    status, wrote_manifest = 0, False
    for nb, params in plan:
        expected = last_seconds.get(nb.stem)
        print(f"\n=== {nb.name} ===" + (f" (last run: {format_seconds(expected)})" if expected else ""), flush=True)
        start = time.perf_counter()
        try:
            with PeakMemory() as mem, LiveProgress(nb.stem[:2], args.progress_interval, expected):
                executed = run_notebook(nb, params, out_dir, progress=False)
        except Exception as e:  # papermill raises PapermillExecutionError with the failing cell's traceback
            print(f"ddrl.run.reproduce: {nb.name} failed: {e}", file=sys.stderr)
            failed[nb.stem] = getattr(e, "ename", type(e).__name__) + f" after {time.perf_counter() - start:.0f} s"
            status = 1
            break
        try:
            html = None if args.no_html else render_html(executed)
        except OSError as e:
            print(f"ddrl.run.reproduce: {nb.name}: the HTML rendering failed: {e}", file=sys.stderr)
            failed[nb.stem], status = f"{type(e).__name__} writing its HTML", 1
            break
        seconds = time.perf_counter() - start
        skipped = skipped_sections(out_dir, nb.stem)
        runs[nb.stem] = {"parameters": params, "seconds": round(seconds, 1), "peak_rss_mib": round(mem.peak_mib),
                         "executed": str(executed), "html": str(html) if html else str(executed), "skipped": skipped}
        print(f"{nb.name}: {seconds:.1f} s, peak memory {mem.peak_mib:.0f} MiB"
              + (f"; {run_status(skipped)}" if skipped else ""), flush=True)
        try:
            manifest = build_manifest(out_dir, runs, previous)
        except OwnershipError as e:
            print(f"ddrl.run.reproduce: {e}", file=sys.stderr)
            failed[nb.stem], status = "its artifacts' paths are another notebook's", 1
            del runs[nb.stem]
            break
        timings = {k: {"seconds": v["seconds"], "peak_rss_mib": v["peak_rss_mib"]} for k, v in manifest["notebooks"].items()}
        atomic_write_bytes(timings_path, json.dumps(timings, indent=2).encode())
        atomic_write_bytes(manifest_path, json.dumps(manifest, indent=2).encode())
        wrote_manifest = True
    print("\n" + summary_table([nb.stem for nb, _ in plan], runs, failed), flush=True)
    print("\n" + final_line(runs, len(plan), manifest_path, wrote_manifest))
    return status


def final_line(runs: dict[str, dict], planned: int, manifest_path: Path, wrote_manifest: bool) -> str:
    """The batch's last line: how many notebooks ran, and the manifest only if this batch wrote it."""
    total = sum(v["seconds"] for v in runs.values())
    where = f"manifest: {manifest_path}" if wrote_manifest else "no manifest written (no notebook finished)"
    return f"ddrl.run.reproduce: {len(runs)}/{planned} notebook(s) in {total:.0f} s; {where}"


if __name__ == "__main__":
    sys.exit(main())
