"""Dynamic Mode Decomposition with input-delayed control (DMDidc)."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from dmdidc.blocks import BlockTest, block_test
from dmdidc.discretization import delay_blocks, first_active_blocks, split_delay, zoh_matrices
from dmdidc.errors import (
    ContinuousModelWarning,
    DimensionError,
    InconsistentModelError,
    InsufficientExcitationError,
    LogarithmError,
    NonFiniteError,
    NotFittedError,
    ParameterError,
    ToolboxError,
)
from dmdidc.estimator import ESTIMATORS, DMDidc
from dmdidc.excitation import ExcitationReport, check_excitation, random_excitation, samples_needed
from dmdidc.federated import combine_statistics
from dmdidc.federated_identification import FederatedIdentification
from dmdidc.intervals import ConfidenceIntervals, IntervalEstimate
from dmdidc.model import FORMAT_VERSION, DelayedPlant, as_plant
from dmdidc.privatization import PrivacyRelease
from dmdidc.recovery import recover_continuous
from dmdidc.regression import RegressionSolution
from dmdidc.selection import DelayBoundSelection
from dmdidc.sensitivity import StatisticsSensitivity
from dmdidc.statistics import StatisticsLayout, SufficientStatistics

try:
    __version__ = _version("dmdidc")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "BlockTest",
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
