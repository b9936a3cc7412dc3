"""Tests of ddrl.grading.pot_eval and ddrl.data: the PoT evaluator, record validation, local lookup with sha256
checks, downloads from a loopback HTTP server, and the SVAMP numbers of shared/data/rollouts/README.md."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from ddrl import data as D
from ddrl.grading.pot_eval import MAX_EXPONENT, MAX_INT_BITS, program_answer


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reads the user's DDRL_DATA_DIR/mirror or writes the repo's cache."""
    monkeypatch.delenv(D.DATA_DIR_ENV, raising=False)
    monkeypatch.delenv(D.MIRROR_ENV, raising=False)
    monkeypatch.setenv(D.CACHE_DIR_ENV, str(tmp_path / "default-cache"))


# ---------------------------------------------------------------------------------------------------------
# pot_eval: hand-worked programs
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "program, expected",
    [
        ("original_price = 76\ndiscount = 25\nans = original_price - discount", 51.0),
        ("a, b = 7, 3\nans = a * b", 21.0),
        ("(a, b) = (7, 3)\nans = a - b", 4.0),
        ("x = y = 4\nans = x + y", 8.0),
        ("ans = 17 // 5 + 17 % 5", 5.0),  # 3 + 2
        ("ans = 2 ** 10", 1024.0),
        ("ans = -3 * -2", 6.0),
        ("ans = 1 / 3", 0.333333),  # rounded to 6 decimals
        ("ans = 2 / 3", 0.666667),
        ("ans = 5 if 3 > 2 else 7", 5.0),
        ("ans = 5 if 1 < 2 < 1 else 7", 7.0),  # chained comparison
        ("ans = max(3, 9, 4) - min(3, 9, 4)", 6.0),
        ("ans = round(2.345678912, 2) + abs(-1) + int(2.9) + float(1)", 6.35),
        ("ans = round(2.5)", 2.0),  # Python's banker's rounding, as the reference derivation
        ("x = 4\nprint(x)\nans = x * 2", 8.0),  # print ignored
        ("x = 4\nans = x * 2\nans", 8.0),  # a trailing bare expression is allowed
        ("ans = 53, 14", 53.0),  # a tuple answers its first element (as the reference derivation)
        ("ans = 10\nans = ans - 3", 7.0),
    ],
)
def test_program_answer_hand_worked(program, expected):
    assert program_answer(program) == expected


@pytest.mark.parametrize(
    "program",
    [
        "ans = 1 / 0",  # runtime error
        "ans = x + 1",  # unbound name
        "ans = = 3",  # syntax error
        "x = 3",  # no ans
        "ans = 3 > 2",  # a boolean is no answer
        "import math\nans = math.sqrt(16)",  # import
        "ans = math.floor(2.5)",  # attribute call
        "ans = sum([1, 2])",  # call outside the whitelist, list
        "ans = 0\nfor i in range(3):\n    ans = ans + i",  # loop
        "ans = 'twelve'",  # string constant
        "ans = max(3, key=abs)",  # keyword argument
        "ans = 2 ** 0.5 * 1j",  # complex constant
        "ans = (-8) ** 0.5",  # complex result
        "ans = 1e308 * 10",  # overflow to inf
        "ans = 2 ** 10 ** 10",  # would hang if evaluated
        "a = 10 ** 300\na = a * a\na = a * a\na = a * a\nans = a",  # repeated squaring, capped
        "x = 3\nx += 1\nans = x",  # augmented assignment: not in the whitelist
        "ans = __import__('os').getcwd()",
        "def f():\n    return 3\nans = f()",
    ],
)
def test_program_answer_refuses(program):
    assert program_answer(program) is None


def test_program_answer_never_executes(tmp_path):
    target = tmp_path / "pwned"
    prog = f"__import__('pathlib').Path({str(target)!r}).touch()\nans = 1"
    assert program_answer(prog) is None
    assert not target.exists()


