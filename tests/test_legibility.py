"""ddrl.report.legibility: matplotlib's own text boxes, asked whether they overlap (issue 95)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ddrl.report.legibility import legend_on_data, overlaps, spread  # noqa: E402


def test_overlapping_texts_are_named_and_a_clean_figure_has_none():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.set(title="a title", xlabel="x", ylabel="y")
    fig.tight_layout()
    assert overlaps(fig) == []
    ax.text(0.5, 0.5, "one note")
    ax.text(0.5, 0.5, "another note")
    assert overlaps(fig) == ["'one note' overlaps 'another note'"]
    plt.close(fig)


def test_crowded_tick_labels_and_a_suptitle_on_a_label_are_found():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.set_xticks(range(6), [f"a long label {i}" for i in range(6)])
    assert any("a long label" in o for o in overlaps(fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("the axes' title")
    fig.suptitle("the figure's title", y=ax.get_position().y1 + 0.03)  # where the axes' title is
    assert overlaps(fig) == ['"the figure\'s title" overlaps "the axes\' title"'] or overlaps(fig) == [
        '"the axes\' title" overlaps "the figure\'s title"']
    plt.close(fig)


def test_a_legend_on_the_data_is_found():
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.plot([0, 1], [1, 1], label="across the top")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="upper center")
    assert legend_on_data(fig)
    ax.legend(loc="lower center")
    assert legend_on_data(fig) == []
    plt.close(fig)


def test_spread_moves_annotations_apart():
    fig, ax = plt.subplots(figsize=(3, 3))
    notes = [ax.annotate(f"point {i}", (0.5, 0.5), xytext=(3, 3), textcoords="offset points") for i in range(3)]
    assert overlaps(fig)
    spread(fig, notes)
    assert overlaps(fig) == []
    plt.close(fig)
