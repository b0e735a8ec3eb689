"""Smart-grid case study: heat-pump households with fractional actuation delay on a real LV grid.

Foundations (issue 10): physically grounded heterogeneous households (:mod:`.household`), real
profiles and weather (:mod:`.profiles`, shipped extract under ODbL), stochastic occupancy
(:mod:`.occupancy`), fleet operation and identification data (:mod:`.operation`), the SimBench
LV grid with pandapower (:mod:`.grid`), Dask sweeps (:mod:`.sweep`) and the fleet privacy-utility
sweep on them (:mod:`.study_sweep`), the scenario configuration (:mod:`.config`), the two attacks
on shared statistics (:mod:`.reconstruction`, :mod:`.occupancy_attack`) and their study plain vs
privatized (:mod:`.attack_windows`; :mod:`.attack_study`, like :mod:`.report`, is a study module
behind a command, ``dmdidc smartgrid attacks`` / ``report``, not re-exported).  The case study
(:mod:`.case_study`): private federated identification of the fleet
(:mod:`.private_identification`), delay-aware demand response on the true fleet
(:mod:`.tracking`, :mod:`.fleet_mpc`, :mod:`.demand_response`).  pandapower/simbench, Dask,
scikit-learn and cvxpy are imported only when used.
"""

from _toolbox.lazy import lazy_attributes
from simulations.smartgrid.attack_windows import (
    AttackWindow,
    attack_window,
    reconstruction_privacy_study,
)
from simulations.smartgrid.case_study import privacy_utility_curve, run_case_study
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.demand_response import (
    ControlOutcome,
    DemandResponseResult,
    run_demand_response,
)
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
from simulations.smartgrid.private_identification import (
    BudgetExceededError,
    FleetIdentification,
    HouseholdGuarantee,
    SharingBounds,
    aggregate_statistics,
    household_statistics,
    identify_fleet,
    privatize_household,
)
from simulations.smartgrid.profiles import ProfileData, load_profiles
from simulations.smartgrid.reconstruction import (
    GramBlocks,
    ReconstructionResult,
    free_dimensions,
    gram_blocks,
    reconstruct_trajectory,
    relative_error,
)
from simulations.smartgrid.study_sweep import (
    fleet_identification_task,
    fleet_statistics,
    plot_study,
    study_grid,
    summarize_study,
)
from simulations.smartgrid.sweep import SweepResult, parameter_grid, run_sweep, task_rng
from simulations.smartgrid.tracking import DisturbanceObserver, FleetTracker, GridSignal

# cvxpy (the MPC's reference DelayedMPC) is imported on first use
__getattr__, __dir__ = lazy_attributes(
    __name__, {"FleetMPC": "simulations.smartgrid.fleet_mpc"}, globals())

__all__ = [
    "AttackWindow",
    "DISTURBANCES",
    "BudgetExceededError",
    "ControlOutcome",
    "DemandResponseResult",
    "DisturbanceObserver",
    "FleetIdentification",
    "FleetMPC",
    "FleetTracker",
    "GridSignal",
    "HouseholdGuarantee",
    "SharingBounds",
    "aggregate_statistics",
    "household_statistics",
    "identify_fleet",
    "privacy_utility_curve",
    "privatize_household",
    "run_case_study",
    "run_demand_response",
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
    "fleet_identification_task",
    "fleet_statistics",
    "free_dimensions",
    "gram_blocks",
    "heat_pump_cop",
    "internal_gains",
    "load_profiles",
    "occupancy_attack",
    "parameter_grid",
    "plot_study",
    "reconstruct_trajectory",
    "reconstruction_privacy_study",
    "relative_error",
    "run_sweep",
    "simulate_fleet",
    "simulate_occupancy",
    "statistics_features",
    "study_grid",
    "summarize_study",
    "supply_temperature",
    "task_rng",
]