def test_huge_integers_are_capped_not_computed():
    assert MAX_INT_BITS == 4096 and MAX_EXPONENT == 1024
    assert program_answer("ans = 2 ** 1024 - 2 ** 1024 + 1") == 1.0  # largest exponent allowed
    assert program_answer("ans = 2 ** 1025") is None  # exponent over the cap
    ok = "a = 2 ** 1024\nb = a * a * a * 2 ** 1023\nans = b - b + 5"  # 2**4095: 4096 bits, allowed
    assert program_answer(ok) == 5.0
    assert program_answer("a = 2 ** 1024\nb = a * a * a * a\nans = b - b + 5") is None  # 4097 bits


_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


@st.composite
def _program_with_value(draw):
    """A straight-line program over small ints, and its value computed alongside (no eval)."""
    values: list[int] = []
    lines = []
    for i in range(draw(st.integers(1, 5))):
        if values and draw(st.booleans()):
            j, k = draw(st.integers(0, len(values) - 1)), draw(st.integers(0, len(values) - 1))
            op = draw(st.sampled_from(sorted(_OPS)))
            lines.append(f"v{i} = v{j} {op} v{k}")
            values.append(_OPS[op](values[j], values[k]))
        else:
            c = draw(st.integers(-50, 50))
            lines.append(f"v{i} = {c}" if c >= 0 else f"v{i} = -{-c}")
            values.append(c)
    lines.append(f"ans = v{len(values) - 1}")
    return "\n".join(lines), float(values[-1])


@settings(max_examples=60, deadline=None)
@given(_program_with_value())
def test_program_answer_matches_straight_line_arithmetic(case):
    program, value = case
    assert program_answer(program) == value


# ---------------------------------------------------------------------------------------------------------
# Record validation
# ---------------------------------------------------------------------------------------------------------


def test_validate_records_names_file_index_and_field():
    good = {"prompt": "p", "answer": "1", "source": "s", "id": "0"}
    assert D.validate_records([good], "f.json", expected=1) == [good]
    with pytest.raises(D.RecordError, match=r"f\.json: record 1: field 'answer' is missing"):
        D.validate_records([good, {"prompt": "p", "source": "s", "id": "1"}], "f.json")
    with pytest.raises(D.RecordError, match=r"f\.json: record 0: field 'id' must be a string, got int"):
        D.validate_records([{**good, "id": 0}], "f.json")
    with pytest.raises(D.RecordError, match=r"f\.json: expected a JSON array"):
        D.validate_records({"prompt": "p"}, "f.json")
    with pytest.raises(D.RecordError, match=r"f\.json: expected 2 records, got 1"):
        D.validate_records([good], "f.json", expected=2)


def test_parse_ttt_json_rejects_bad_json():
    with pytest.raises(D.RecordError, match=r"x\.json: not valid JSON"):
        D.parse_ttt_json(b"[{", "x.json")


def test_unknown_dataset_lists_registered_names():
    with pytest.raises(KeyError, match="aime2024"):
        D.load_dataset("aime2025")


# ---------------------------------------------------------------------------------------------------------
# The real benchmark files (offline, from shared/data)
# ---------------------------------------------------------------------------------------------------------


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _file(name: str) -> D.DataFile:
    (file,) = D.get_dataset(name).files
    return file


@pytest.mark.parametrize("name", ["aime2024", "amc", "math500"])
def test_registered_hashes_match_the_shared_copies(shared_data, name):
    file = _file(name)
    raw = (shared_data / file.relpath).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == file.sha256
    assert _git_blob_id(raw) == file.git_blob  # the source repository's blob: byte-identical copy
    assert file.url.endswith(f"/verl/data/{file.relpath}")


def test_benchmarks_load_with_expected_contents(shared_data):
    aime = D.load_dataset("aime2024", shared_data)
    amc = D.load_dataset("amc", shared_data)
    math = D.load_dataset("math500", shared_data)
    assert (len(aime), len(amc), len(math)) == (30, 83, 500)
    assert aime[0]["answer"] == "204" and aime[0]["prompt"].startswith("Every morning Aya")
    assert amc[0]["answer"] == "142.0" and all(r["answer"].endswith(".0") for r in amc)
    assert math[0]["id"] == "test/precalculus/807.json"
    assert {r["source"] for r in aime} == {"aime"} and {r["source"] for r in math} == {"math"}
    assert [r["id"] for r in aime] == [str(i) for i in range(30)]
    subjects = Counter(r["id"].split("/")[1] for r in math)
    assert subjects == {"algebra": 124, "intermediate_algebra": 97, "prealgebra": 82, "number_theory": 62,
                        "precalculus": 56, "geometry": 41, "counting_and_probability": 38}


