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
    identify.add_argument("--method", choices=("auto", "gram", "qr"), default="auto",
                          help="regression solver: normal equations, refined or redone with QR "
                               "when ill-conditioned (auto), normal equations only (gram), or "
                               "backward-stable tall-skinny QR (qr)")
    identify.add_argument("--estimator", choices=("ls", "iv", "huber"), default="ls",
                          help="least squares, instrumental variables (noisy states) or Huber "
                               "(heavy-tailed noise)")
    identify.add_argument("--level", type=float, default=0.95,
                          help="confidence level of the printed intervals")
    identify.add_argument("--detrend", choices=("none", "constant", "linear"), default="none",
                          help="remove each experiment's mean or linear trend from states and "
                               "inputs first (sensor offset, non-zero operating point); the "
                               "model is then in deviations (default: none)")
    identify.add_argument("--significance", type=float,
                          help="family-wise level of the test that decides which input blocks "
                               "act, and of the bound selection with --max-delay auto "
                               "(default: 0.001; with --block-rtol only beside auto)")
    identify.add_argument("--block-rtol", type=float, default=None,
                          help="override the test: an input block acts iff its norm exceeds "
                               "this fraction of the channel's largest (default: the test)")
    identify.add_argument("--out", default="model.json", help="model file (.json or .npz)")
    identify.set_defaults(handler=_run_identify)
    return identify


def _load_data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    from simulations.data_files import load_identification_data

    return load_identification_data(args.data, states=args.states, inputs=args.inputs)


def _run_identify(args: argparse.Namespace) -> int:
    import warnings

    from dmdidc import DMDidc, check_excitation

    # DMDidc refuses --significance beside --block-rtol where it would change nothing
    test = {"significance": args.significance, "block_rtol": args.block_rtol}
    output_path(args.out, folder=False)
    X, U = _load_data(args)
    estimator = DMDidc(max_delay=args.max_delay, method=args.method, estimator=args.estimator,
                       detrend=None if args.detrend == "none" else args.detrend, **test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, U, dt=args.dt)
    model = estimator.model_
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    path = model.save(args.out)
    np.set_printoptions(precision=6, suppress=True)
    print(check_excitation(X, U, estimator.max_delay_))
    regression = estimator.regression_
    print(f"regression: rank {regression.rank}, condition number "
          f"{regression.condition_number:.3g}, relative residual "
          f"{regression.relative_residual:.2g}")
    print(estimator.block_test_.summary())
    if estimator.state_trend_ is not None:
        print(f"removed ({args.detrend}) mean state {estimator.state_trend_[:, :, 0].mean(0)}, "
              f"mean input {estimator.input_trend_[:, :, 0].mean(0)}: the model is in "
              f"deviations from the operating point")
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
    for warning in caught:
        print(f"dmdidc identify: warning: {warning.message}", file=sys.stderr)
    print(f"wrote {path}")
    return 0

