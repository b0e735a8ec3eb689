"""The value of one validation check, and the warning a failed check raises.

Every fit validates itself (:mod:`dmdidc.inference.diagnostics`): a :class:`Check` records the
question asked of the data, the statistic, the threshold it was compared with, what was found and,
for a failed check, the remedy.  A failed check is issued as a :class:`DiagnosticWarning` whose
message names all four, so a model is never handed on in silence when the data break the method's
assumptions.  A remedy names the options that cure it as Python code, ``name=value``
(``detrend='constant'``, ``fit(..., reference=r)``) or, for a name with an underscore, bare
(``raise max_delay``): the command line restates those forms as its flags
(:mod:`simulations.cli.terms`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from dmdidc.errors import DiagnosticWarning
from dmdidc.inference.blocks import BlockTest

__all__ = ["Check", "DiagnosticWarning", "FitDiagnostics", "STATISTICAL_CHECKS",
           "unexplained_blocks"]

#: Statistical checks that share a fit's ``check_level`` (Bonferroni): offset, the five residual
#: checks, least squares against instrumental variables, linearity and time invariance.
STATISTICAL_CHECKS = 9


@dataclass(frozen=True)
class Check:
    """Outcome of one validation check of a fit.

    Attributes
    ----------
    name : str
        Short identifier, e.g. ``"feedback"`` (stable: code may select checks by it).
    question : str
        What the check asks of the data.
    passed : bool or None
        ``True`` passed, ``False`` failed (a :class:`DiagnosticWarning` was issued), ``None``
        not applicable (``finding`` says why).
    statistic : float
        The test statistic (``nan`` when not applicable).
    threshold : float
        The value the statistic was compared with: failed above it, or at or below it with
        ``fails_below``.  Both are the numbers the finding states.
    finding : str
        What was found, with the numbers.
    remedy : str
        What to do when the check fails (empty when it passed).
    fails_below : bool, default False
        The threshold is a minimum (``effect``: the largest ``T^2``; ``excitation``: the
        smallest relative eigenvalue; ``instrument_strength``: the first-stage F), shown as
        ``min`` in the table; otherwise a maximum (``max``).
    """

    name: str
    question: str
    passed: bool | None
    statistic: float = math.nan
    threshold: float = math.nan
    finding: str = ""
    remedy: str = ""
    fails_below: bool = False

    @property
    def failed(self) -> bool:
        """Whether the check failed."""
        return self.passed is False

    def message(self) -> str:
        """The warning text: check, statistic against threshold, finding and remedy."""
        # most checks fail above their threshold; `effect` fails when no statistic reaches it
        relation = ">" if self.statistic > self.threshold else "<="
        numbers = (f" (statistic {self.statistic:.3g} {relation} threshold {self.threshold:.3g})"
                   if math.isfinite(self.statistic) and math.isfinite(self.threshold) else "")
        remedy = f" Remedy: {self.remedy}" if self.remedy else ""
        return f"check '{self.name}' failed{numbers}: {self.finding}.{remedy}"

    @property
    def beyond(self) -> bool:
        """Whether the statistic lies on the failing side of its threshold (``False`` when
        either is not a number).  A passed check beyond it found something it handles (an
        offset removed, the IV fit kept): its row's status is ``note``."""
        if not (math.isfinite(self.statistic) and math.isfinite(self.threshold)):
            return False
        return (self.statistic <= self.threshold if self.fails_below
                else self.statistic > self.threshold)

    @property
    def status(self) -> str:
        """The word of the check's row in the summary table: ``"pass"``, ``"note"`` (passed,
        but the statistic lies beyond its threshold: something found and handled, see
        :attr:`beyond`), ``"FAIL"`` or ``"n/a"`` (not applicable)."""
        return {True: "note" if self.beyond else "pass", False: "FAIL",
                None: "n/a"}[self.passed]

    def row(self) -> str:
        """One line of :meth:`dmdidc.diagnostics.FitDiagnostics.summary`."""
        status = self.status
        limit = "min" if self.fails_below else "max"
        numbers = (f"{self.statistic:9.3g} / {limit} {self.threshold:<9.3g}"
                   if math.isfinite(self.statistic) and math.isfinite(self.threshold)
                   else f"{'':9s}   {'':13s}")
        return f"  {status:4s}  {self.name:24s} {numbers}  {self.finding}"


