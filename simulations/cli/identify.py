"""``dmdidc identify``: identify a delayed plant from X, U data (``.npz`` or CSV files) and write
the model file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from simulations.cli.common import _seed, output_path

__all__ = ["add_identify_parser"]


def _max_delay(text: str) -> int | None:
    """``--max-delay``: an integer >= 0 or ``auto`` (None: chosen from the data)."""
    if text == "auto":
        return None
    return _seed(text)               # an integer >= 0



def add_identify_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``identify`` on the ``add_subparsers`` object of the root command."""
    identify = sub.add_parser("identify", help="identify a delayed plant from X, U data")
    identify.add_argument("data", nargs="?", help=".npz file with arrays X (n, K+1) and U (m, K)")
    identify.add_argument("--states", help="CSV of states, one row per sample (K+1 rows)")
    identify.add_argument("--inputs", help="CSV of inputs, one row per sample (K rows)")
    identify.add_argument("--dt", type=float, required=True, help="sampling period T (seconds)")
    identify.add_argument("--max-delay", type=_max_delay, required=True,
                          help="delay bound R in sampling periods, or 'auto' (chosen from the "
                               "data by an information criterion)")
    identify.add_argument("--estimator", choices=("auto", "ls", "iv", "huber", "huber_iv"),
                          default="auto",
                          help="auto: instrumental variables with refined instruments "
                               "(consistent under measurement noise; robust when the residuals "
                               "show outliers); ls: least squares; iv; huber: robust least "
                               "squares; huber_iv: robust instrumental variables")
    identify.add_argument("--method", choices=("auto", "gram", "qr"), default="auto",
                          help="least-squares solver (--estimator ls only): normal equations, "
                               "refined or redone with QR when ill-conditioned (auto), normal "
                               "equations only (gram), or backward-stable tall-skinny QR (qr)")
    identify.add_argument("--level", type=float, default=0.95,
                          help="confidence level of the printed intervals")
    identify.add_argument("--detrend", choices=("auto", "none", "constant", "linear"),
                          default="auto",
                          help="auto: keep an affine term (the operating point) when the data "
                               "show an offset; none: through the origin; constant / linear: "
                               "remove each experiment's mean or line first")
    identify.add_argument("--reference",
                          help="closed-loop data: CSV of the reference or dither that excites "
                               "the loop, one row per sample (K rows); it drives the "
                               "instruments so feedback does not bias the fit")
    identify.add_argument("--check-level", type=float, default=0.01,
                          help="family-wise false-alarm probability of the fit's validation "
                               "checks on well-posed data")
    identify.add_argument("--residuals", metavar="PNG",
                          help="write the residual-analysis figure (whiteness, residual-input "
                               "and residual-signal correlations) to this PNG")
    identify.add_argument("--significance", type=float,
                          help="family-wise level of the test that decides which input blocks "
                               "act, and of the bound selection with --max-delay auto "
                               "(default: 0.001; with --block-rtol only beside auto)")
    identify.add_argument("--block-rtol", type=float, default=None,
                          help="override the test: an input block acts iff its norm exceeds "
                               "this fraction of the channel's largest (default: the test)")
    identify.add_argument("--svd-rank", type=int, default=None, metavar="R",
                          help="identify in the leading R POD modes of the states (many "
                               "sensors of a few modes); the model file is in those coordinates")
    identify.add_argument("--out", default="model.json", help="model file (.json or .npz)")
    identify.set_defaults(handler=_run_identify)
    return identify


def _load_data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    from simulations.data_files import load_identification_data

    return load_identification_data(args.data, states=args.states, inputs=args.inputs)


def _load_reference(path: str, samples: int) -> np.ndarray:
    """The reference CSV as (q, K), one row per sample in the file."""
    from simulations.data_files import read_samples_csv

    reference = read_samples_csv(path).T
    if reference.shape[1] != samples:
        from _toolbox.errors import DimensionError

        raise DimensionError(f"--reference {path!r} has {reference.shape[1]} rows; expected "
                             f"{samples} (one per input sample)")
    return reference


def _run_identify(args: argparse.Namespace) -> int:
    import warnings

    from dmdidc import DMDidc, check_excitation

    # DMDidc refuses --significance beside --block-rtol where it would change nothing
    test = {"significance": args.significance, "block_rtol": args.block_rtol}
    output_path(args.out, folder=False)
    if args.residuals is not None:
        output_path(args.residuals, folder=False)
    X, U = _load_data(args)
    reference = None if args.reference is None else _load_reference(args.reference, U.shape[1])
    estimator = DMDidc(max_delay=args.max_delay, method=args.method, estimator=args.estimator,
                       detrend=None if args.detrend == "none" else args.detrend,
                       check_level=args.check_level, svd_rank=args.svd_rank, **test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, U, dt=args.dt, reference=reference)
    model = estimator.model_
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    path = model.save(args.out)
    np.set_printoptions(precision=6, suppress=True)
    print(check_excitation(X, U, estimator.max_delay_))
    regression = estimator.regression_
    print(f"regression ({regression.estimator}): rank {regression.rank}, condition number "
          f"{regression.condition_number:.3g}, relative residual "
          f"{regression.relative_residual:.2g}")
    print(estimator.block_test_.summary())
    if estimator.state_trend_ is not None:
        print(f"removed ({args.detrend}) mean state {estimator.state_trend_[:, :, 0].mean(0)}, "
              f"mean input {estimator.input_trend_[:, :, 0].mean(0)}: the model is in "
              f"deviations from the operating point")
    if model.operating_point is not None:
        print(f"operating point: x_op = {model.operating_point.state}, u_op = "
              f"{model.operating_point.input} (the model works in deviations from it)")
    print(f"A_d =\n{model.A_d}")
    print(f"whole delay [periods] = {model.delay_steps}  (first active input block)")
    if estimator.delay_bound_ is not None:
        print(estimator.delay_bound_.summary())
    if model.has_continuous:
        print(f"delay [s] = {model.delay}  (fraction {model.delay_fraction})")
        print(f"A_c =\n{model.A_c}\nB_c =\n{model.B_c}")
        print(estimator.confidence_intervals(args.level).summary())
    else:
        print(f"no continuous model: {model.continuous_note}")
    print(estimator.diagnostics_.summary())
    if args.residuals is not None:
        estimator.diagnostics_.plot(args.residuals)
        print(f"wrote {args.residuals}")
    for warning in caught:
        print(f"dmdidc identify: warning: {warning.message}", file=sys.stderr)
    print(f"wrote {path}")
    return 0
