"""The tracing page: one function at every stage, what tracers are, recompiles and loops.

A function staged for abstract arguments (``_inputs``) through jaxpr, StableHLO and optimized HLO
(``_staging``), with every text line tied to its Python line (``_locations``), its equations as
data (``_jaxpr_tree``) and as a graph (``_graph``), its ``jit``/``grad``/``vmap`` variants
(``_variants``) and diffs (``_display``); a visitor's own function staged in the sandbox
(``_sandboxed``); the functions the page offers (``_presets``); and tracers, their pitfalls,
recompilations and loops (``_tracers``).
"""

from jaxplay.article import simple_function as simple_function

from ._display import diff as diff
from ._display import diff_html as diff_html
from ._display import highlighted as highlighted
from ._display import pane_html as pane_html
from ._display import side_by_side as side_by_side
from ._display import unified_diff as unified_diff
from ._display import without_locations as without_locations
from ._graph import build_graph as build_graph
from ._graph import expandable as expandable
from ._inputs import DTYPES as DTYPES
from ._inputs import MAX_ARGS as MAX_ARGS
from ._inputs import PRESET_DTYPES as PRESET_DTYPES
from ._inputs import InputSpec as InputSpec
from ._inputs import arity_problem as arity_problem
from ._inputs import dtype_label as dtype_label
from ._inputs import parse_shape as parse_shape
from ._presets import PRESETS as PRESETS
from ._presets import find_preset as find_preset
from ._presets import preset_ref as preset_ref
from ._presets import preset_source as preset_source
from ._sandboxed import SandboxStages as SandboxStages
from ._sandboxed import lab_caption as lab_caption
from ._sandboxed import note_text as note_text
from ._sandboxed import preset_stages as preset_stages
from ._sandboxed import sandbox_stages as sandbox_stages
from ._staging import STAGES as STAGES
from ._staging import Staged as Staged
from ._staging import jaxpr_story as jaxpr_story
from ._staging import stage as stage
from ._tracers import LAB_DTYPES as LAB_DTYPES
from ._tracers import MAX_LAB_CALLS as MAX_LAB_CALLS
from ._tracers import PITFALLS as PITFALLS
from ._tracers import SCENARIOS as SCENARIOS
from ._tracers import STATIC_VALUES as STATIC_VALUES
from ._tracers import GrowthRow as GrowthRow
from ._tracers import LabCall as LabCall
from ._tracers import LabRun as LabRun
from ._tracers import TraceView as TraceView
from ._tracers import define_function as define_function
from ._tracers import error_hint as error_hint
from ._tracers import find_pitfall as find_pitfall
from ._tracers import fori_loop_version as fori_loop_version
from ._tracers import lab_calls as lab_calls
from ._tracers import loop_growth as loop_growth
from ._tracers import loop_growth_figure as loop_growth_figure
from ._tracers import peek as peek
from ._tracers import python_loop as python_loop
from ._tracers import run_recompilation_lab as run_recompilation_lab
from ._tracers import scan_version as scan_version
from ._tracers import trace_views as trace_views
from ._variants import VARIANTS as VARIANTS
from ._variants import Variant as Variant
from ._variants import choice_label as choice_label
from ._variants import stage_variant as stage_variant