def test_data_dir_env_is_used(shared_data, monkeypatch, tmp_path):
    monkeypatch.setenv(D.DATA_DIR_ENV, str(shared_data))
    recs = D.load_dataset("aime2024", cache_dir=tmp_path / "cache", allow_download=False)
    assert len(recs) == 30
    assert not (tmp_path / "cache").exists()  # nothing cached: the local copy was used


def test_explicit_data_dir_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(D.DataError, match=r"AMC-TTT/test\.json not found in data_dir=.*AMC-TTT/test\.json\.gz"):
        D.load_dataset("amc", tmp_path)


def test_nothing_found_and_no_download_is_a_clear_error(tmp_path):
    with pytest.raises(D.DataError, match=r"MATH-TTT/test\.json not found .*downloads are disabled"):
        D.load_dataset("math500", cache_dir=tmp_path, allow_download=False)


def test_corrupted_local_copy_is_refused(shared_data, tmp_path):
    dst = tmp_path / "AIME-TTT" / "test.json"
    dst.parent.mkdir()
    raw = bytearray((shared_data / "AIME-TTT" / "test.json").read_bytes())
    raw[100] ^= 1
    dst.write_bytes(bytes(raw))
    actual = hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(D.ChecksumError) as e:
        D.load_dataset("aime2024", tmp_path)
    msg = str(e.value)
    assert str(dst) in msg and _file("aime2024").sha256 in msg and actual in msg


def test_gzip_copy_is_checked_on_decompressed_bytes(shared_data, tmp_path):
    raw = (shared_data / "AMC-TTT" / "test.json").read_bytes()
    (tmp_path / "AMC-TTT").mkdir()
    gz = tmp_path / "AMC-TTT" / "test.json.gz"
    gz.write_bytes(gzip.compress(raw))
    assert len(D.load_dataset("amc", tmp_path)) == 83
    gz.write_bytes(gzip.compress(raw + b" "))  # valid gzip, wrong content
    with pytest.raises(D.ChecksumError, match=r"test\.json\.gz: sha256 mismatch .*decompressed"):
        D.load_dataset("amc", tmp_path)
    gz.write_bytes(b"not gzip")
    with pytest.raises(D.ChecksumError, match=r"not a valid gzip file"):
        D.load_dataset("amc", tmp_path)


