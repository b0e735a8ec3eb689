"""Smart-grid case study: heat-pump households with fractional actuation delay on a real LV grid.

Foundations (issue 10): physically grounded heterogeneous households (:mod:`.household`), real
profiles and weather (:mod:`.profiles`, shipped extract under ODbL), stochastic occupancy
(:mod:`.occupancy`), fleet operation and identification data (:mod:`.operation`), the SimBench
LV grid with pandapower (:mod:`.grid`), Dask sweeps (:mod:`.sweep`), the scenario configuration
(:mod:`.config`), the two attacks on shared statistics (:mod:`.reconstruction`,
:mod:`.occupancy_attack`) and their study plain vs privatized (:mod:`.attack_windows`;
:mod:`.attack_study`, like :mod:`.report`, is a study module with a command, not re-exported).
pandapower/simbench, Dask and scikit-learn are imported only when used.
"""

from simulations.smartgrid.attack_windows import (
    AttackWindow,
    attack_window,
    reconstruction_privacy_study,
)
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.grid import GridResult, LVGrid
from simulations.smartgrid.household import (
    DISTURBANCES,
    Household,
    HouseholdParameters,
    draw_households,
    heat_pump_cop,
    supply_temperature,
)
from simulations.smartgrid.occupancy import (
    Occupancy,
    base_load,
    internal_gains,
    simulate_occupancy,
)
from simulations.smartgrid.occupancy_attack import (
    OccupancyAttackResult,
    daily_statistics,
    occupancy_attack,
    statistics_features,
)
from simulations.smartgrid.operation import FleetRecord, simulate_fleet
from simulations.smartgrid.profiles import ProfileData, load_profiles
from simulations.smartgrid.reconstruction import (
    GramBlocks,
    ReconstructionResult,
    free_dimensions,
    gram_blocks,
    reconstruct_trajectory,
    relative_error,
)
from simulations.smartgrid.sweep import SweepResult, parameter_grid, run_sweep, task_rng

__all__ = [
    "AttackWindow",
    "DISTURBANCES",
    "FleetRecord",
    "GramBlocks",
    "GridResult",
    "Household",
    "HouseholdParameters",
    "LVGrid",
    "Occupancy",
    "OccupancyAttackResult",
    "ProfileData",
    "ReconstructionResult",
    "ScenarioConfig",
    "SweepResult",
    "attack_window",
    "base_load",
    "daily_statistics",
    "draw_households",
    "free_dimensions",
    "gram_blocks",
    "heat_pump_cop",
    "internal_gains",
    "load_profiles",
    "occupancy_attack",
    "parameter_grid",
    "reconstruct_trajectory",
    "reconstruction_privacy_study",
    "relative_error",
    "run_sweep",
    "simulate_fleet",
    "simulate_occupancy",
    "statistics_features",
    "supply_temperature",
    "task_rng",
]
