"""Datasets: the real benchmarks, the real SVAMP rollouts, and the testbed splits, behind one call.

    records = load_dataset("aime2024")        # [{prompt, answer, source, id}, ...] (30 records)

Registry (:data:`DATASETS`):

==========================  =====  ====================================================================
name                        size   what
==========================  =====  ====================================================================
``aime2024``                30     TTRL/DDRL ``verl/data/AIME-TTT/test.json`` (AIME 2024 I+II)
``amc``                     83     TTRL/DDRL ``verl/data/AMC-TTT/test.json`` (AMC 2022-23)
``math500``                 500    TTRL/DDRL ``verl/data/MATH-TTT/test.json`` (MATH-500)
``svamp_codex_rollouts``    999    SVAMP x 30 Program-of-Thought samples of code-davinci-002, each
                                   program evaluated to its number by :mod:`ddrl.pot_eval`
``testbed_train``           n      ``ddrl.testbed.generate_split("train", n, seed)``
``testbed_test``            n      ``ddrl.testbed.generate_split("test", n, seed)``
==========================  =====  ====================================================================

Where a file comes from, first match wins:

1. ``data_dir=`` (an explicit argument): the file must be there, at the same relative path as in
   ``shared/data`` (``AIME-TTT/test.json``, ``rollouts/pot_svamp_codex_sc30_raw.jsonl``, ...);
2. ``$DDRL_DATA_DIR``, same layout (a missing file there falls through to the cache);
3. the download cache, ``$DDRL_CACHE_DIR/data`` (default ``<repo>/.cache/data``);
4. a download from the file's source URL (or ``$DDRL_DATA_MIRROR``/``mirror=`` + relative path) into a
   temporary file that is renamed into the cache only once its sha256 matched.

Every local copy also accepts a gzip'd twin (``<relpath>.gz``): its *decompressed* bytes must have the
listed sha256 (``shared/data`` ships the SVAMP file gzip'd). Every file is hashed on every load: a wrong
hash is a :class:`ChecksumError` naming the file, the expected and the actual sha256, and a malformed
record is a :class:`RecordError` naming the file, the record index and the field.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import tempfile
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ddrl.progress import tqdm

from ddrl.pot_eval import program_answer
from ddrl.seeds import DEFAULT_SEED

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR_ENV = "DDRL_DATA_DIR"
CACHE_DIR_ENV = "DDRL_CACHE_DIR"
MIRROR_ENV = "DDRL_DATA_MIRROR"

RECORD_FIELDS = ("prompt", "answer", "source", "id")

TTRL_COMMIT = "3e2cc9376dc7486256f6021b37c4353d0e1abe2b"  # PRIME-RL/TTRL main, 2025-05-23
POT_COMMIT = "7a435da4bfb52fb2646924b02322b71e897a69e2"  # TIGER-AI-Lab/Program-of-Thoughts, 2022-11-22

#: |answer - gold| below this counts as correct for the SVAMP rollouts (all gold answers are integers).
SVAMP_TOLERANCE = 1e-4


class DataError(ValueError):
    """A data file is missing, unreachable or malformed."""


class ChecksumError(DataError):
    """A data file's bytes do not have the registered sha256."""


class RecordError(DataError):
    """A record lacks a field or has one of the wrong type."""


# ---------------------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFile:
    """One source file: where it lives relative to a data root, where it is downloaded from, its hash."""

    relpath: str  # e.g. "AIME-TTT/test.json" (the layout of shared/data and of the cache)
    url: str
    sha256: str  # of the uncompressed bytes
    git_blob: str | None = None  # the source repository's blob id, for provenance


@dataclass(frozen=True)
class DatasetSpec:
    """A registered dataset: its files, how to turn their (verified) bytes into records, and provenance."""

    name: str
    description: str
    files: tuple[DataFile, ...]
    loader: Callable[..., list[dict]]  # loader(blobs: list[(Path, bytes)], progress=False, **options)
    num_records: int | None = None  # None: depends on the options (testbed splits)
    license: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # default keyword options for the loader


