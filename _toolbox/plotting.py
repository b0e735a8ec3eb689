"""Figures without pyplot: the one way this toolbox makes and writes a PNG.

Library code never calls ``matplotlib.use`` or touches pyplot's global figure list, so plotting
from the toolbox leaves the caller's backend and open figures alone (a Jupyter session keeps its
inline backend).  A :class:`~matplotlib.figure.Figure` gets its own Agg canvas and is freed by the
garbage collector once it is written.  It lives in the neutral base package because every
package plots: ``controllers.analysis``, the studies and case studies in ``simulations``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["new_figure", "save_figure"]


def new_figure(figsize: tuple[float, float] = (6.0, 4.5)) -> Any:
    """A matplotlib ``Figure`` drawn by its own Agg canvas (no pyplot state, no backend switch).

    Parameters
    ----------
    figsize : (float, float), default (6.0, 4.5)
        Width and height in inches.

    Returns
    -------
    matplotlib.figure.Figure
        Add axes with ``fig.add_subplot(...)`` or ``fig.subplots(...)``.

    Examples
    --------
    >>> import matplotlib
    >>> backend = matplotlib.get_backend()
    >>> fig = new_figure((4, 3))
    >>> ax = fig.add_subplot()
    >>> matplotlib.get_backend() == backend
    True
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Any, path: str | Path, *, dpi: int = 120) -> Path:
    """Lay out ``fig`` and write it to ``path`` (PNG), creating the parent folders.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Typically from :func:`new_figure`.
    path : str or Path
        Output file; the format follows the suffix (``.png`` throughout the toolbox).
    dpi : int, default 120
        Resolution.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> fig = new_figure((4, 3))
    >>> _ = fig.add_subplot().plot([0, 1], [1, 0])
    >>> save_figure(fig, Path(tempfile.mkdtemp()) / "sub" / "line.png").stat().st_size > 0
    True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path
