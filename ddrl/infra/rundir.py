"""Run directories, spinningup style: everything needed to read, reproduce and resume one run.

::

    runs/ttrl-seed0/
        config.json      the TrainConfig (dataclasses.asdict) plus a fingerprint of the questions
        env.json         python / torch / transformers / peft versions, git sha, device, thread count
        metrics.jsonl    one JSON object per completed step (appended as the run goes)
        ckpt/step_000012/trainable.pt + trainer.pt + digests.json    the latest checkpoint only
        final/           save_pretrained model + tokenizer, trainable.pt, digests.json, and result.json, once the
                         run has finished

Rerunning the same command on the same directory resumes from the last checkpoint: ``metrics.jsonl`` is
truncated to that step, weights, optimizer and scheduler are restored, and every random draw of later steps
is derived from ``(seed, step)`` (:mod:`ddrl.seeds`), so the resumed run ends where an uninterrupted one
would. A different config in an existing directory is an error naming the fields that differ.

Reliability (docs/reliability.md): one process owns a run directory while it trains (:meth:`RunDir.lock`,
an ``fcntl`` lock on ``.lock``); every file is written to a unique temporary name, fsynced and renamed into
place; a damaged checkpoint or metrics line is named in a warning and the run falls back to the last step
it can restore exactly; reading a finished run writes nothing.

Every file a later step reads verifies itself (issue 85): ``config.json``, ``result.json`` and each
``metrics.jsonl`` row carry the sha256 of their own text (``_sha256``, :func:`ddrl.infra.storage.json_with_digest`;
stripped on reading), and each weights folder (a checkpoint, ``final/``, a :meth:`RunDir.save_weights` snapshot)
holds ``digests.json``, the sha256 of each of its files, written before the folder is renamed into place. A file
that does not verify or parse is a :class:`DamagedRunError` naming it and what to do (or, for a checkpoint or a
metrics row, the fallback above), never used; checkpoints load with ``torch.load(weights_only=True)``. Files
written before issue 85 carry no digest and are read as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import platform
import shutil
import sys
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy

from ddrl.infra.storage import (DIGEST_KEY, DamagedFileError, atomic_write_bytes, disk_error, fsync_dir, git_sha,
                               json_with_digest, read_json, sha256_file, unique_tmp, verify_json_digest)
from ddrl.infra.cache import owner_lock

if TYPE_CHECKING:  # torch is imported where a checkpoint is written or read: the metrics are read without it
    import torch

CONFIG_FILE = "config.json"
ENV_FILE = "env.json"
METRICS_FILE = "metrics.jsonl"
CKPT_DIR = "ckpt"
FINAL_DIR = "final"
LOCK_FILE = ".lock"
DIGESTS_FILE = "digests.json"
#: json.dumps options of the JSON files of a run directory (their digests are of this text)
_JSON = {"indent": 2, "sort_keys": True, "allow_nan": True}


class DamagedRunError(ValueError):
    """A run directory's files are damaged in a way no fallback can repair without retraining."""


def environment(device: str | None = None) -> dict[str, Any]:
    """Versions and machine facts that can change a run's numbers."""
    import torch  # as in the checkpoint functions below (see the imports above)
    import transformers

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
        "git_sha": git_sha(),
        "device": device or ("cuda" if torch.cuda.is_available() else "cpu"),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch_threads": torch.get_num_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
    }
    try:
        import peft

        env["peft"] = peft.__version__
    except ImportError:  # pragma: no cover
        env["peft"] = None
    return env


def config_diff(old: dict, new: dict) -> list[str]:
    """Names of the top-level fields whose values differ (or exist in only one of the two)."""
    return sorted(k for k in set(old) | set(new) if old.get(k, "<missing>") != new.get(k, "<missing>"))


def _jsonable(obj: Any) -> Any:
    """JSON round trip, so comparisons see what the file will hold (tuples become lists, etc.)."""
    return json.loads(json.dumps(obj))


