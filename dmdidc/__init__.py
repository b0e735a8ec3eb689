"""Dynamic Mode Decomposition with input-delayed control (DMDidc).

The package follows the data path: the delayed-plant model type (:mod:`dmdidc.model`) and its
exact discretization (:mod:`dmdidc.discretization`); the regression on lagged data
(:mod:`dmdidc.regression`: least squares, instrumental variables, Huber); what the regression
says about the plant (:mod:`dmdidc.inference`: block tests, delay bound, continuous model,
intervals, diagnostics); the sufficient statistics that add up (:mod:`dmdidc.statistics`), their
private release (:mod:`dmdidc.private`) and federated combination (:mod:`dmdidc.federated`); and
the estimator that ties them together (:mod:`dmdidc.estimator`).  Around them, the
practitioner's workflow: identification data with names, units, experiments and missing samples
(:mod:`dmdidc.data`), validation on data (:mod:`dmdidc.evaluation`: ``compare``, ``resid``), and
models that carry their signal names, intervals and provenance (:mod:`dmdidc.info`).

The names below are imported on first use (PEP 562): ``import dmdidc`` loads the errors only.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from _toolbox.lazy import lazy_exports
from dmdidc.errors import *  # noqa: F403  (the errors, loaded at once)
from dmdidc.errors import __all__ as _errors

try:
    __version__ = _version("dmdidc")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "dmdidc.data": ["IdData", "read_data"],
    "dmdidc.discretization": ["delay_blocks", "first_active_blocks", "split_delay",
                              "zoh_matrices"],
    "dmdidc.estimator": ["ESTIMATORS", "DMDidc"],
    "dmdidc.online": ["OnlineDMDidc", "ChangeEvent", "BoundEvent", "Outlier"],
    "dmdidc.follow": ["Chunk", "Snapshot", "StreamWarning", "follow_csv", "track"],
    "dmdidc.evaluation": ["Comparison", "ResidualCorrelation", "compare", "resid"],
    "dmdidc.excitation": ["ExcitationReport", "check_excitation", "random_excitation",
                          "samples_needed"],
    "dmdidc.federated.combine": ["combine_statistics"],
    "dmdidc.federated.identification": ["FederatedIdentification"],
    "dmdidc.inference.blocks": ["BlockTest", "block_test"],
    "dmdidc.inference.checks": ["Check", "FitDiagnostics"],
    "dmdidc.inference.intervals": ["ConfidenceIntervals", "IntervalEstimate"],
    "dmdidc.inference.recovery": ["recover_continuous"],
    "dmdidc.inference.selection": ["DelayBoundSelection"],
    "dmdidc.info": ["ModelInfo", "SensorMap"],
    "dmdidc.missing": ["MissingReport"],
    "dmdidc.model": ["FORMAT_VERSION", "DelayedPlant", "OperatingPoint", "as_plant"],
    "dmdidc.output.estimator": ["OutputDMDidc"],
    "dmdidc.private.release": ["PrivacyRelease"],
    "dmdidc.private.sensitivity": ["StatisticsSensitivity"],
    "dmdidc.regression.solution": ["RegressionSolution"],
    "dmdidc.statistics.layout": ["StatisticsLayout"],
    "dmdidc.statistics.statistics": ["SufficientStatistics"],
}, eager=_errors, submodules=True)
