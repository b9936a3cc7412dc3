"""The decode attention of :class:`ddrl.accel.fast_sampling.StaticCacheSampler` as one hand-written C loop
(``ddrl/accel/decode_attention.c``), built with the machine's C compiler on first use and loaded with ``ctypes``.

Why by hand: one decode step's attention over [a row's prompt, its response so far] is, on the testbed, 2,048 dot
products of 24 numbers per context position. Torch runs it as batched 1 x t matmuls, a softmax over a concatenation
and scatters into a [prompt, slot] grid (``_SharedPromptAttention``): a third of the sampler's op time went to
``aten::bmm`` alone (torch.profiler, pairing a of ``bench/rl_step.py``). The C loop keeps each row's keys transposed
(positions contiguous), so the scores and the weighted sum are plain vector loops, and writes the step's key and
value into the cache itself; it splits the rows over the process's OpenMP threads (torch's own libgomp). It computes
the same attention up to float rounding (another summation order; ``bench/native_attention.py`` has the numbers).
No library offers a CPU cascade attention (FlashInfer's is CUDA-only).

Which one a sampler uses is ``DDRL_DECODE_ATTENTION``: ``torch`` (the default: the C loop is opt-in, its 1.05x per RL
step weighed against a compiler at first use and a raw-pointer ABI in ``docs/benchmarks.md``), ``auto`` (the C loop
where :func:`unavailable_reason` finds nothing against it) or ``native`` (the C loop or an error naming why not). The choice enters cache
keys through :func:`key` (:func:`ddrl.models.device_key`), since another rounding may flip a near-tie draw; the
claims study pins ``torch`` (:func:`ddrl.accel.logprob_backends.pinned_backend`), as it was computed.

The library goes to ``<cache>/native/decode_attention-<key>.so``, the key hashing the source, the compiler's version,
the flags and this CPU (``-march=native``): written once through a temporary name and ``os.replace``, so processes
building it at once each leave a whole file, and a finished one is only read.

Native code is trusted only when built here (issue 85): beside the library, ``<name>.so.sha256`` records the sha256
of the bytes this build produced. A library is loaded only when its bytes match that record, the folder and the file
belong to this user and are writable by no one else; anything else (a planted or altered library, a missing record)
is built again. The verified bytes are loaded from a private copy (a fresh 0700 temporary folder), so what was
checked is what runs. What this guarantees: a library dropped into the cache by anything but this build, or altered
on disk, is never executed; it cannot stop someone who can write your own files (they can write the record, or the
package itself). A library that fails to load or lacks its symbols is the torch attention under ``auto``, with the
reason (naming the file) in :func:`unavailable_reason`; under ``native`` that reason is the error.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import torch

from ddrl.infra.storage import atomic_write_bytes, cache_root, sha256_bytes, unique_tmp

SOURCE = Path(__file__).with_name("decode_attention.c")
#: what ``DDRL_DECODE_ATTENTION`` accepts
CHOICES = ("auto", "torch", "native")
FLAGS = ("-O3", "-march=native", "-fno-math-errno", "-fopenmp", "-shared", "-fPIC")
VERSION = "v1"  # of what the key records: bump when the kernel's arithmetic changes in a way the source hash misses


def choice() -> str:
    """``DDRL_DECODE_ATTENTION`` (default ``torch``: the C loop is opt-in), refused by name unless one of :data:`CHOICES`."""
    value = os.environ.get("DDRL_DECODE_ATTENTION") or "torch"
    if value not in CHOICES:
        raise ValueError(f"DDRL_DECODE_ATTENTION must be one of {CHOICES}, got {value!r}")
    return value


def compiler() -> str | None:
    """``$CC`` or ``gcc``, as a path, or None when there is none."""
    return shutil.which(os.environ.get("CC") or "gcc")


def _cpu_identity() -> str:
    """This CPU as ``-march=native`` sees it: the model name and feature flags of /proc/cpuinfo (or the machine)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine()
    keep = [ln for ln in lines if ln.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part")]
    return platform.machine() + "\n" + "\n".join(sorted(set(keep)))


def library_key(cc: str) -> str:
    """What the built library depends on: the source, the compiler's version line, the flags and this CPU."""
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False).stdout
    h = hashlib.sha256()
    for part in (SOURCE.read_bytes(), out.splitlines()[0].encode() if out else b"", " ".join(FLAGS).encode(),
                 _cpu_identity().encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def record_path(library: Path) -> Path:
    """Where the sha256 of the bytes this build produced for ``library`` is recorded."""
    return library.with_name(library.name + ".sha256")


def _private(path: Path) -> str | None:
    """Why ``path`` (a file or folder) could hold code another user put there: not owned by this user, or writable
    by group or others; None when it is private."""
    st = path.stat()
    if st.st_uid != os.getuid():
        return f"{path} belongs to uid {st.st_uid}, not this user ({os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by others (mode {stat.filemode(st.st_mode)})"
    return None


def _drop_write_bits(folder: Path) -> None:
    """Make this user's ``folder`` writable by this user only (nothing if it is another user's: then it is not
    trusted, :func:`_private`)."""
    st = folder.stat()
    if st.st_uid == os.getuid() and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.chmod(folder, stat.S_IMODE(st.st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))


def verified_bytes(path: Path) -> tuple[bytes | None, str]:
    """``(bytes, "")`` of the library at ``path`` when they match the recorded digest of this build and the file
    and its folder are private (:func:`_private`), else ``(None, why not)``. Reads the file once: the bytes
    returned are the bytes checked."""
    record = record_path(path)
    if not path.is_file():
        return None, f"{path} is not built yet"
    if not record.is_file():
        return None, f"{path} has no record of this build's sha256 ({record.name})"
    for p in (path.parent, path, record):
        if (why := _private(p)) is not None:
            return None, why
    data = path.read_bytes()
    want, got = record.read_text(errors="replace").strip(), sha256_bytes(data)
    if want != got:
        return None, f"{path}'s sha256 {got[:16]}... is not the one this build recorded ({want[:16]}...)"
    return data, ""


def build(cache_dir: str | Path | None = None) -> Path:
    """The compiled library for this machine, compiling it if no library this build recorded is there (about 0.3 s
    with gcc): a file there that does not verify (:func:`verified_bytes`) is replaced, never loaded. Raises
    ``RuntimeError`` naming the compiler and its message when it cannot be built."""
    cc = compiler()
    if cc is None:
        raise RuntimeError(f"no C compiler: {os.environ.get('CC') or 'gcc'} is not on PATH")
    path = Path(cache_dir or cache_root()) / "native" / f"decode_attention-{library_key(cc)[:16]}.so"
    if verified_bytes(path)[0] is not None:
        return path
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _drop_write_bits(path.parent)  # a folder made under umask 002 (or by an older version) would never verify
    tmp = unique_tmp(path)
    try:
        res = subprocess.run([cc, *FLAGS, str(SOURCE), "-o", str(tmp), "-lm"], capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            raise RuntimeError(f"{cc} could not build {SOURCE.name}: {res.stderr.strip()[-400:]}")
        os.chmod(tmp, 0o755)
        digest = sha256_bytes(tmp.read_bytes())
        os.replace(tmp, path)  # the library, then its record: a library without one is built again
        atomic_write_bytes(record_path(path), digest.encode() + b"\n")
        os.chmod(record_path(path), 0o644)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_verified(path: Path) -> ctypes.CDLL:
    """``ctypes.CDLL`` of the library at ``path``, loaded from a private copy of the bytes checked against this
    build's record (so a file swapped after the check is not what runs). ``RuntimeError`` naming the file when it
    does not verify, ``OSError`` when it does not load."""
    data, why = verified_bytes(path)
    if data is None:
        raise RuntimeError(f"not loading {path}: {why}")
    # a 0700 folder beside the library (not /tmp, which may be mounted noexec); the mapping outlives the file
    with tempfile.TemporaryDirectory(prefix=".load-", dir=path.parent) as private:
        copy = Path(private) / path.name
        copy.write_bytes(data)
        try:
            return ctypes.CDLL(str(copy))
        except OSError as e:
            raise OSError(f"{path} does not load: {e}") from None


#: The library's entry points: one missing means it is not this build's library.
SYMBOLS = ("ddrl_decode_attention", "ddrl_decode_attention_limits")


def _openmp_runtimes() -> set[str]:
    """The OpenMP runtimes loaded in this process (their paths: libgomp / libomp / libiomp), as threadpoolctl finds
    them."""
    from threadpoolctl import threadpool_info

    return {d["filepath"] for d in threadpool_info() if d.get("internal_api") == "openmp"}


@lru_cache(maxsize=None)
def _load(cache_dir: str | None) -> tuple[ctypes.CDLL | None, str | None]:
    if platform.system() != "Linux":
        return None, f"built and checked on Linux only, not {platform.system()}"
    if "OpenMP" not in torch.__config__.parallel_info():
        return None, "torch's CPU parallel backend is not OpenMP"
    try:
        before = _openmp_runtimes()
    except ImportError:
        return None, "threadpoolctl, which finds the OpenMP runtime the library would share, is not installed"
    if not any("libgomp" in Path(n).name for n in before):
        return None, "torch did not load GNU OpenMP (libgomp), which the library would share"
    try:
        path = build(cache_dir)
        lib = load_verified(path)
    except (RuntimeError, OSError) as e:
        return None, str(e)
    if _openmp_runtimes() != before:  # the library brought a second OpenMP runtime: threads would oversubscribe
        return None, f"loading the library added an OpenMP runtime ({sorted(_openmp_runtimes() - before)})"
    missing = [s for s in SYMBOLS if not hasattr(lib, s)]
    if missing:
        return None, f"{path} lacks the symbol(s) {missing}: not a library of this build"
    fn = lib.ddrl_decode_attention
    p, i = ctypes.c_void_p, ctypes.c_int64
    fn.argtypes = [p, i, i, p, i, i, p, i, i, p, p, p, p, p, p, i, i, i, p, i, i, i, i, i, i, ctypes.c_float]
    fn.restype = None
    lim = [ctypes.c_int64() for _ in range(3)]
    lib.ddrl_decode_attention_limits(*[ctypes.byref(x) for x in lim])
    lib.limits = tuple(x.value for x in lim)  # prompt width, steps, head dim the kernel's stack buffers hold
    return lib, None


def unavailable_reason() -> str | None:
    """Why the C loop cannot be used in this process (None when it can): not Linux, torch not on GNU OpenMP, no
    compiler, a failed build, or a second OpenMP runtime. Builds and loads the library on the first call."""
    return _load(os.environ.get("DDRL_CACHE_DIR"))[1]


def library() -> ctypes.CDLL:
    """The loaded library; raises ``RuntimeError`` with :func:`unavailable_reason` when there is none."""
    lib, reason = _load(os.environ.get("DDRL_CACHE_DIR"))
    if lib is None:
        raise RuntimeError(f"the native decode attention is unavailable: {reason}")
    return lib


def use_native() -> bool:
    """Whether a CPU sampler built now uses the C loop: ``DDRL_DECODE_ATTENTION`` is ``native`` (then it must be
    available: ``RuntimeError`` naming why not), or ``auto`` and it is available."""
    c = choice()
    if c == "torch":
        return False
    reason = unavailable_reason()
    if c == "native" and reason is not None:
        raise RuntimeError(f"DDRL_DECODE_ATTENTION=native, but the native decode attention is unavailable: {reason}")
    return reason is None


def key() -> dict:
    """What a CPU result's cache key records of the decode attention: nothing for torch's (so every result computed
    before the C loop keeps its key), ``{"decode_attention": "native-v1"}`` where :func:`use_native`."""
    return {"decode_attention": f"native-{VERSION}"} if use_native() else {}