def _ttrl_file(task: str, sha256: str, blob: str) -> DataFile:
    return DataFile(
        relpath=f"{task}/test.json",
        url=f"https://raw.githubusercontent.com/PRIME-RL/TTRL/{TTRL_COMMIT}/verl/data/{task}/test.json",
        sha256=sha256,
        git_blob=blob,
    )


AIME_FILE = _ttrl_file(
    "AIME-TTT", "f52c531f6919731115b491d056be701e760e115d4b1cd5b57f48de2251a85d66",
    "c44c720b7d0d25ab2c0cbd87500c710c5c9f10d6",
)
AMC_FILE = _ttrl_file(
    "AMC-TTT", "c343f64e98b46c19f74e5c9991c3ed390da3acffe29b84d6c2b5b5b01e497eea",
    "5bc79fd3b116b4d1fd73f79ea72a62a731bcc127",
)
MATH_FILE = _ttrl_file(
    "MATH-TTT", "c1680e2e2e034486ad1b7f5aa6dec7ce47ec801769d011cc5d6934ac139fcd46",
    "b5a5c070883b3287c30f452232c99e549eaaee92",
)
SVAMP_RAW_FILE = DataFile(
    relpath="rollouts/pot_svamp_codex_sc30_raw.jsonl",
    url=(
        f"https://raw.githubusercontent.com/TIGER-AI-Lab/Program-of-Thoughts/{POT_COMMIT}"
        "/outputs/svamp_sc_s0_e-1_11_08_14_02.jsonl"
    ),
    sha256="f58c045e929d25deb5c657518dda9960b58e2b113b13454e0cec72e1940160fc",
)


# ---------------------------------------------------------------------------------------------------------
# Finding, verifying and downloading files
# ---------------------------------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_cache_dir() -> Path:
    """``$DDRL_CACHE_DIR/data``, by default ``<repo>/.cache/data`` (the same root as ddrl.reporting's cache)."""
    return Path(os.environ.get(CACHE_DIR_ENV) or REPO_ROOT / ".cache") / "data"


def read_verified(path: Path, file: DataFile) -> bytes:
    """The bytes of a local copy of ``file`` (decompressed if ``path`` ends in ``.gz``), after checking
    their sha256; a mismatch is a :class:`ChecksumError` naming the path, expected and actual hash."""
    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise ChecksumError(f"{path}: not a valid gzip file ({e}); expected a gzip'd copy of {file.relpath}") from e
    actual = sha256_hex(data)
    if actual != file.sha256:
        what = "decompressed bytes of " if path.suffix == ".gz" else ""
        raise ChecksumError(
            f"{path}: sha256 mismatch for {file.relpath}: expected {file.sha256}, "
            f"got {actual} ({what}{len(data):,} bytes); the file is corrupted or a different version"
        )
    return data


def _candidates(root: Path, file: DataFile) -> list[Path]:
    return [root / file.relpath, root / (file.relpath + ".gz")]


