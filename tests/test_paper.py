"""ddrl.paper: every printed number, checked against the paper's LaTeX source when it is present."""

from __future__ import annotations

import re

import pytest

from ddrl import paper

TEX = paper.tex_path()
needs_tex = pytest.mark.skipif(not TEX.is_file(), reason=f"the paper's LaTeX source is not at {TEX} "
                               "(set DDRL_PAPER_TEX to check ddrl.paper against it)")
BENCH = {"AIME2024": "AIME 2024", "MATH": "MATH-500", "AIME": "AIME 2024", "AMC": "AMC", "AIME 2024": "AIME 2024",
         "MATH-500": "MATH-500", "Avg": "Avg"}
NAMES2 = {"No Adaptation": "no_adaptation", "TTRL": "ttrl", "ETMR": "etmr", "DDRL": "ddrl"}
FLAGS3 = {flags: row for row, flags in paper.TABLE3_ROWS.items()}


@pytest.fixture(scope="module")
def text():
    return TEX.read_text()


def _blocks(rows):
    """Carry the first column (a multirow cell) down to the rows below it."""
    current = None
    for r in rows:
        current = r[0] or current
        yield current, r


def test_no_none_and_every_entry_has_a_source():
    assert paper.integrity_errors() == []
    assert all(r.value is not None for r in paper.PAPER.values())
    assert not hasattr(paper, "NOT_REACHED") and not hasattr(paper, "TEAM_BRIEF")


def test_integrity_check_catches_bad_entries(monkeypatch):
    monkeypatch.setitem(paper.PAPER, ("setting", "bad"), paper.Reported(float("nan"), "x", "y"))
    monkeypatch.setitem(paper.PAPER, ("setting", "bad2"), paper.Reported(None, "x", "y"))
    monkeypatch.setitem(paper.PAPER, ("setting", "bad3"), paper.Reported(1, "", "y"))
    assert len(paper.integrity_errors()) == 3


def test_every_table_is_complete():
    counts = {k: sum(1 for key in paper.PAPER if key[0] == k) for k in
              ("table1", "table2", "table2_delta_pct", "table3", "table4", "table5", "table6")}
    assert counts == {"table1": 4, "table2": 48, "table2_delta_pct": 12, "table3": 48, "table4": 21, "table5": 12,
                      "table6": 9}


@needs_tex
def test_table1_matches_the_latex(text):
    rows = paper.latex_table(text, 1)
    header = [BENCH[h] for h in rows[0][1:]]
    method = {"GRPO": "grpo", "GRPO (w/o norm.)": "grpo_no_norm"}
    seen = 0
    for r in rows[1:]:
        for bench, cell in zip(header, r[1:]):
            assert paper.value(("table1", "Qwen2.5-Math-1.5B", bench, method[r[0]])) == float(cell)
            seen += 1
    assert seen == 4


@needs_tex
def test_table2_and_its_delta_row_match_the_latex(text):
    rows = paper.latex_table(text, 2)
    header = [BENCH[h] for h in rows[0][2:]]
    seen = 0
    for model, r in _blocks(rows[1:]):
        m = paper.TABLE_MODEL_NAMES[model]
        for bench, cell in zip(header, r[2:]):
            if r[1] == "Delta":
                assert paper.value(("table2_delta_pct", m, bench)) == float(cell.rstrip("%"))
            else:
                assert paper.value(("table2", m, bench, NAMES2[r[1]])) == float(cell)
            seen += 1
    assert seen == 60


def test_table2_delta_notes_give_the_recomputed_gain():
    for m in paper.MODELS:
        for b in paper.BENCHMARKS:
            ddrl, etmr = paper.value(("table2", m, b, "ddrl")), paper.value(("table2", m, b, "etmr"))
            r = paper.get(("table2_delta_pct", m, b))
            assert f"{100 * (ddrl - etmr) / etmr:+.2f}%" in r.note
    # the one printed gain that disagrees with its table: Qwen2.5-3B AIME 2024, (10.0 - 9.2) / 9.2 = 8.70%, printed 8.2
    bad = [k for k, r in paper.PAPER.items() if "disagrees" in r.note]
    assert bad == [("table2_delta_pct", "Qwen2.5-3B", "AIME 2024")]