@dataclass(frozen=True)
class FitDiagnostics:
    """Every validation check of one fit, stored on the estimator as ``diagnostics_``.

    Attributes
    ----------
    checks : tuple of Check
        In a fixed order (see :mod:`dmdidc.inference.diagnostics`); select one with
        ``diagnostics[name]``.
    estimator : str
        The estimator that produced the model (``"ls"``, ``"iv"``, ``"huber"``,
        ``"huber_iv"``): the choice of ``estimator="auto"`` once resolved.
    instruments : str or None
        The instruments of an instrumental-variable fit (``"model"``: refined, simulated from a
        first-stage model; ``"inputs"``, ``"states"``, ``"exogenous"``), else ``None``.
    level : float
        Family-wise false-alarm probability of the statistical checks on well-posed data.
    notes : tuple of str
        What the fit decided on its own (estimator, instruments, offset, outliers), one line
        each.
    analysis : ResidualAnalysis or None
        The standardized residual correlations behind the residual checks (``None`` for fits
        from statistics), for :meth:`plot`.
    """

    checks: tuple[Check, ...]
    estimator: str
    instruments: str | None
    level: float
    notes: tuple[str, ...] = ()
    analysis: Any = field(default=None, repr=False)

    def __getitem__(self, name: str) -> Check:
        if not isinstance(name, str):
            raise TypeError(f"diagnostics are selected by check name (a str), got "
                            f"{type(name).__name__} {name!r}; iterate them, or use .checks")
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check named {name!r}; checks: {[c.name for c in self.checks]}")

    def __iter__(self) -> Iterator[Check]:
        """The checks, in order (``list(diagnostics)``, ``for check in diagnostics``)."""
        return iter(self.checks)

    def __contains__(self, name: object) -> bool:
        """Whether a check of that name was run (``"precision" in diagnostics``)."""
        return any(check.name == name for check in self.checks)

    @property
    def failed(self) -> tuple[Check, ...]:
        """The checks that failed (each issued a :class:`DiagnosticWarning`)."""
        return tuple(c for c in self.checks if c.failed)

    @property
    def passed(self) -> bool:
        """Whether no check failed."""
        return not self.failed

    def summary(self) -> str:
        """A table: status, check, statistic / limit (``max`` or ``min``, the threshold and
        which side of it fails), finding; then the remedies."""
        lines = [f"fit diagnostics ({self.estimator}"
                 f"{'' if self.instruments is None else ', instruments ' + self.instruments}; "
                 f"statistical checks at family-wise level {self.level:g}):"]
        lines += [f"  note: {note}" for note in self.notes]
        lines.append(f"  {'':4s}  {'check':24s} {'statistic':>9s} / limit (fails above max, "
                     f"below min; note: past it, handled)")
        lines += [check.row() for check in self.checks]
        for check in self.failed:
            lines.append(f"  remedy ({check.name}): {check.remedy}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def plot(self, path: str | Path | None = None) -> Any:
        """Residual analysis figure (as MATLAB's ``resid``): residual autocorrelation and
        residual-input cross-correlation, standardized, with the checks' thresholds.

        Parameters
        ----------
        path : str or Path, optional
            Write a PNG there.

        Returns
        -------
        matplotlib.figure.Figure

        Raises
        ------
        ValueError
            No residual series (a fit from statistics).
        """
        from _toolbox.plotting import new_figure, save_figure

        a = self.analysis
        if a is None:
            raise ValueError("no residual analysis: fits from statistics have no residual "
                             "series; fit the data to get the figure")
        fig = new_figure((9.0, 6.5))
        ax_white, ax_input, ax_state = fig.subplots(3, 1)
        lags = a.lags
        positive = lags >= 0
        share = self.level / STATISTICAL_CHECKS          # each check's level

        def band(count: int) -> float:      # Bonferroni over the plotted correlations
            return float(special.ndtri(1.0 - share / (2.0 * count)))

        for i in range(a.whiteness_z.shape[1]):
            ax_white.plot(lags[positive][1:], a.whiteness_z[1:, i], "o-", ms=3,
                          label=f"residual {i}")
        level = band(a.whiteness_z[2:].size)
        ax_white.axhspan(-level, level, color="0.9", zorder=0)
        ax_white.axvspan(0.5, 1.5, color="0.95", zorder=0)
        ax_white.set(title="Whiteness: residual autocorrelation (lag 1 may reflect "
                           "measurement noise)", xlabel="lag (samples)",
                     ylabel="standard deviations")
        ax_white.legend(fontsize=7, ncol=4)
        cross = a.input_z.reshape(lags.size, -1)
        level = band(cross.size)
        n, m = a.input_z.shape[1:]
        for k in range(cross.shape[1]):
            ax_input.plot(lags, cross[:, k], ".-", ms=3, label=f"e{k // m}, u{k % m}")
        ax_input.axhspan(-level, level, color="0.9", zorder=0)
        ax_input.axvline(0, color="0.5", lw=0.8)
        ax_input.axvspan(-0.5, a.max_delay + 0.5, color="0.95", zorder=0)
        ax_input.set(title="Residual-input correlation (negative lags: feedback; shaded: "
                           "lags 0..max_delay)", xlabel="lag (samples; input earlier > 0)",
                     ylabel="standard deviations")
        ax_input.legend(fontsize=7, ncol=min(n * m, 6))
        if a.whiteness_z.shape[1] ** 2 <= 400:       # one filter per signal and residual
            states = a.state_z[1:].reshape(a.state_z.shape[0] - 1, -1)
            level = band(states.size)
            ax_state.plot(np.arange(1, a.state_z.shape[0]), states, ".-", ms=3)
            ax_state.axhspan(-level, level, color="0.9", zorder=0)
        else:
            ax_state.text(0.5, 0.5, "not drawn: too many signals", ha="center",
                          transform=ax_state.transAxes)
        ax_state.set(title="Residuals against past signals (full state: within the band)",
                     xlabel="lag (samples)", ylabel="standard deviations")
        if path is not None:
            save_figure(fig, path)
        return fig


def unexplained_blocks(test: BlockTest, model: Any) -> Check:
    """``unexplained_block``: does the recovered delay explain every block the test found
    significant?

    The recovery chooses, per channel, the pair of blocks whose structure explains the blocks
    best (:func:`~dmdidc.inference.recovery.recover_channel`), and the model acts through that
    pair only.  A block ``B^(j)`` with ``j <= w + 1`` (later ones are the ``block_structure``
    check's) that the test found significant but the model sets to zero is an effect of the
    input the model discards: the residual is the block itself, with the test's ``T^2``
    above its critical value.  The point delay then stands on a block structure the data
    contradict (a delay 1.891 T read as 2.00 T with the significant ``B^(1)``, ``T^2 = 38``,
    set to zero).  Blocks the model keeps are not judged here: their residual also carries
    the error of the estimated ``A_c``, which the block's covariance leaves out.

    "Significant" is :attr:`BlockTest.significant <dmdidc.inference.blocks.BlockTest.
    significant>`, the one definition of an active block that the delay recovery uses too
    (``test.active`` is that array by default).  Under the ``block_rtol`` override the
    recovery follows the override, and this check still looks at significance on purpose: it
    judges the override against the data.  At ``block_rtol=0.8`` on 12 random white-input
    plants (3 states, 2 inputs, 3000 samples, 35 dB) 7 fits had wrong delays; this check
    failed on exactly those 7, naming the override in its remedy.

    Parameters
    ----------
    test : BlockTest
    model : DelayedPlant
        The identified model (its :attr:`~dmdidc.DelayedPlant.active_blocks`).

    Returns
    -------
    Check

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 400, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(401)
    >>> est = DMDidc(max_delay=3).fit(X, U, dt=1.0)
    >>> unexplained_blocks(est.block_test_, est.model_).passed
    True
    >>> later = DelayedPlant.from_continuous(est.A_c, est.B_c, [2.0], 1.0, max_delay=3)
    >>> unexplained_blocks(est.block_test_, later).passed            # B^(1) set to zero
    False
    """
    question = "Does the recovered delay explain every block the test found significant?"
    R1 = test.active.shape[0]
    first = test.first_active
    discarded = (test.significant & ~np.asarray(model.active_blocks)
                 & (np.arange(R1)[:, None] <= first[None, :] + 1))
    if not discarded.any():
        return Check("unexplained_block", question, True,
                     finding="the model keeps every significant block up to w + 1")
    statistics = np.where(discarded, test.statistics, 0.0)
    T = model.dt
    listed = "; ".join(
        f"channel {i}: B^({j}) (T^2 = {test.statistics[j, i]:.3g}) is zero in the model of "
        f"delay {model.delay[i] / T:.3g} T, which acts through the blocks "
        f"{np.flatnonzero(model.active_blocks[:, i]).tolist()}"
        for j, i in zip(*np.nonzero(discarded), strict=True))
    remedy = ("excite the channel(s) more strongly or record longer data, so that the blocks "
              "fit one delay; until then use method='bootstrap' intervals (which refit the "
              "block decision on resampled experiments) rather than the asymptotic ones, or the "
              "discrete model (its blocks)")
    if test.rule == "block_rtol":       # the override, not the data, discarded the blocks
        remedy = ("lower block_rtol, or leave it unset (None) so that the blocks are decided "
                  "by their significance (the test)")
    return Check(
        "unexplained_block", question, False, float(statistics.max()), test.critical_value,
        f"the recovered delay leaves significant input blocks unexplained ({listed}): the "
        f"model discards an effect of the input the data show, so its delay stands on a block "
        f"structure the data contradict", remedy)