# ---------------------------------------------------------------------------------------------------------
# Downloads, against a loopback HTTP server serving shared/data
# ---------------------------------------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    """GET /<relpath>: the file under ``root``, or the decompressed ``<relpath>.gz`` (shared/data ships
    the SVAMP file gzip'd while its source URL serves it plain). ``corrupt`` flips one byte."""

    root: Path
    corrupt = False
    requests: list[str]
    timeout = 10

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.requests.append(self.path)
        path = self.root / self.path.lstrip("/")
        if path.is_file():
            body = path.read_bytes()
        elif path.with_name(path.name + ".gz").is_file():
            body = gzip.decompress(path.with_name(path.name + ".gz").read_bytes())
        else:
            self.send_error(404)
            return
        if self.corrupt:
            body = bytearray(body)
            body[len(body) // 2] ^= 0xFF
            body = bytes(body)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture
def loopback_server(shared_data):
    handler = type("Handler", (_Handler,), {"root": shared_data, "requests": [], "corrupt": False})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_download_verifies_and_caches(loopback_server, tmp_path):
    url, handler = loopback_server
    cache = tmp_path / "cache"
    recs = D.load_dataset("aime2024", cache_dir=cache, mirror=url)
    assert len(recs) == 30 and handler.requests == ["/AIME-TTT/test.json"]
    cached = cache / "AIME-TTT" / "test.json"
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == _file("aime2024").sha256
    assert [p.name for p in cached.parent.iterdir()] == ["test.json"]  # no temporary file left
    assert D.load_dataset("aime2024", cache_dir=cache, mirror=url) == recs
    assert len(handler.requests) == 1  # the second load read the cache


def test_download_mirror_from_environment(loopback_server, monkeypatch, tmp_path):
    url, handler = loopback_server
    monkeypatch.setenv(D.MIRROR_ENV, url)
    assert len(D.load_dataset("amc", cache_dir=tmp_path)) == 83
    assert handler.requests == ["/AMC-TTT/test.json"]


def test_default_cache_is_under_ddrl_cache_dir(loopback_server, monkeypatch, tmp_path):
    url, _ = loopback_server
    monkeypatch.setenv(D.CACHE_DIR_ENV, str(tmp_path / "root"))
    assert D.default_cache_dir() == tmp_path / "root" / "data"
    D.load_dataset("aime2024", mirror=url)
    assert (tmp_path / "root" / "data" / "AIME-TTT" / "test.json").is_file()


def test_corrupted_download_is_refused_and_not_cached(loopback_server, tmp_path):
    url, handler = loopback_server
    handler.corrupt = True
    cache = tmp_path / "cache"
    with pytest.raises(D.ChecksumError) as e:
        D.load_dataset("math500", cache_dir=cache, mirror=url)
    msg = str(e.value)
    assert f"{url}/MATH-TTT/test.json" in msg and "MATH-TTT/test.json" in msg
    assert f"expected {_file('math500').sha256}, got " in msg
    actual = msg.split("got ")[1][:64]
    assert len(actual) == 64 and actual != _file("math500").sha256
    assert list((cache / "MATH-TTT").iterdir()) == []  # neither the file nor a temporary copy
    handler.corrupt = False
    assert len(D.load_dataset("math500", cache_dir=cache, mirror=url)) == 500  # a good copy is accepted


def test_corrupted_cache_is_refused(loopback_server, tmp_path):
    url, _ = loopback_server
    cache = tmp_path / "cache"
    D.load_dataset("aime2024", cache_dir=cache, mirror=url)
    (cache / "AIME-TTT" / "test.json").write_bytes(b"[]")
    with pytest.raises(D.ChecksumError, match=r"Delete the cached copy"):
        D.load_dataset("aime2024", cache_dir=cache, mirror=url)


def test_svamp_download_from_mirror(loopback_server, tmp_path):
    url, handler = loopback_server
    problems = D.load_svamp_rollouts(cache_dir=tmp_path, mirror=url)
    assert len(problems) == 999
    assert handler.requests == ["/rollouts/pot_svamp_codex_sc30_raw.jsonl"]


def test_unreachable_source_is_a_clear_error(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(D.DataError, match=rf"could not download AIME-TTT/test\.json from http://127\.0\.0\.1:{port}/"):
        D.load_dataset("aime2024", cache_dir=tmp_path, mirror=f"http://127.0.0.1:{port}")


def test_real_source_urls_are_pinned_to_one_commit_per_repository():
    urls = {name: _file(name).url for name in ("aime2024", "amc", "math500", "svamp_codex_rollouts")}
    commits = {name: re.search(r"/([0-9a-f]{40})/", u).group(1) for name, u in urls.items()}
    assert all(u.startswith("https://raw.githubusercontent.com/PRIME-RL/TTRL/") for n, u in urls.items() if n != "svamp_codex_rollouts")
    assert len({commits["aime2024"], commits["amc"], commits["math500"]}) == 1  # the TTRL files: one snapshot
    assert urls["svamp_codex_rollouts"].startswith("https://raw.githubusercontent.com/TIGER-AI-Lab/Program-of-Thoughts/")


# ---------------------------------------------------------------------------------------------------------
# SVAMP: the prepare step against the shared derived file, and the README's numbers
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def svamp(request):
    shared = request.getfixturevalue("shared_data")
    return D.load_svamp_rollouts(shared)


def test_svamp_prepared_answers_agree_with_reference(svamp, shared_data):
    path = shared_data / "rollouts" / "pot_svamp_codex_sc30_answers.jsonl.gz"
    ref = [json.loads(line) for line in gzip.open(path, "rt")]
    assert len(ref) == len(svamp) == 999
    disagree = [
        (p["id"], j) for p, r in zip(svamp, ref)
        for j, (a, b) in enumerate(zip(p["answers"], r["answers"])) if a != b
    ]
    assert [p["id"] for p in svamp] == [r["svamp_id"] for r in ref]
    assert [p["gt"] for p in svamp] == [r["gt"] for r in ref]
    assert [p["correct"] for p in svamp] == [r["correct"] for r in ref]
    assert disagree == []  # all 29,970 samples agree


def test_svamp_summary_reproduces_readme(svamp):
    s = D.rollout_summary(svamp)
    assert (s["problems"], s["samples"], s["invalid"]) == (999, 29_970, 195)
    assert round(s["mean_accuracy"], 3) == 0.798
    assert round(s["maj_accuracy"], 3) == 0.881
    assert round(s["pass_at_n"], 3) == 0.979
    assert (s["ties_at_top"], s["no_correct"], s["all_correct"]) == (9, 21, 342)
    assert (s["distinct_answers"], s["distinct_correct"]) == (2_715, 978)


def test_svamp_frequency_table_reproduces_readme(svamp):
    t = D.frequency_table(svamp)
    assert list(t["frequency"]) == ["1", "2-3", "4-7", "8-15", "16-23", "24-29", "30"]
    assert list(t["n_distinct"]) == [914, 419, 275, 208, 171, 382, 346]
    assert list(t["frac_correct_distinct"].round(3)) == [0.015, 0.053, 0.135, 0.332, 0.772, 0.948, 0.988]
    assert list(t["n_samples"]) == [914, 975, 1_396, 2_321, 3_323, 10_466, 10_380]
    assert list(t["frac_correct_samples"].round(3)) == [0.015, 0.058, 0.143, 0.364, 0.783, 0.948, 0.988]


def test_svamp_majority_agrees_with_upstream_vote(svamp):
    """Voting with zeros kept reproduces the upstream ``executed`` field except on its two
    zero-dropping problems (idx 640 and 715, README)."""
    differ = [
        p["idx"] for p in svamp  # the stored vote is unrounded: compare within the correctness tolerance
        if not D.is_correct(D.first_seen_majority(p["answers"])[0], p["stored_majority"])
    ]
    assert differ == [640, 715]


def test_svamp_majority_matches_ddrl_voting(svamp):
    """The local first-seen vote over rounded floats equals ddrl.voting.majority_vote over their strings
    (both break ties by first occurrence), on every problem, ties included."""
    from ddrl.voting import majority_vote

    for p in svamp:
        vote = majority_vote([None if a is None else repr(a) for a in p["answers"]])
        label, count, _ = D.first_seen_majority(p["answers"])
        assert (vote.label_count, None if vote.label is None else float(vote.label)) == (count, label), p["id"]


def test_svamp_records_have_the_schema(shared_data):
    recs = D.load_dataset("svamp_codex_rollouts", shared_data)
    assert len(recs) == 999
    assert recs[0]["answer"] == "51" and recs[0]["source"] == "svamp" and recs[0]["id"] == "chal-1"
    assert recs[0]["prompt"].startswith("Each pack of dvds costs 76 dollars.")
    assert all(len(r["answers"]) == 30 and len(r["correct"]) == 30 for r in recs)
    recs[0]["answers"][0] = -1.0  # callers get their own copies
    assert D.load_dataset("svamp_codex_rollouts", shared_data)[0]["answers"][0] == 51.0


# ---------------------------------------------------------------------------------------------------------
# Frequency helpers on hand-worked problems
# ---------------------------------------------------------------------------------------------------------


def test_first_seen_majority_hand_worked():
    assert D.first_seen_majority([1.0, 2.0, 2.0, 1.0]) == (1.0, 2, True)  # tie: 1.0 was seen first
    assert D.first_seen_majority([None, 3.0, None, 3.0, 4.0]) == (3.0, 2, False)
    assert D.first_seen_majority([None, None]) == (None, 0, False)


def test_frequency_table_hand_worked():
    problems = [
        {"id": "a", "gt": 5.0, "answers": [5.0, 5.0, 5.0, 7.0], "correct": [True, True, True, False]},
        {"id": "b", "gt": 1.0, "answers": [2.0, 2.0, None, 1.0], "correct": [False, False, False, True]},
    ]
    t = D.frequency_table(problems, bins=((1, 1), (2, 3), (4, 4)))
    # count 1: (a,7) wrong, (b,1) right; count 2-3: (a,5) right x3, (b,2) wrong x2; count 4: none
    assert list(t["n_distinct"]) == [2, 2, 0]
    assert list(t["frac_correct_distinct"][:2]) == [0.5, 0.5]
    assert list(t["n_samples"]) == [2, 5, 0]
    assert list(t["frac_correct_samples"][:2]) == [0.5, 0.6]
    s = D.rollout_summary(problems)
    assert s["mean_accuracy"] == 4 / 8 and s["maj_accuracy"] == 0.5 and s["invalid"] == 1


# ---------------------------------------------------------------------------------------------------------
# Testbed splits
# ---------------------------------------------------------------------------------------------------------


def test_testbed_splits_through_the_registry():
    from ddrl import testbed

    recs = D.load_dataset("testbed_test", n=8, seed=3)
    assert recs == testbed.generate_split("test", 8, 3)
    assert len(recs) == 8 and all(isinstance(r[k], str) for r in recs for k in D.RECORD_FIELDS)
    assert D.load_dataset("testbed_train", n=4, seed=3) == testbed.generate_split("train", 4, 3)
    assert len(D.load_dataset("testbed_train")) == D.DATASETS["testbed_train"].options["n"]


def test_load_questions_cuts_files_and_generates_testbed(shared_data):
    from ddrl.data import load_questions

    assert len(load_questions("aime2024", 5, data_dir=shared_data)) == 5
    assert len(load_questions("aime2024", None, data_dir=shared_data)) == 30
    tb = load_questions("testbed_test", 7, seed=3)
    assert len(tb) == 7 and tb == load_questions("testbed_test", 7, seed=3)


# ---------------------------------------------------------------------------------------------------------
# The registry file: data/registry.yaml
# ---------------------------------------------------------------------------------------------------------

REGISTRY = REPO / "data" / "registry.yaml"


def test_registry_file_is_what_load_dataset_uses():
    import yaml

    doc = yaml.safe_load(REGISTRY.read_text())["datasets"]
    assert D.registry_path() == REGISTRY
    assert list(D.DATASETS) == list(doc)
    for name, entry in doc.items():
        spec = D.get_dataset(name)
        assert spec.num_records == entry["records"] and spec.license == entry["license"] and spec.license
        assert [(f.relpath, f.url, f.sha256) for f in spec.files] == [(f["path"], f["url"], f["sha256"]) for f in entry["files"]]
        assert list(spec.fields) == entry["fields"] == list(D.PARSERS[entry["format"]].fields)


def _registry_text(tmp_path, edit):
    import yaml

    doc = yaml.safe_load(REGISTRY.read_text())
    edit(doc["datasets"])
    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["amc"]["files"][0].pop("sha256"), r"dataset 'amc', file 0: field 'sha256' must be a non-empty string"),
    (lambda d: d["amc"]["files"][0].update(sha256="abc"), r"'sha256' must be 64 lowercase hex digits, got 'abc'"),
    (lambda d: d["math500"]["files"][0].update(url="https://example.org/main/test.json"),
     r"dataset 'math500', file 0: field 'url' must be an https URL pinned to a commit"),
    (lambda d: d["aime2024"].update(format="parquet"), r"dataset 'aime2024': format 'parquet' has no parser; known: ttt_json"),
    (lambda d: d["aime2024"].update(fields=["prompt"]), r"fields \['prompt'\] differ from what the 'ttt_json' parser reads"),
    (lambda d: d["aime2024"].pop("license"), r"dataset 'aime2024': field 'license' is missing"),
    (lambda d: d["aime2024"].update(records="30"), r"dataset 'aime2024': field 'records' has the wrong type"),
    (lambda d: d["aime2024"].update(homepage="x"), r"dataset 'aime2024': unknown field\(s\) \['homepage'\]"),
])
def test_malformed_registry_is_a_clear_error(tmp_path, edit, message):
    path = _registry_text(tmp_path, edit)
    with pytest.raises(D.RegistryError, match=message) as e:
        D.load_registry(path)
    assert str(path) in str(e.value)