def test_printed_averages_are_the_mean_of_the_three_benchmarks():
    for kind in ("table2", "table3", "table5"):
        rows = {k[:-2] + (k[-1],) for k in paper.PAPER if k[0] == kind}
        for r in rows:
            vals = [paper.value(r[:-1] + (b, r[-1])) for b in paper.BENCHMARKS[:3]]
            assert abs(sum(vals) / 3 - paper.value(r[:-1] + ("Avg", r[-1]))) < 0.051, r


@needs_tex
def test_table3_matches_the_latex(text):
    rows = paper.latex_table(text, 3)
    header = [BENCH[h] for h in rows[0][4:]]
    seen = 0
    for model, r in _blocks(rows[1:]):
        row = FLAGS3[tuple(c == "yes" for c in r[1:4])]
        for bench, cell in zip(header, r[4:]):
            assert paper.value(("table3", paper.TABLE_MODEL_NAMES[model], bench, row)) == float(cell)
            seen += 1
    assert seen == 48


@needs_tex
def test_table4_matches_the_latex(text):
    rows = paper.latex_table(text, 4)
    setting = {"BCS + DAE": "bcs_dae", "+ Additional RL": "additional_rl", "+ COR (Ours)": "ddrl"}
    seen = 0
    for bench, r in _blocks(rows[1:]):
        for q, cell in zip(("epochs", "minutes", "pass@1"), r[2:]):
            key = ("table4", BENCH[bench], setting[r[1]], q)
            if cell == "--":
                assert key not in paper.PAPER
                continue
            assert paper.value(key) == float(cell.replace(" min", ""))
            seen += 1
    assert seen == 21


@needs_tex
def test_tables_5_and_6_match_the_latex(text):
    rows = paper.latex_table(text, 5)
    method = {"Qwen2.5-Math-7B": "no_adaptation", "+TTRL": "ttrl", "+DDRL": "ddrl"}
    for r in rows[1:]:
        for bench, cell in zip(rows[0][1:], r[1:]):
            assert paper.value(("table5", "Qwen2.5-Math-7B", BENCH[bench], method[r[0]])) == float(cell)
    rows = paper.latex_table(text, 6)
    for r in rows[1:]:
        for bench, cell in zip(rows[0][1:], r[1:]):
            assert paper.value(("table6", r[0].split()[0], BENCH[bench])) == float(cell)


def test_latex_table_missing_label_is_a_clear_error():
    with pytest.raises(ValueError, match="tab:main"):
        paper.latex_table("no tables here", 2)


def _section(text: str, name: str) -> str:
    start = text.index(f"%% file: {name}")
    end = text.find("%% file:", start + 1)
    return " ".join(text[start:end if end > 0 else None].split())


