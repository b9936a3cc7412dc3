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


def test_slanted_tick_labels_are_compared_as_drawn():
    """Tick labels slanted 20 degrees: the upright boxes around them overlap although the letters stand apart (not a
    finding); crowded into a narrow axes, their own rectangles overlap (a finding)."""
    names = ["No adaptation", "TTRL", "ETMR", "BCS + DAE", "DDRL (BCS + DAE + COR)"]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.set_xticks(range(5), names, rotation=20, ha="right")
    fig.tight_layout()
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    upright = [(i, j) for i in range(5) for j in range(i + 1, 5) if boxes[i].overlaps(boxes[j])]
    assert upright  # what the upright boxes would have called an overlap
    assert overlaps(fig) == []
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(2.0, 3.8))
    ax.set_xticks(range(5), names, rotation=20, ha="right")
    fig.tight_layout()
    assert "'BCS + DAE' overlaps 'DDRL (BCS + DAE + COR)'" in overlaps(fig)
    assert ax.get_xticklabels()[0].get_rotation() == 20  # the check leaves the figure as it was
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


def test_a_legend_outside_the_axes_covers_no_clipped_data():
    """A line that runs off the panel is clipped where it leaves it: a legend above the panel covers none of it, one
    inside over the line does."""
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.plot([0, 0.8, 1], [0.05, 0.05, 5], label="runs off the top")
    ax.set_ylim(0, 1)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0))
    assert legend_on_data(fig) == []
    ax.legend(loc="lower left")
    assert legend_on_data(fig) == ["the legend of '' covers 'runs off the top'"]
    plt.close(fig)


def test_a_guide_across_the_axes_is_not_data():
    """A legend over the zero line (``axhline``) covers no data; over a data line at the same height it does."""
    fig, ax = plt.subplots(figsize=(3, 3))
    ax.plot([0, 1], [-1, -0.5], label="data, low")
    ax.axhline(0, color="grey")
    ax.set_ylim(-1.1, 0.05)
    ax.legend(loc="upper center")
    assert legend_on_data(fig) == []
    ax.plot([0, 1], [0, 0], label="data at zero")
    ax.legend(loc="upper center")
    assert legend_on_data(fig) == ["the legend of '' covers 'data at zero'"]
    plt.close(fig)


def test_spread_moves_annotations_apart():
    fig, ax = plt.subplots(figsize=(3, 3))
    notes = [ax.annotate(f"point {i}", (0.5, 0.5), xytext=(3, 3), textcoords="offset points") for i in range(3)]
    assert overlaps(fig)
    spread(fig, notes)
    assert overlaps(fig) == []
    plt.close(fig)
