"""The method table: every method's name, words, colour, trainer preset, evaluated weights and verl mapping, in one
place (``ddrl/methods.yaml``), checked when it is loaded.

A method is a row. Notebooks, the claims study, the figures and the verl launcher read it: :data:`ddrl.config.PRESETS`
(the trainer settings) and :data:`ddrl.config.METHODS` (what is evaluated) are built from it, the figures' words and
colours come from :func:`words` and :func:`color`. Adding a method is one row there (and, for a new reward, one
function of :mod:`ddrl.rewards`): docs/architecture.md, "Adding a method".

The table is data, not code: the figure store keys a figure by the code that draws it (:mod:`ddrl.report.figure_keys`),
so a new row, or a new colour for a method a figure does not draw, leaves every committed figure's key where it was;
the committed figures are redrawn and compared byte for byte by ``tests/test_study.py``, which catches a changed word or
colour of a method a figure does draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Method", "TABLE_FILE", "load_table", "TABLE", "words", "color", "trains", "trainer_presets", "evaluated"]

TABLE_FILE = Path(__file__).with_name("methods.yaml")
WEIGHTS = ("base", "final", "rl")
REFINE_STARTS = ("rl", "base")
_FIELDS = {"words", "color", "trainer", "run", "weights", "refine", "verl", "source"}


@dataclass(frozen=True)
class Method:
    """One row of ``ddrl/methods.yaml``."""

    name: str
    words: str  # legends, tables, sentences
    color: str  # "#rrggbb"
    trainer: dict[str, Any] | None = None  # TrainConfig overrides: the trainer preset named like the method
    run: str | None = None  # the trainer preset whose run is evaluated (None: its own)
    weights: str = "final"  # base | final | rl
    refine: dict[str, Any] | None = None  # {keep_factor, lr_divisor, start}: a COR call on other weights (the study)
    verl: bool = False  # runnable by ddrl/integrations/verl/launch.py
    source: str = ""

    @property
    def preset(self) -> str:
        """The trainer preset whose run this method evaluates."""
        return self.run or self.name


def _row(name: str, row: Any, where: str) -> Method:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: method {name!r} must be a mapping of {sorted(_FIELDS)}, got {type(row).__name__}")
    unknown = sorted(set(row) - _FIELDS)
    if unknown:
        raise ValueError(f"{where}: method {name!r} has unknown field(s) {unknown}; expected {sorted(_FIELDS)}")
    for req in ("words", "color"):
        if not isinstance(row.get(req), str) or not row[req]:
            raise ValueError(f"{where}: method {name!r} needs {req!r} (a non-empty string)")
    c = row["color"]
    if not (len(c) == 7 and c[0] == "#" and all(ch in "0123456789abcdefABCDEF" for ch in c[1:])):
        raise ValueError(f"{where}: method {name!r}: color must be '#rrggbb', got {c!r}")
    weights = row.get("weights", "final")
    if weights not in WEIGHTS:
        raise ValueError(f"{where}: method {name!r}: weights must be one of {WEIGHTS}, got {weights!r}")
    trainer, refine, run = row.get("trainer"), row.get("refine"), row.get("run")
    if trainer is not None and not isinstance(trainer, dict):
        raise ValueError(f"{where}: method {name!r}: trainer must be a mapping of TrainConfig fields")
    if (refine is not None) + (trainer is not None or run is not None) != 1:
        raise ValueError(f"{where}: method {name!r} needs 'trainer' (its own run) and/or 'run' (another method's run), "
                         f"or else 'refine' (a COR call on the DDRL run)")
    if refine is not None:
        if set(refine) != {"keep_factor", "lr_divisor", "start"} or refine["start"] not in REFINE_STARTS:
            raise ValueError(f"{where}: method {name!r}: refine must be {{keep_factor, lr_divisor, start}} with start "
                             f"in {REFINE_STARTS}, got {refine!r}")
    return Method(name, row["words"], c, trainer, run, weights, refine, bool(row.get("verl", False)),
                  str(row.get("source", "")))


def load_table(path: str | Path = TABLE_FILE) -> dict[str, Method]:
    """The rows of a method table (``ddrl/methods.yaml`` by default), checked: each row's fields, a ``run`` that names
    a method with its own trainer row, and trainer settings that are TrainConfig fields (:func:`ddrl.config.make_config`
    checks their values). A bad row is an error naming the file, the method and the field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: cannot read the method table: {e}") from e
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{path}: expected a mapping method -> row, got {type(raw).__name__}")
    table = {str(name): _row(str(name), row, str(path)) for name, row in raw.items()}
    for m in table.values():
        if m.run is not None and (m.run not in table or table[m.run].trainer is None):
            raise ValueError(f"{path}: method {m.name!r}: run {m.run!r} must name a method with a trainer row")
    return table


#: The method table, loaded once.
TABLE: dict[str, Method] = load_table()


def words(method: str) -> str:
    """A method's name in words (an unknown name is returned unchanged)."""
    m = TABLE.get(method)
    return m.words if m else method


def color(method: str, default: str = "#333333") -> str:
    """A method's colour (``default`` for a name the table does not hold)."""
    m = TABLE.get(method)
    return m.color if m else default


def trains(method: str) -> bool:
    """Whether ``method`` is its own RL run (it has training curves): not the base model, not another method's run,
    not a COR call on one."""
    m = TABLE[method]
    return m.trainer is not None and m.run is None and m.refine is None and m.weights != "base"


def trainer_presets(table: dict[str, Method] | None = None) -> dict[str, dict[str, Any]]:
    """``{preset: TrainConfig overrides}``: the rows that train a run of their own."""
    return {m.name: dict(m.trainer) for m in (table or TABLE).values() if m.trainer is not None}


def evaluated(table: dict[str, Method] | None = None) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """``{method: (trainer preset, weights, extra overrides)}``: the methods a comparison names (refinements of the
    claims study are not among them: they are one COR call each, :data:`ddrl.study.plan.REFINED`)."""
    return {m.name: (m.preset, m.weights, {}) for m in (table or TABLE).values() if m.refine is None}
