"""The jit page: what compiling buys and costs, measured honestly.

Workloads (the article's softmax, an elementwise chain, a tanh layer, a typed formula) with their
limits and size sweep (``_workloads``); two staged measurements per workload, shared by every
visitor (``_measurement`` over ``_shared``), and the code and provenance shown beside them
(``_shown``); what the compiled program is (``_program``) and what its
first call includes (``_first_call``); the article's ``time.time()`` stopwatch beside the honest
harness (``_stopwatch``); a visitor's own compile cache (``_cache_lab``); side effects and
``jax.debug.print`` under jit (``_side_effects``); beyond the article, run in a sandboxed worker
(``_sandboxed``): buffer donation (``_donation``), the persistent compilation cache
(``_compile_cache``) and a profiler trace (``_trace``); the page's charts (``_figures``). The
article's functions come from :mod:`jaxplay.article`.
"""

from jaxplay.article import dynamic_control_flow as dynamic_control_flow
from jaxplay.article import naive_softmax as naive_softmax

from ._cache_lab import CACHE_LAB_MAX_LENGTH as CACHE_LAB_MAX_LENGTH
from ._cache_lab import CacheLab as CacheLab
from ._cache_lab import cache_lab_restarted as cache_lab_restarted
from ._cache_lab import history_table as history_table
from ._compile_cache import CACHE_CHILD as CACHE_CHILD
from ._compile_cache import CACHE_SETTINGS as CACHE_SETTINGS
from ._compile_cache import cache_figure as cache_figure
from ._compile_cache import cache_sentence as cache_sentence
from ._compile_cache import persistent_cache_demo as persistent_cache_demo
from ._donation import DONATION_SOURCES as DONATION_SOURCES
from ._donation import DonationRun as DonationRun
from ._donation import donation_demo as donation_demo
from ._donation import donation_sentence as donation_sentence
from ._donation import donation_table as donation_table
from ._donation import reuse_sentence as reuse_sentence
from ._figures import article_figure as article_figure
from ._figures import distribution_figure as distribution_figure
from ._figures import roofline_figure as roofline_figure
from ._figures import stage_figure as stage_figure
from ._figures import sweep_figure as sweep_figure
from ._first_call import first_call_sentence as first_call_sentence
from ._measurement import Measurement as Measurement
from ._measurement import Race as Race
from ._measurement import key_of as key_of
from ._measurement import measure_shared as measure_shared
from ._measurement import race_shared as race_shared
from ._measurement import shared_measurement as shared_measurement
from ._measurement import shared_race as shared_race
from ._measurement import warm_up as warm_up
from ._program import kernel_table as kernel_table
from ._program import library_calls_note as library_calls_note
from ._program import memory_table as memory_table
from ._program import program_sentence as program_sentence
from ._sandboxed import SANDBOXED as SANDBOXED
from ._sandboxed import SANDBOXED_NOTES as SANDBOXED_NOTES
from ._shared import SharedResult as SharedResult
from ._shown import provenance as provenance
from ._shown import race_code as race_code
from ._shown import timing_code as timing_code
from ._side_effects import debug_print_demo as debug_print_demo
from ._side_effects import debug_printed as debug_printed
from ._side_effects import impure_counter_demo as impure_counter_demo
from ._side_effects import side_effects_sentence as side_effects_sentence
from ._stopwatch import ARTICLE_TIMING_CODE as ARTICLE_TIMING_CODE
from ._stopwatch import article_explanation as article_explanation
from ._stopwatch import article_timing as article_timing
from ._sweep import SweepPoint as SweepPoint
from ._sweep import crossover as crossover
from ._sweep import sweep_point as sweep_point
from ._sweep import sweep_rows as sweep_rows
from ._sweep import sweep_verdict as sweep_verdict
from ._trace import TRACE_MAX_DOWNLOAD_BYTES as TRACE_MAX_DOWNLOAD_BYTES
from ._trace import summarise_trace as summarise_trace
from ._trace import trace_demo as trace_demo
from ._trace import trace_sentence as trace_sentence
from ._trace import trace_table as trace_table
from ._workloads import DEFAULT_FORMULA as DEFAULT_FORMULA
from ._workloads import DEFAULT_WORKLOAD as DEFAULT_WORKLOAD
from ._workloads import DTYPES as DTYPES
from ._workloads import PRESETS as PRESETS
from ._workloads import SizeError as SizeError
from ._workloads import Workload as Workload
from ._workloads import function_of as function_of
from ._workloads import function_source as function_source
from ._workloads import inputs as inputs
