"""A figure's title travels inside its PNG (agentrl_ref/teaching/shared/figure_title.py): the site reads it back
for the figure's alt text and caption, and the picture is untouched."""
import io

import matplotlib
from hypothesis import given, strategies as st

matplotlib.use("Agg")

from agentrl_ref.teaching.shared.figure_title import figure_title, read_title, with_title  # noqa: E402


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=30)
    return buf.getvalue()


def test_figure_title_prefers_the_suptitle_then_the_axes_titles():
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2)
    left.set_title("left one")
    right.set_title("right one")
    assert figure_title(fig) == "left one；right one"
    fig.suptitle("the   whole\nfigure")
    assert figure_title(fig) == "the whole figure"
    plt.close(fig)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=80))
def test_title_round_trips_and_the_png_stays_valid(title):
    from PIL import Image
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    png = _png(fig)
    plt.close(fig)
    titled = with_title(png, title)
    assert read_title(titled) == title
    assert read_title(png) == ""
    before, after = Image.open(io.BytesIO(png)), Image.open(io.BytesIO(titled))
    after.load()  # checks every chunk's CRC
    assert after.info.get("Title") == title
    assert before.tobytes() == after.tobytes()
