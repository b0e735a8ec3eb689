"""Dynamic Mode Decomposition with input-delayed control (DMDidc).

The package follows the data path: the delayed-plant model type (:mod:`dmdidc.model`) and its
exact discretization (:mod:`dmdidc.discretization`); the regression on lagged data
(:mod:`dmdidc.regression`: least squares, instrumental variables, Huber); what the regression
says about the plant (:mod:`dmdidc.inference`: block tests, delay bound, continuous model,
intervals, diagnostics); the sufficient statistics that add up (:mod:`dmdidc.statistics`), their
private release (:mod:`dmdidc.private`) and federated combination (:mod:`dmdidc.federated`); and
the estimator that ties them together (:mod:`dmdidc.estimator`).

The names below are imported on first use (PEP 562): ``import dmdidc`` loads the errors only.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from _toolbox.lazy import lazy_attributes
from dmdidc.errors import (
    ContinuousModelWarning,
    DiagnosticWarning,
    DimensionError,
    InconsistentModelError,
    InsufficientExcitationError,
    LogarithmError,
    NonFiniteError,
    NotFittedError,
    ParameterError,
    ToolboxError,
)

try:
    __version__ = _version("dmdidc")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

# public name -> module that defines it (imported on first attribute access, PEP 562)
_EXPORTS = {
    "delay_blocks": "dmdidc.discretization",
    "first_active_blocks": "dmdidc.discretization",
    "split_delay": "dmdidc.discretization",
    "zoh_matrices": "dmdidc.discretization",
    "ESTIMATORS": "dmdidc.estimator",
    "DMDidc": "dmdidc.estimator",
    "ExcitationReport": "dmdidc.excitation",
    "check_excitation": "dmdidc.excitation",
    "random_excitation": "dmdidc.excitation",
    "samples_needed": "dmdidc.excitation",
    "combine_statistics": "dmdidc.federated.combine",
    "FederatedIdentification": "dmdidc.federated.identification",
    "BlockTest": "dmdidc.inference.blocks",
    "Check": "dmdidc.inference.checks",
    "FitDiagnostics": "dmdidc.inference.checks",
    "OperatingPoint": "dmdidc.model",
    "block_test": "dmdidc.inference.blocks",
    "ConfidenceIntervals": "dmdidc.inference.intervals",
    "IntervalEstimate": "dmdidc.inference.intervals",
    "recover_continuous": "dmdidc.inference.recovery",
    "DelayBoundSelection": "dmdidc.inference.selection",
    "FORMAT_VERSION": "dmdidc.model",
    "DelayedPlant": "dmdidc.model",
    "as_plant": "dmdidc.model",
    "PrivacyRelease": "dmdidc.private.release",
    "StatisticsSensitivity": "dmdidc.private.sensitivity",
    "RegressionSolution": "dmdidc.regression.solution",
    "StatisticsLayout": "dmdidc.statistics.layout",
    "SufficientStatistics": "dmdidc.statistics.statistics",
}

__all__ = [
    "BlockTest",
    "Check",
    "DiagnosticWarning",
    "FitDiagnostics",
    "OperatingPoint",
    "ConfidenceIntervals",
    "ContinuousModelWarning",
    "DMDidc",
    "DelayBoundSelection",
    "DelayedPlant",
    "ESTIMATORS",
    "ExcitationReport",
    "FORMAT_VERSION",
    "FederatedIdentification",
    "IntervalEstimate",
    "PrivacyRelease",
    "RegressionSolution",
    "StatisticsLayout",
    "StatisticsSensitivity",
    "SufficientStatistics",
    "block_test",
    "check_excitation",
    "combine_statistics",
    "first_active_blocks",
    "random_excitation",
    "recover_continuous",
    "samples_needed",
    "DimensionError",
    "InconsistentModelError",
    "InsufficientExcitationError",
    "LogarithmError",
    "NonFiniteError",
    "NotFittedError",
    "ParameterError",
    "ToolboxError",
    "as_plant",
    "delay_blocks",
    "split_delay",
    "zoh_matrices",
]

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals(), submodules=True)
