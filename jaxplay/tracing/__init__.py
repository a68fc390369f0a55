"""The tracing page: one function at every stage, what tracers are, recompiles and loops.

A function staged for abstract arguments (``_inputs``) through jaxpr, StableHLO and optimized HLO
(``_staging``), with every text line tied to its Python line (``_locations``), its equations as
data (``_jaxpr_tree``) and as a graph (``_graph``), its ``jit``/``grad``/``vmap`` variants
(``_variants``) and diffs (``_display``); a visitor's own function staged in the sandbox
(``_sandboxed``); the functions the page offers (``_presets``); and tracers, their pitfalls,
recompilations and loops (``_tracers``).
"""

from jaxplay.article import simple_function as simple_function

from ._display import HIGHLIGHT as HIGHLIGHT
from ._display import MAX_DIFF_LINES as MAX_DIFF_LINES
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
from ._inputs import MAX_ELEMENTS as MAX_ELEMENTS
from ._inputs import MAX_RANK as MAX_RANK
from ._inputs import PRESET_DTYPES as PRESET_DTYPES
from ._inputs import WEAK_FLOAT32 as WEAK_FLOAT32
from ._inputs import InputSpec as InputSpec
from ._inputs import dtype_label as dtype_label
from ._inputs import parse_shape as parse_shape
from ._jaxpr_tree import Atom as Atom
from ._jaxpr_tree import Block as Block
from ._jaxpr_tree import Eqn as Eqn
from ._jaxpr_tree import SourceRef as SourceRef
from ._locations import stablehlo_line_sources as stablehlo_line_sources
from ._presets import PRESETS as PRESETS
from ._presets import cond_example as cond_example
from ._presets import find_preset as find_preset
from ._presets import preset_ref as preset_ref
from ._presets import preset_source as preset_source
from ._presets import scan_example as scan_example
from ._presets import softmax as softmax
from ._sandboxed import MAX_SANDBOX_TEXT as MAX_SANDBOX_TEXT
from ._sandboxed import SandboxStages as SandboxStages
from ._sandboxed import inspect_stages as inspect_stages
from ._sandboxed import note_text as note_text
from ._sandboxed import sandbox_stages as sandbox_stages
from ._staging import STAGES as STAGES
from ._staging import Staged as Staged
from ._staging import jaxpr_story as jaxpr_story
from ._staging import stage as stage
from ._tracers import LAB_DTYPES as LAB_DTYPES
from ._tracers import LOOPS as LOOPS
from ._tracers import MAX_LAB_CALLS as MAX_LAB_CALLS
from ._tracers import MAX_LAB_ELEMENTS as MAX_LAB_ELEMENTS
from ._tracers import MAX_LOOP_LENGTH as MAX_LOOP_LENGTH
from ._tracers import PITFALLS as PITFALLS
from ._tracers import SCENARIOS as SCENARIOS
from ._tracers import STATIC_VALUES as STATIC_VALUES
from ._tracers import GrowthRow as GrowthRow
from ._tracers import LabCall as LabCall
from ._tracers import LabRun as LabRun
from ._tracers import Pitfall as Pitfall
from ._tracers import TraceView as TraceView
from ._tracers import define_function as define_function
from ._tracers import find_pitfall as find_pitfall
from ._tracers import fix_counter_as_state as fix_counter_as_state
from ._tracers import fori_loop_version as fori_loop_version
from ._tracers import impure_counter as impure_counter
from ._tracers import lab_calls as lab_calls
from ._tracers import loop_growth as loop_growth
from ._tracers import loop_growth_figure as loop_growth_figure
from ._tracers import peek as peek
from ._tracers import print_vs_debug_print as print_vs_debug_print
from ._tracers import python_if_under_jit as python_if_under_jit
from ._tracers import python_loop as python_loop
from ._tracers import run_recompilation_lab as run_recompilation_lab
from ._tracers import scan_version as scan_version
from ._tracers import trace_views as trace_views
from ._variants import VARIANTS as VARIANTS
from ._variants import VMAP_BATCH as VMAP_BATCH
from ._variants import Variant as Variant
from ._variants import choice_label as choice_label
from ._variants import stage_variant as stage_variant
