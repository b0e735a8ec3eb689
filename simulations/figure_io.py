"""Figures without pyplot state: a fresh ``Figure`` on an Agg canvas, saved as PNG."""

from __future__ import annotations

from pathlib import Path

__all__ = ["new_figure", "save_figure"]


def new_figure(size: tuple[float, float] = (6.5, 4.2)):
    """A ``matplotlib.figure.Figure`` attached to an Agg canvas (no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path: str | Path, *, dpi: int = 110) -> Path:
    """Tight layout, write ``path`` (parent folders created), return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path
