"""_toolbox.plotting: figures without pyplot or backend switches."""

import sys

from _toolbox.plotting import new_figure, save_figure


def test_save_figure_writes_the_drawn_png(tmp_path):
    import matplotlib.image

    fig = new_figure((2.0, 1.0))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.add_patch(matplotlib.patches.Rectangle((0, 0), 0.5, 1, color="red"))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    path = save_figure(fig, tmp_path / "a" / "b" / "half.png", dpi=50)
    assert path == tmp_path / "a" / "b" / "half.png"
    image = matplotlib.image.imread(path)
    assert image.shape[:2] == (50, 100)                       # 2 x 1 inches at 50 dpi
    red = (image[25, :, 0] > 0.9) & (image[25, :, 1] < 0.1)    # the middle row
    assert red[20:45].all() and not red[55:].any()


def test_new_figure_leaves_pyplot_alone():
    import matplotlib

    backend = matplotlib.get_backend()
    before = (set(sys.modules["matplotlib.pyplot"].get_fignums())
              if "matplotlib.pyplot" in sys.modules else None)
    fig = new_figure()
    fig.add_subplot().plot([0, 1])
    assert matplotlib.get_backend() == backend
    if before is not None:                 # pyplot was imported by another test: no new figure
        assert set(sys.modules["matplotlib.pyplot"].get_fignums()) == before