def download(
    file: DataFile,
    cache_dir: Path | str | None = None,
    *,
    mirror: str | None = None,
    timeout: float = 60.0,
    progress: bool = False,
) -> Path:
    """Download ``file`` into the cache and return its path there.

    The bytes go to a temporary file in the cache directory while being hashed; only if the sha256
    matches is it renamed (atomically) to ``<cache>/<relpath>``, so a corrupted or partial download never
    lands in the cache. ``mirror`` (a base URL) replaces the source URL by ``mirror/relpath``.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    url = f"{mirror.rstrip('/')}/{file.relpath}" if mirror else file.url
    dest = cache_dir / file.relpath
    dest.parent.mkdir(parents=True, exist_ok=True)
    hasher = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                total = resp.headers.get("Content-Length")
                with tqdm(
                    total=int(total) if total else None, unit="B", unit_scale=True,
                    desc=f"download {file.relpath}", disable=not progress,
                ) as bar:
                    while chunk := resp.read(1 << 16):
                        hasher.update(chunk)
                        out.write(chunk)
                        bar.update(len(chunk))
        except (urllib.error.URLError, OSError) as e:
            raise DataError(
                f"could not download {file.relpath} from {url}: {e}. Offline? Point {DATA_DIR_ENV} (or data_dir=) "
                f"at a directory holding {file.relpath} (or {file.relpath}.gz)"
            ) from e
        actual = hasher.hexdigest()
        if actual != file.sha256:
            raise ChecksumError(
                f"{url}: sha256 mismatch for {file.relpath}: expected {file.sha256}, got {actual}; "
                "the download was refused and not cached"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def locate(
    file: DataFile,
    data_dir: Path | str | None = None,
    *,
    cache_dir: Path | str | None = None,
    mirror: str | None = None,
    allow_download: bool = True,
    progress: bool = False,
) -> tuple[Path, bytes]:
    """Find (or download) ``file`` and return ``(path, verified uncompressed bytes)``.

    Order: ``data_dir`` (must hold the file) > ``$DDRL_DATA_DIR`` > cache > download (see module docs).
    """
    if data_dir is not None:
        for p in _candidates(Path(data_dir), file):
            if p.is_file():
                return p, read_verified(p, file)
        raise DataError(
            f"{file.relpath} not found in data_dir={data_dir}: looked for "
            + " and ".join(str(p) for p in _candidates(Path(data_dir), file))
        )
    looked: list[Path] = []
    env_dir = os.environ.get(DATA_DIR_ENV)
    if env_dir:
        for p in _candidates(Path(env_dir), file):
            looked.append(p)
            if p.is_file():
                return p, read_verified(p, file)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cached = cache_dir / file.relpath
    looked.append(cached)
    if cached.is_file():
        try:
            return cached, read_verified(cached, file)
        except ChecksumError as e:
            raise ChecksumError(f"{e}. Delete the cached copy to download it again") from e
    if not allow_download:
        raise DataError(
            f"{file.relpath} not found (looked in {', '.join(map(str, looked))}) and downloads are disabled; "
            f"set {DATA_DIR_ENV} to a directory holding it"
        )
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    path = download(file, cache_dir, mirror=mirror, progress=progress)
    return path, read_verified(path, file)


# ---------------------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------------------


def validate_records(records: Any, where: str, expected: int | None = None) -> list[dict]:
    """Check that ``records`` is a list of dicts whose four fields ``prompt, answer, source, id`` are
    strings; errors name ``where`` (the file), the record index and the field."""
    if not isinstance(records, list):
        raise RecordError(f"{where}: expected a JSON array of records, got {type(records).__name__}")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise RecordError(f"{where}: record {i}: expected an object, got {type(rec).__name__}")
        for name in RECORD_FIELDS:
            if name not in rec:
                raise RecordError(f"{where}: record {i}: field {name!r} is missing (need {', '.join(RECORD_FIELDS)})")
            if not isinstance(rec[name], str):
                raise RecordError(
                    f"{where}: record {i}: field {name!r} must be a string, got {type(rec[name]).__name__} {rec[name]!r}"
                )
    if expected is not None and len(records) != expected:
        raise RecordError(f"{where}: expected {expected} records, got {len(records)}")
    return records


def parse_ttt_json(data: bytes, where: str, expected: int | None = None) -> list[dict]:
    """The records of a TTRL ``*-TTT/test.json`` (one JSON array of ``{prompt, answer, source, id}``)."""
    try:
        records = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"{where}: not valid JSON ({e})") from e
    records = validate_records(records, where, expected)
    return [{k: rec[k] for k in RECORD_FIELDS} for rec in records]


def _ttt_loader(expected: int) -> Callable[..., list[dict]]:
    def load(blobs: Sequence[tuple[Path, bytes]], progress: bool = False) -> list[dict]:
        ((path, data),) = blobs
        return parse_ttt_json(data, str(path), expected)

    return load


# ---------------------------------------------------------------------------------------------------------
# SVAMP x 30 Program-of-Thought rollouts (code-davinci-002)
# ---------------------------------------------------------------------------------------------------------


def parse_svamp_raw(data: bytes, where: str) -> list[dict]:
    """The 999 problem rows of the upstream PoT file (line 1, the few-shot demonstration, is skipped).

    Each row: ``question``, ``passage`` (str), ``answer`` (number), ``generated`` (list of program str).
    """
    lines = data.decode("utf-8").splitlines()
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{where}: line {lineno}: not valid JSON ({e})") from e
        for name, kind in (("question", str), ("passage", str), ("answer", (int, float)), ("generated", list)):
            if not isinstance(row.get(name), kind) or isinstance(row.get(name), bool):
                raise RecordError(
                    f"{where}: line {lineno}: field {name!r} must be {getattr(kind, '__name__', 'a number')}, "
                    f"got {type(row.get(name)).__name__}"
                )
        if not all(isinstance(p, str) for p in row["generated"]):
            raise RecordError(f"{where}: line {lineno}: field 'generated' must be a list of program strings")
        rows.append(row)
    return rows


def is_correct(answer: float | None, gold: float, tol: float = SVAMP_TOLERANCE) -> bool:
    """A numeric answer is correct when ``|answer - gold| < tol``; no answer (None) is wrong."""
    return answer is not None and abs(answer - gold) < tol


def format_number(x: float) -> str:
    """``51.0`` -> ``"51"``, ``2.5`` -> ``"2.5"`` (the string form of a numeric answer in a record)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def prepare_svamp(rows: Sequence[dict], progress: bool = False) -> list[dict]:
    """Turn each problem's programs into answers (the "prepare step"; no ``exec``).

    Row ``i`` is SVAMP ``chal-(i+1)`` (the upstream run used the slice ``[0:-1]``, so ``chal-1000`` is
    absent). Returns per problem ``{idx, id, prompt, passage, question, gt, answers, correct,
    stored_majority}`` with ``answers[j]`` the value of ``ans`` in program ``j`` rounded to 6 decimals
    (None when the program is outside the whitelist or fails) and ``correct[j]`` from :func:`is_correct`.
    """
    out = []
    for idx, row in enumerate(tqdm(rows, desc="evaluate PoT programs", disable=not progress)):
        gt = float(row["answer"])
        answers = [program_answer(p) for p in row["generated"]]
        out.append(
            {
                "idx": idx,
                "id": f"chal-{idx + 1}",
                "prompt": f"{row['passage'].strip()} {row['question'].strip()}",
                "passage": row["passage"],
                "question": row["question"],
                "gt": gt,
                "answers": answers,
                "correct": [is_correct(a, gt) for a in answers],
                "stored_majority": row.get("executed"),
            }
        )
    return out