class RunDir:
    """One run's directory. ``prepare(config)`` creates or checks it; the trainer then appends metrics and
    saves checkpoints through it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    # -- config and environment ------------------------------------------------------------------------

    def lock(self, wait: bool = True, timeout: float | None = None) -> owner_lock:
        """Exclusive ownership of this directory while a process trains in it (``with rd.lock(): ...``): a
        second process waits (or, with ``wait=False``, raises :class:`ddrl.infra.cache.LockBusy` naming the
        directory and the owner's pid)."""
        self.path.mkdir(parents=True, exist_ok=True)
        return owner_lock(self.path / LOCK_FILE, f"run directory {self.path}", wait=wait, timeout=timeout)

    def prepare(self, config: dict, device: str | None = None) -> None:
        """Write ``config.json`` and ``env.json`` in a new directory, or check that an existing directory
        holds the same config (then the run resumes). ``env.json`` is rewritten on every (re)start of an
        unfinished run; a finished run is only checked (reading it never writes, so a read-only cache works)."""
        config = _jsonable(config)
        if not self.path.is_dir():
            self.path.mkdir(parents=True, exist_ok=True)
        cfg_path = self.path / CONFIG_FILE
        if cfg_path.exists():
            old = self._read_json(cfg_path)
            diff = config_diff(old, config)
            if diff:
                details = ", ".join(f"{k}: {old.get(k, '<missing>')!r} -> {config.get(k, '<missing>')!r}" for k in diff)
                raise ValueError(
                    f"run directory {self.path} holds a different config ({details}); "
                    "use a new directory or the original config to resume"
                )
        else:
            self._write_json(cfg_path, config)
        if not self.finished():
            self._write_json(self.path / ENV_FILE, environment(device))

    def config(self) -> dict:
        return self._read_json(self.path / CONFIG_FILE)

    def _read_json(self, path: Path) -> Any:
        """A JSON file of this run, verified against the digest it carries; a damaged one is a
        :class:`DamagedRunError` naming it and saying what to do."""
        try:
            return read_json(path, **_JSON)
        except DamagedFileError as e:
            raise DamagedRunError(f"{e}; delete the run directory {self.path} and run the same command again to "
                                  "retrain it") from None

    # -- metrics ---------------------------------------------------------------------------------------

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    def log(self, row: dict) -> None:
        """Append one step's metrics (flushed and fsynced: a killed run loses at most the current step)."""
        try:
            with open(self.metrics_path, "a") as f:
                f.write(_metrics_line(row))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise disk_error(e, self.metrics_path) from e

    def scan_metrics(self) -> tuple[list[dict], list[int]]:
        """``(rows, damaged)``: every row that parses as a JSON object, and the 1-based numbers of the lines
        that do not. A cut-off last line (a kill mid-write) counts as damaged too; callers decide. A row whose
        text is not the one its ``_sha256`` was taken of is damaged, and so is a row without one in a file whose
        other rows carry theirs (a file written before issue 85 carries none: its rows are read as they are)."""
        if not self.metrics_path.exists():
            return [], []
        parsed = []
        for i, line in enumerate(self.metrics_path.read_text(errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                parsed.append((i, json.loads(line)))
            except json.JSONDecodeError:
                parsed.append((i, None))
        digested = any(isinstance(row, dict) and DIGEST_KEY in row for _, row in parsed)
        rows, damaged = [], []
        for i, row in parsed:
            try:
                row = verify_json_digest(row, self.metrics_path, required=digested, allow_nan=True)
            except DamagedFileError:
                row = None
            if isinstance(row, dict) and isinstance(row.get("step"), int):
                rows.append(row)
            else:
                damaged.append(i)
        return rows, damaged

    def read_metrics(self) -> list[dict]:
        """Every intact row. A damaged line is skipped with a warning naming the file and the line (rows after
        it are kept); a cut-off last line, what a kill leaves, is dropped quietly."""
        rows, damaged = self.scan_metrics()
        n_lines = len(self.metrics_path.read_text(errors="replace").splitlines()) if damaged else 0
        inner = [i for i in damaged if i != n_lines]
        if inner:
            warnings.warn(f"{self.metrics_path}: damaged line(s) {inner} skipped (later rows kept)", RuntimeWarning,
                          stacklevel=2)
        return rows

    def resumable_steps(self, steps: int) -> int:
        """The last step a resume can continue from without a hole in the metrics: ``steps`` (a checkpoint's)
        if rows ``0 .. steps-1`` are all intact, else 0 (only the latest checkpoint is kept, so an earlier
        state cannot be restored), with a warning naming the file and the lost steps."""
        rows, _ = self.scan_metrics()
        have = {r["step"] for r in rows}
        missing = [s for s in range(steps) if s not in have]
        if missing and steps > 0:
            warnings.warn(f"{self.metrics_path}: the rows of step(s) {missing[:10]}{'...' if len(missing) > 10 else ''} "
                          f"are damaged or missing, so the checkpoint at step {steps} cannot be resumed with a complete "
                          "log; restarting from step 0 (the damaged file is kept beside it)", RuntimeWarning, stacklevel=2)
            return 0
        return steps

    def truncate_metrics(self, steps: int) -> list[dict]:
        """Keep the rows of steps ``< steps`` (the steps a checkpoint has seen), one per step, and return
        them. A file with damaged lines is first copied to ``metrics.jsonl.damaged-<pid>`` (never destroyed)."""
        rows, damaged = self.scan_metrics()
        if damaged:
            shutil.copyfile(self.metrics_path, self.path / f"{METRICS_FILE}.damaged-{os.getpid()}")
        by_step = {r["step"]: r for r in rows if r["step"] < steps}  # a rerun step's later row wins
        rows = [by_step[s] for s in sorted(by_step)]
        atomic_write_bytes(self.metrics_path, "".join(map(_metrics_line, rows)).encode())
        return rows

    def check_finished_metrics(self, steps: int) -> list[dict]:
        """The metrics of a finished run, which must hold exactly one row for each of its ``steps`` steps;
        anything else (a damaged line, duplicated or missing steps) is a :class:`DamagedRunError` naming the
        file, rather than curves silently built from wrong rows."""
        rows, damaged = self.scan_metrics()
        got = [r["step"] for r in rows]
        if damaged or got != list(range(steps)):
            dup = sorted({s for s in got if got.count(s) > 1})
            missing = sorted(set(range(steps)) - set(got))
            raise DamagedRunError(
                f"{self.metrics_path}: a finished run of {steps} steps has {len(rows)} intact rows"
                + (f", damaged line(s) {damaged[:10]}" if damaged else "")
                + (f", duplicated step(s) {dup[:10]}" if dup else "") + (f", missing step(s) {missing[:10]}" if missing else "")
                + f"; delete {self.path} to retrain it")
        return rows

    # -- checkpoints -----------------------------------------------------------------------------------

    @property
    def ckpt_dir(self) -> Path:
        return self.path / CKPT_DIR

    @property
    def final_dir(self) -> Path:
        return self.path / FINAL_DIR

    def checkpoints(self) -> list[Path]:
        """Complete checkpoints (``ckpt/step_XXXXXX``), oldest first."""
        if not self.ckpt_dir.exists():
            return []
        return sorted(p for p in self.ckpt_dir.glob("step_*") if (p / "trainer.pt").exists())

    def latest_checkpoint(self) -> Path | None:
        """The newest complete checkpoint (``ckpt/step_XXXXXX``), or None."""
        done = self.checkpoints()
        return done[-1] if done else None

    def resume(self, model, optimizer=None, scheduler=None) -> dict | None:
        """Load the newest checkpoint that loads; returns its ``state`` or None (start from step 0).

        A damaged checkpoint (an empty or truncated file, as after a power cut) is renamed
        ``ckpt/damaged-step_XXXXXX`` and named in a warning, and the next older one is tried. A checkpoint
        whose earlier metrics rows are damaged (:meth:`resumable_steps`) is set aside as well: resuming it
        would leave a hole in ``metrics.jsonl``, so the run restarts from the last step it can restore."""
        for ckpt in reversed(self.checkpoints()):
            steps = int(ckpt.name.split("_")[-1])
            if self.resumable_steps(steps) < steps:
                os.replace(ckpt, ckpt.with_name(f"superseded-{ckpt.name}"))
                continue
            try:
                return self.load_checkpoint(ckpt, model, optimizer, scheduler)
            except (DamagedRunError, FileNotFoundError) as e:
                bad = ckpt.with_name(f"damaged-{ckpt.name}")
                os.replace(ckpt, bad)
                warnings.warn(f"{e}; moved to {bad}, falling back to the previous checkpoint (or step 0)",
                              RuntimeWarning, stacklevel=2)
        return None

    def save_checkpoint(self, steps_done: int, model, optimizer, scheduler, state: dict) -> Path:
        """Atomically save trainable weights (the LoRA adapter when training one), optimizer, scheduler and
        ``state`` after ``steps_done`` steps; older checkpoints are deleted."""
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        final = self.ckpt_dir / f"step_{steps_done:06d}"
        tmp = unique_tmp(self.ckpt_dir / f"tmp-step_{steps_done:06d}")
        tmp.mkdir()
        try:
            durable_torch_save(trainable_state_dict(model), tmp / "trainable.pt")
            durable_torch_save(
                {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict() if scheduler else None,
                 "state": state},
                tmp / "trainer.pt",
            )
            _seal_into_place(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for old in self.ckpt_dir.iterdir():
            if old != final and ("step_" in old.name) and not old.name.startswith("damaged-"):
                shutil.rmtree(old, ignore_errors=True)
        return final

    @staticmethod
    def load_checkpoint(path: Path, model, optimizer=None, scheduler=None) -> dict:
        """Restore what :meth:`save_checkpoint` wrote; returns the saved ``state``. A file that does not
        load or does not verify against the folder's ``digests.json`` is a :class:`DamagedRunError` naming it
        (before anything is restored)."""
        check_digests(path, ("trainable.pt", "trainer.pt"))
        weights = _torch_load(path / "trainable.pt", weights_only=True)
        trainer = _torch_load(path / "trainer.pt", weights_only=True)
        if not isinstance(trainer, dict) or "state" not in trainer:
            raise DamagedRunError(f"{path / 'trainer.pt'}: not a checkpoint written by RunDir.save_checkpoint")
        load_trainable_state_dict(model, weights)
        if optimizer is not None:
            optimizer.load_state_dict(trainer["optimizer"])
        if scheduler is not None and trainer["scheduler"] is not None:
            scheduler.load_state_dict(trainer["scheduler"])
        return trainer["state"]

    def save_final(self, model, tokenizer, result: dict) -> Path:
        """``final/``: ``save_pretrained`` model (adapter only with LoRA) and tokenizer, then ``result.json``
        last, so its presence means the run finished."""
        tmp = unique_tmp(self.path / "tmp-final")
        try:
            try:
                model.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
            except (OSError, RuntimeError) as e:
                err = disk_error(e, tmp)
                if err is e:
                    raise
                raise err from e
            durable_torch_save(trainable_state_dict(model), tmp / "trainable.pt")
            for f in tmp.iterdir():  # save_pretrained does not fsync
                if f.is_file():
                    with open(f, "rb") as fh:
                        os.fsync(fh.fileno())
            self._write_json(tmp / "result.json", result)
            _seal_into_place(tmp, self.final_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(self.ckpt_dir, ignore_errors=True)
        return self.final_dir

    def save_weights(self, name: str, model) -> Path:
        """``<name>/trainable.pt``: a named snapshot of the trainable weights (e.g. ``rl`` before COR)."""
        d = self.path / name
        tmp = unique_tmp(d)
        tmp.mkdir(parents=True)
        try:
            durable_torch_save(trainable_state_dict(model), tmp / "trainable.pt")
            _seal_into_place(tmp, d)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return d

    def load_weights(self, name: str, model) -> None:
        """Load a snapshot written by :meth:`save_weights` into ``model`` (built from the same base), verified
        against its ``digests.json`` (a damaged file is a :class:`DamagedRunError` naming it)."""
        self._check_digests(self.path / name, ("trainable.pt",))
        load_trainable_state_dict(model, _torch_load(self.path / name / "trainable.pt", weights_only=True))

    def finished(self) -> bool:
        return (self.final_dir / "result.json").exists()

    def load_final(self, model) -> dict:
        """Load ``final/``'s trained weights into ``model`` (built from the same base) and return result.json, both
        verified first (a damaged one is a :class:`DamagedRunError` naming it and what to do)."""
        self._check_digests(self.final_dir, ("result.json", "trainable.pt"))
        result = self._read_json(self.final_dir / "result.json")
        load_trainable_state_dict(model, _torch_load(self.final_dir / "trainable.pt", weights_only=True))
        return result

    def _check_digests(self, folder: Path, names: Iterable[str]) -> None:
        try:
            check_digests(folder, names)
        except DamagedRunError as e:
            raise DamagedRunError(f"{e}; delete the run directory {self.path} and run the same command again to "
                                  "retrain it") from None

    @staticmethod
    def _write_json(path: Path, obj: Any) -> None:
        atomic_write_bytes(path, (json_with_digest(obj, **_JSON) + "\n").encode())


def _metrics_line(row: dict) -> str:
    """One ``metrics.jsonl`` line: the row with the sha256 of its own text (:func:`json_with_digest`)."""
    return json_with_digest(row, allow_nan=True) + "\n"


def _seal_into_place(tmp: Path, dest: Path) -> None:
    """The one way a finished folder (a checkpoint, ``final/``, a weights snapshot) replaces ``dest``: its
    ``digests.json`` written (:func:`write_digests`), the folder fsynced, then renamed over ``dest`` and the parent
    fsynced, so a reader sees the old folder or the whole new one, never a half."""
    write_digests(tmp)
    fsync_dir(tmp)
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(tmp, dest)
    fsync_dir(dest.parent)


def write_digests(folder: Path) -> None:
    """``folder/digests.json``: the sha256 of each file in ``folder`` (itself carrying its own digest)."""
    files = {f.name: sha256_file(f) for f in sorted(folder.iterdir()) if f.is_file() and f.name != DIGESTS_FILE}
    atomic_write_bytes(folder / DIGESTS_FILE, (json_with_digest({"files": files}, **_JSON) + "\n").encode())


def check_digests(folder: Path, names: Iterable[str]) -> None:
    """Check ``names`` in ``folder`` against its ``digests.json`` (:func:`write_digests`); a mismatch, a file the
    manifest does not list or a damaged manifest is a :class:`DamagedRunError` naming the file. A folder without
    a manifest was written before issue 85 and is not checked (its files still load as data only)."""
    manifest = folder / DIGESTS_FILE
    if not manifest.is_file():
        return
    try:
        files = read_json(manifest, required=True, **_JSON).get("files", {})
    except (DamagedFileError, AttributeError) as e:
        raise DamagedRunError(str(e)) from None
    for name in names:
        got = sha256_file(folder / name)
        if files.get(name) != got:
            raise DamagedRunError(f"{folder / name} is damaged ({(folder / name).stat().st_size} bytes): its sha256 is "
                                  f"{got}, the one written in {manifest} {files.get(name)}")


def durable_torch_save(obj: Any, path: Path) -> None:
    """``torch.save`` then fsync, so the file is on disk before the caller renames it into place; a full
    disk is an ``OSError(ENOSPC)`` naming ``path`` (torch itself says only ``iostream error``)."""
    import torch

    try:
        with open(path, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
    except (OSError, RuntimeError) as e:
        err = disk_error(e, path)
        if err is e:
            raise
        raise err from e


def _torch_load(path: Path, weights_only: bool) -> Any:
    """``torch.load`` on CPU; an empty, truncated or otherwise unreadable file is a :class:`DamagedRunError`
    naming it (torch says only ``EOFError`` or ``PytorchStreamReader failed``)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=weights_only)
    except FileNotFoundError:
        raise
    except (EOFError, RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, OSError) as e:
        size = path.stat().st_size if path.exists() else None
        raise DamagedRunError(f"{path} is damaged ({size} bytes; {type(e).__name__}: {str(e)[:120]})") from e


def trainable_state_dict(model) -> dict[str, torch.Tensor]:
    """The parameters that training changes (all of them, or only the LoRA adapter's), detached, on CPU."""
    return {n: p.detach().to("cpu").clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable_state_dict(model, weights: dict[str, torch.Tensor]) -> None:
    import torch

    params = dict(model.named_parameters())
    missing = [n for n in weights if n not in params]
    if missing:
        raise ValueError(f"checkpoint has parameters the model lacks: {missing[:5]} (different model or LoRA setting?)")
    with torch.no_grad():
        for n, w in weights.items():
            params[n].copy_(w.to(params[n].device, params[n].dtype))


def fingerprint(records: Iterable[dict], fields: tuple[str, ...] = ("id", "prompt")) -> str:
    """A short hash of the questions a run adapts on (stored in config.json, so resuming on other
    questions is caught). Ground truth is deliberately not part of it."""

    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps([r.get(f) for f in fields]).encode())
    return h.hexdigest()[:16]