def test_a_new_dataset_is_one_registry_entry(tmp_path, shared_data):
    """Adding a dataset in an existing format takes one entry: here AMC again under another name."""
    path = _registry_text(tmp_path, lambda d: d.update(amc_copy={**d["amc"], "description": "a second entry"}))
    spec = D.load_registry(path)["amc_copy"]
    assert len(spec.loader([D.locate(f, shared_data) for f in spec.files])) == 83


def test_registry_is_the_only_place_urls_and_hashes_are_written():
    """No other file of the repository (code, docs, tests, notebooks) writes a dataset's URL, its commit, its
    upstream path, sha256 or blob id (not even 8 hex digits of one)."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    needles = {}
    for spec in D.DATASETS.values():
        for f in spec.files:
            commit, upstream_path = re.search(r"/([0-9a-f]{40})/(.+)$", f.url).groups()
            needles |= {f.url: spec.name, commit: spec.name, upstream_path: spec.name,
                        f.sha256[:8]: spec.name, f.sha256[-8:]: spec.name}
            if f.git_blob:
                needles[f.git_blob[:8]] = spec.name
    offenders = []
    for rel in files:
        p = REPO / rel
        if rel == "data/registry.yaml" or p.is_symlink() or not p.is_file():
            continue
        text = p.read_bytes().decode("utf-8", errors="ignore")
        offenders += [(rel, needle, name) for needle, name in needles.items() if needle in text]
    assert not offenders, f"dataset URLs/hashes written outside data/registry.yaml: {offenders}"


def test_wheel_carries_the_registry(tmp_path):
    """Built as a wheel (from a copy of the sources) and imported from outside the repository, ddrl.data
    finds the packaged registry (ddrl/registry.yaml, a symlink in the repository, a real file in the wheel)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("ddrl", "data"):
        shutil.copytree(REPO / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    from importlib.metadata import PackageNotFoundError, version

    try:  # build in this environment when its setuptools can (pyproject needs >= 77), else let pip isolate it
        own_setuptools = int(version("setuptools").split(".")[0]) >= 77
    except PackageNotFoundError:
        own_setuptools = False
    isolation = ["--no-build-isolation"] if own_setuptools else []
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", *isolation,
                        "-w", str(tmp_path / "dist")], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        assert z.read("ddrl/registry.yaml") == REGISTRY.read_bytes()
        z.extractall(tmp_path / "site")
    code = "import ddrl.data as D; print(D.registry_path()); print(len(D.DATASETS))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tmp_path / "site")}, check=True).stdout.split()
    assert out == [str(tmp_path / "site" / "ddrl" / "registry.yaml"), str(len(D.DATASETS))]


