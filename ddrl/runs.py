"""Run directories, spinningup style: everything needed to read, reproduce and resume one run.

::

    runs/ttrl-seed0/
        config.json      the TrainConfig (dataclasses.asdict) plus a fingerprint of the questions
        env.json         python / torch / transformers / peft versions, git sha, device, thread count
        metrics.jsonl    one JSON object per completed step (appended as the run goes)
        ckpt/step_000012/trainable.pt + trainer.pt    the latest checkpoint only
        final/           save_pretrained model + tokenizer, and result.json, once the run has finished

Rerunning the same command on the same directory resumes from the last checkpoint: ``metrics.jsonl`` is
truncated to that step, weights, optimizer and scheduler are restored, and every random draw of later steps
is derived from ``(seed, step)`` (:mod:`ddrl.seeds`), so the resumed run ends where an uninterrupted one
would. A different config in an existing directory is an error naming the fields that differ.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

import torch

CONFIG_FILE = "config.json"
ENV_FILE = "env.json"
METRICS_FILE = "metrics.jsonl"
CKPT_DIR = "ckpt"
FINAL_DIR = "final"


def git_sha(cwd: str | Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the repository holding this package (None outside git)."""
    cwd = cwd or Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def environment(device: str | None = None) -> dict[str, Any]:
    """Versions and machine facts that can change a run's numbers."""
    import numpy
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

    def prepare(self, config: dict, device: str | None = None) -> None:
        """Write ``config.json`` and ``env.json`` in a new directory, or check that an existing directory
        holds the same config (then the run resumes). ``env.json`` is rewritten on every (re)start."""
        config = _jsonable(config)
        self.path.mkdir(parents=True, exist_ok=True)
        cfg_path = self.path / CONFIG_FILE
        if cfg_path.exists():
            old = json.loads(cfg_path.read_text())
            diff = config_diff(old, config)
            if diff:
                details = ", ".join(f"{k}: {old.get(k, '<missing>')!r} -> {config.get(k, '<missing>')!r}" for k in diff)
                raise ValueError(
                    f"run directory {self.path} holds a different config ({details}); "
                    "use a new directory or the original config to resume"
                )
        else:
            self._write_json(cfg_path, config)
        self._write_json(self.path / ENV_FILE, environment(device))

    def config(self) -> dict:
        return json.loads((self.path / CONFIG_FILE).read_text())

    # -- metrics ---------------------------------------------------------------------------------------

    @property
    def metrics_path(self) -> Path:
        return self.path / METRICS_FILE

    def log(self, row: dict) -> None:
        """Append one step's metrics (flushed and fsynced: a killed run loses at most the current step)."""
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps(row, allow_nan=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.exists():
            return []
        rows = []
        for line in self.metrics_path.read_text().splitlines():
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut off by a kill: everything after it is dropped
                    break
        return rows

    def truncate_metrics(self, steps: int) -> list[dict]:
        """Keep the rows of steps ``< steps`` (the steps a checkpoint has seen) and return them."""
        rows = [r for r in self.read_metrics() if r.get("step", -1) < steps]
        tmp = self.metrics_path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows))
        os.replace(tmp, self.metrics_path)
        return rows

    # -- checkpoints -----------------------------------------------------------------------------------

    @property
    def ckpt_dir(self) -> Path:
        return self.path / CKPT_DIR

    @property
    def final_dir(self) -> Path:
        return self.path / FINAL_DIR

    def latest_checkpoint(self) -> Path | None:
        """The newest complete checkpoint (``ckpt/step_XXXXXX``), or None."""
        if not self.ckpt_dir.exists():
            return None
        done = sorted(p for p in self.ckpt_dir.glob("step_*") if (p / "trainer.pt").exists())
        return done[-1] if done else None

    def save_checkpoint(self, steps_done: int, model, optimizer, scheduler, state: dict) -> Path:
        """Atomically save trainable weights (the LoRA adapter when training one), optimizer, scheduler and
        ``state`` after ``steps_done`` steps; older checkpoints are deleted."""
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        final = self.ckpt_dir / f"step_{steps_done:06d}"
        tmp = self.ckpt_dir / f"tmp-step_{steps_done:06d}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        torch.save(trainable_state_dict(model), tmp / "trainable.pt")
        torch.save(
            {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict() if scheduler else None,
             "state": state},
            tmp / "trainer.pt",
        )
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        for old in self.ckpt_dir.glob("*step_*"):
            if old != final:
                shutil.rmtree(old, ignore_errors=True)
        return final

    @staticmethod
    def load_checkpoint(path: Path, model, optimizer=None, scheduler=None) -> dict:
        """Restore what :meth:`save_checkpoint` wrote; returns the saved ``state``."""
        weights = torch.load(path / "trainable.pt", map_location="cpu", weights_only=True)
        load_trainable_state_dict(model, weights)
        trainer = torch.load(path / "trainer.pt", map_location="cpu", weights_only=False)
        if optimizer is not None:
            optimizer.load_state_dict(trainer["optimizer"])
        if scheduler is not None and trainer["scheduler"] is not None:
            scheduler.load_state_dict(trainer["scheduler"])
        return trainer["state"]

    def save_final(self, model, tokenizer, result: dict) -> Path:
        """``final/``: ``save_pretrained`` model (adapter only with LoRA) and tokenizer, then ``result.json``
        last, so its presence means the run finished."""
        tmp = self.path / "tmp-final"
        if tmp.exists():
            shutil.rmtree(tmp)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        torch.save(trainable_state_dict(model), tmp / "trainable.pt")
        self._write_json(tmp / "result.json", result)
        if self.final_dir.exists():
            shutil.rmtree(self.final_dir)
        os.replace(tmp, self.final_dir)
        shutil.rmtree(self.ckpt_dir, ignore_errors=True)
        return self.final_dir

    def save_weights(self, name: str, model) -> Path:
        """``<name>/trainable.pt``: a named snapshot of the trainable weights (e.g. ``rl`` before COR)."""
        d = self.path / name
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / "trainable.pt.tmp"
        torch.save(trainable_state_dict(model), tmp)
        os.replace(tmp, d / "trainable.pt")
        return d

    def load_weights(self, name: str, model) -> None:
        """Load a snapshot written by :meth:`save_weights` into ``model`` (built from the same base)."""
        weights = torch.load(self.path / name / "trainable.pt", map_location="cpu", weights_only=True)
        load_trainable_state_dict(model, weights)

    def finished(self) -> bool:
        return (self.final_dir / "result.json").exists()

    def load_final(self, model) -> dict:
        """Load ``final/``'s trained weights into ``model`` (built from the same base) and return result.json."""
        weights = torch.load(self.final_dir / "trainable.pt", map_location="cpu", weights_only=True)
        load_trainable_state_dict(model, weights)
        return json.loads((self.final_dir / "result.json").read_text())

    @staticmethod
    def _write_json(path: Path, obj: Any) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=True) + "\n")
        os.replace(tmp, path)


def trainable_state_dict(model) -> dict[str, torch.Tensor]:
    """The parameters that training changes (all of them, or only the LoRA adapter's), detached, on CPU."""
    return {n: p.detach().to("cpu").clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable_state_dict(model, weights: dict[str, torch.Tensor]) -> None:
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
    import hashlib

    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps([r.get(f) for f in fields]).encode())
    return h.hexdigest()[:16]