_PREPARED: dict[str, list[dict]] = {}  # sha256 of the raw file -> prepared problems (the step takes ~2 s)


def _prepared_svamp(blob: tuple[Path, bytes], progress: bool) -> list[dict]:
    path, data = blob
    key = sha256_hex(data)
    if key not in _PREPARED:
        _PREPARED[key] = prepare_svamp(parse_svamp_raw(data, str(path)), progress=progress)
    # Fresh lists, so a caller editing its copy cannot change the next caller's.
    return [{**p, "answers": list(p["answers"]), "correct": list(p["correct"])} for p in _PREPARED[key]]


def load_svamp_rollouts(
    data_dir: Path | str | None = None,
    *,
    cache_dir: Path | str | None = None,
    mirror: str | None = None,
    allow_download: bool = True,
    progress: bool = False,
) -> list[dict]:
    """The 999 SVAMP problems with 30 real Codex answers each (see :func:`prepare_svamp` for fields)."""
    blob = locate(SVAMP_RAW_FILE, data_dir, cache_dir=cache_dir, mirror=mirror,
                  allow_download=allow_download, progress=progress)
    return _prepared_svamp(blob, progress)


def _svamp_loader(blobs: Sequence[tuple[Path, bytes]], progress: bool = False) -> list[dict]:
    (blob,) = blobs
    records = [
        {"prompt": p["prompt"], "answer": format_number(p["gt"]), "source": "svamp", "id": p["id"],
         "gt": p["gt"], "answers": p["answers"], "correct": p["correct"]}
        for p in _prepared_svamp(blob, progress)
    ]
    return validate_records(records, str(blob[0]), expected=999)