def test_a_missing_file_is_unavailable_a_damaged_one_is_not(tmp_path):
    """Issue 98: the one data error a notebook may answer by skipping a section is DataUnavailable (not here, not
    fetchable); a damaged copy (a zlib error inside a .gz, another file's bytes) is a ChecksumError, never that."""
    from ddrl.infra.datafiles import DataFile, DataUnavailable, locate

    raw = b'{"a": 1}\n' * 3000
    file = DataFile("x/test.json", "https://example.invalid/x", hashlib.sha256(raw).hexdigest())
    for where in ({"data_dir": tmp_path}, {"cache_dir": tmp_path, "allow_download": False}):
        with pytest.raises(DataUnavailable, match=r"x/test\.json not found"):
            locate(file, **where)
    (tmp_path / "x").mkdir()
    data = bytearray(gzip.compress(raw, mtime=0))
    data[20] ^= 0xFF  # a zlib error inside the deflate stream
    (tmp_path / "x" / "test.json.gz").write_bytes(bytes(data))
    with pytest.raises(D.ChecksumError, match=r"test\.json\.gz: not a valid gzip file") as e:
        locate(file, data_dir=tmp_path)
    assert not isinstance(e.value, DataUnavailable)
    (tmp_path / "x" / "test.json.gz").write_bytes(gzip.compress(raw, mtime=0))
    assert locate(file, data_dir=tmp_path)[1] == raw