@needs_tex
def test_settings_are_stated_in_the_text(text):
    exp = _section(text, "sections/exp.tex")
    t = paper.value
    assert (f"$N={t(('setting', 'n_votes'))}$ rollouts per prompt with temperature $1.0$ for math-specialized models "
            "and $0.6$ for other models") in exp
    assert (t(("setting", "rollout_temperature_math")), t(("setting", "rollout_temperature_other"))) == (1.0, 0.6)
    assert f"downsampled to ${t(('setting', 'k_train'))}$ trajectories" in exp
    assert "$5\\times10^{-7}$ for Qwen models and $2\\times10^{-7}$ for the Llama model" in exp
    assert (t(("setting", "lr_qwen")), t(("setting", "lr_llama"))) == (5e-7, 2e-7)
    assert f"fixed to ${t(('setting', 'max_response_tokens'))}$ tokens" in exp
    eps = [t(("setting", f"episodes_{b}")) for b in ("math500", "amc", "aime2024")]
    assert "set to ${}$, ${}$, and ${}$ for MATH-500, AMC, and AIME 2024".format(*eps) in exp
    keep = [t(("setting", f"cor_keep_{b}")) for b in ("math500", "amc", "aime2024")]
    assert keep[1] == keep[2] and "({} for MATH-500 and {} for AMC and AIME 2024)".format(keep[0], keep[1]) in exp
    assert f"for {t(('setting', 'cor_epochs'))} epochs with a learning rate of $1\\times10^{{-5}}$" in exp
    assert t(("setting", "cor_lr")) == 1e-5
    assert (f"${t(('setting', 'eval_samples'))}$ responses are generated per prompt with temperature "
            f"${t(('setting', 'eval_temperature'))}$ and top-$p={t(('setting', 'eval_top_p'))}$") in exp
    assert f"with $M={t(('setting', 'cor_m'))}$ in our experiments" in _section(text, "sections/method.tex")
    appx = _section(text, "sections/appendix.tex")
    assert (f"low-(<={t(('band', 'reliable_low_max_count'))}) and high-(>={t(('band', 'reliable_high_min_count'))}) "
            "frequency regions remain relatively reliable") in appx
    assert f"{t(('band', 'aime_problems'))} problems" in appx
    assert "sampling each prompt 64 times" in _section(text, "sections/intro.tex")


@needs_tex
def test_intro_claims_are_stated_and_relative_to_ttrl_average(text):
    intro = _section(text, "sections/intro.tex")
    got = re.findall(r"gains of ([\d.]+)\\% on Qwen2.5-MATH-1.5B and ([\d.]+)\\% on LLaMA-3.1-8B-Instruct", intro)
    assert got == [(paper.fmt(("claim", "rel_gain_over_ttrl_pct", "Qwen2.5-Math-1.5B")),
                    paper.fmt(("claim", "rel_gain_over_ttrl_pct", "Llama-3.1-8B-Instruct")))]
    for m in ("Qwen2.5-Math-1.5B", "Llama-3.1-8B-Instruct"):
        rel = 100 * (paper.value(("table2", m, "Avg", "ddrl")) / paper.value(("table2", m, "Avg", "ttrl")) - 1)
        assert abs(rel - paper.value(("claim", "rel_gain_over_ttrl_pct", m))) < 0.06
        assert f"{rel:.2f}%" in paper.get(("claim", "rel_gain_over_ttrl_pct", m)).note


def test_paper_and_scripts_differ_on_rollout_temperature_and_both_are_kept():
    assert paper.rollout_temperature("qwen2.5-math-1.5b") == 1.0
    assert paper.rollout_temperature("llama-3.1-8b-instruct") == 0.6
    assert paper.rollout_temperature("qwen2.5-3b", source="scripts") == 1.0
    assert "differ" in paper.get(("setting", "rollout_temperature_other")).note
    with pytest.raises(ValueError, match="source"):
        paper.rollout_temperature("x", source="guess")


def test_setting_for_and_bcs_cap():
    assert [paper.setting_for("cor_keep", b) for b in ("math500", "amc", "aime2024")] == [4, 16, 16]
    assert paper.value(("setting", "bcs_k_pos_cap")) == paper.value(("setting", "k_train")) // 2


def test_unknown_key_is_a_clear_error():
    with pytest.raises(KeyError, match="key kinds"):
        paper.get(("table9", "x"))


def test_compare_builds_paper_vs_measured():
    df = paper.compare([("N", ("setting", "n_votes"), 64), ("ours only", None, 1.5)])
    assert list(df.columns) == ["quantity", "paper", "measured", "where", "source", "note"]
    assert df.loc[0, "paper"] == 64 and df.loc[1, "paper"] is None
    assert "sections/exp.tex" in df.loc[0, "source"]