# ---------------------------------------------------------------------------------------------------------
# Correctness vs answer frequency (the SVAMP analysis; works for any {answers, correct} problems)
# ---------------------------------------------------------------------------------------------------------


def first_seen_majority(answers: Sequence[Any]) -> tuple[Any, int, bool]:
    """``(label, count, tied)``: the most frequent non-None answer, ties broken by first appearance
    (``tied`` says whether another answer had the same count). ``(None, 0, False)`` if all are None."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None, 0, False
    top = max(counts.values())
    label = next(a for a in answers if a is not None and counts[a] == top)  # first seen among the top
    tied = sum(1 for c in counts.values() if c == top) > 1
    return label, top, tied


def answer_frequencies(problems: Iterable[dict]) -> list[dict]:
    """One row per (problem, distinct non-None answer): ``{id, answer, count, correct}``.

    ``correct`` is read from the problem's own per-sample ``correct`` list.
    """
    rows = []
    for p in problems:
        counts = Counter(a for a in p["answers"] if a is not None)
        right = {a for a, c in zip(p["answers"], p["correct"]) if a is not None and c}
        rows += [{"id": p["id"], "answer": a, "count": n, "correct": a in right} for a, n in counts.items()]
    return rows


#: The frequency bins of the rollouts README (inclusive ranges over 1..30).
SVAMP_FREQUENCY_BINS: tuple[tuple[int, int], ...] = ((1, 1), (2, 3), (4, 7), (8, 15), (16, 23), (24, 29), (30, 30))


def frequency_table(problems: Sequence[dict], bins: Sequence[tuple[int, int]] = SVAMP_FREQUENCY_BINS):
    """Correctness by answer frequency, as a ``pandas.DataFrame`` with one row per bin ``(lo, hi)``:
    ``n_distinct`` (distinct (problem, answer) pairs whose count is in the bin), ``frac_correct_distinct``,
    ``n_samples`` (samples whose answer has such a count) and ``frac_correct_samples``."""
    import pandas as pd

    freqs = answer_frequencies(problems)
    table = []
    for lo, hi in bins:
        sel = [r for r in freqs if lo <= r["count"] <= hi]
        n_samples = sum(r["count"] for r in sel)
        table.append(
            {
                "frequency": f"{lo}" if lo == hi else f"{lo}-{hi}",
                "n_distinct": len(sel),
                "frac_correct_distinct": sum(r["correct"] for r in sel) / len(sel) if sel else math.nan,
                "n_samples": n_samples,
                "frac_correct_samples": sum(r["count"] for r in sel if r["correct"]) / n_samples if n_samples else math.nan,
            }
        )
    return pd.DataFrame(table)


def rollout_summary(problems: Sequence[dict]) -> dict[str, float]:
    """Headline numbers for problems with per-sample ``answers``/``correct`` and a gold ``gt``:
    mean single-sample accuracy, majority-vote accuracy (first-seen tie break), pass@n, counts."""
    n_samples = sum(len(p["answers"]) for p in problems)
    maj_correct, ties = 0, 0
    for p in problems:
        label, _, tied = first_seen_majority(p["answers"])
        maj_correct += is_correct(label, p["gt"])
        ties += tied
    freqs = answer_frequencies(problems)
    return {
        "problems": len(problems),
        "samples": n_samples,
        "invalid": sum(a is None for p in problems for a in p["answers"]),
        "mean_accuracy": sum(sum(p["correct"]) for p in problems) / n_samples,
        "maj_accuracy": maj_correct / len(problems),
        "pass_at_n": sum(any(p["correct"]) for p in problems) / len(problems),
        "ties_at_top": ties,
        "no_correct": sum(not any(p["correct"]) for p in problems),
        "all_correct": sum(all(p["correct"]) for p in problems),
        "distinct_answers": len(freqs),
        "distinct_correct": sum(r["correct"] for r in freqs),
    }


# ---------------------------------------------------------------------------------------------------------
# The testbed splits (generated, no files)
# ---------------------------------------------------------------------------------------------------------


def _testbed_loader(split: str) -> Callable[..., list[dict]]:
    def load(blobs: Sequence[tuple[Path, bytes]], n: int, seed: int = DEFAULT_SEED, progress: bool = False) -> list[dict]:
        from ddrl.testbed import generate_split  # lazy: the testbed pulls in transformers

        return validate_records(generate_split(split, n, seed), f"ddrl.testbed.generate_split({split!r})", expected=n)

    return load


# ---------------------------------------------------------------------------------------------------------
# Registry and entry point
# ---------------------------------------------------------------------------------------------------------

_TTRL_LICENSE = "repository MIT (PRIME-RL/TTRL); problems: MATH (MIT) / AIME, AMC (c) MAA; see shared/data/README.md"

DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec("aime2024", "AIME 2024 I+II, as shipped by TTRL/DDRL (answers zero-padded: '025')",
                    (AIME_FILE,), _ttt_loader(30), 30, _TTRL_LICENSE),
        DatasetSpec("amc", "AMC 2022-23 (83 problems), as shipped by TTRL/DDRL (answers float-formatted: '142.0')",
                    (AMC_FILE,), _ttt_loader(83), 83, _TTRL_LICENSE),
        DatasetSpec("math500", "MATH-500, as shipped by TTRL/DDRL (answers LaTeX; id = MATH unique_id)",
                    (MATH_FILE,), _ttt_loader(500), 500, _TTRL_LICENSE),
        DatasetSpec("svamp_codex_rollouts",
                    "SVAMP chal-1..999, each with 30 code-davinci-002 PoT samples evaluated to numbers",
                    (SVAMP_RAW_FILE,), _svamp_loader, 999,
                    "MIT (TIGER-AI-Lab/Program-of-Thoughts, (c) 2024 wenhu chen; SVAMP (c) 2021 Arkil Patel)"),
        DatasetSpec("testbed_train", "synthetic arithmetic chains, 1-4 operations (ddrl.testbed)", (),
                    _testbed_loader("train"), None, "generated", {"n": 256}),
        DatasetSpec("testbed_test", "synthetic arithmetic chains, exactly 4 operations (ddrl.testbed)", (),
                    _testbed_loader("test"), None, "generated", {"n": 256}),
    )
}


def get_dataset(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; registered: {', '.join(DATASETS)}")
    return DATASETS[name]


def load_dataset(
    name: str,
    data_dir: Path | str | None = None,
    *,
    cache_dir: Path | str | None = None,
    mirror: str | None = None,
    allow_download: bool = True,
    progress: bool = False,
    **options: Any,
) -> list[dict]:
    """Records ``{prompt, answer, source, id}`` (all strings) of a registered dataset.

    ``options`` go to the dataset's loader: ``n`` and ``seed`` for the testbed splits (default n=256,
    seed=DEFAULT_SEED). SVAMP records also carry ``gt`` (float), ``answers`` (30 floats or None) and
    ``correct`` (30 bools).
    """
    spec = get_dataset(name)
    blobs = [
        locate(f, data_dir, cache_dir=cache_dir, mirror=mirror, allow_download=allow_download, progress=progress)
        for f in spec.files
    ]
    return spec.loader(blobs, progress=progress, **{**spec.options, **options})


def load_questions(name: str, n: int | None = None, seed: int = 0, data_dir: Path | str | None = None,
                   **kwargs: Any) -> list[dict]:
    """The first ``n`` records of dataset ``name`` (all when ``n`` is None), the same call for every dataset:
    the testbed splits are generated with ``n`` and ``seed``; files are read and cut to ``n``."""
    if name.startswith("testbed_"):
        return load_dataset(name, data_dir, n=256 if n is None else n, seed=seed, **kwargs)
    records = load_dataset(name, data_dir, **kwargs)
    return records if n is None else records[:n]
