"""The memory page: what gradient checkpointing saves, and what XLA fuses.

Checkpointing variants of the article's layer and of an MLP, with their saved residuals, compiled
memory and gradient time (``_remat``), what running them will cost (``_run_cost``), what a run
will do with the visitor's settings and says while it runs (``_remat_run``), told in sentences,
tables and a chart (``_remat_report``); an elementwise op chain run eagerly and jitted, with the
kernels XLA fused and the bytes they move (``_fusion``), shaped into the page's metrics, tables
and captions (``_fusion_report``); the page's settings as data (``_settings``). The article's
function comes from :mod:`jaxplay.article`.
"""

from ._fusion import CHAIN_OPS as CHAIN_OPS
from ._fusion import CHAIN_PRESETS as CHAIN_PRESETS
from ._fusion import COMPARED as COMPARED
from ._fusion import MAX_CHAIN_OPS as MAX_CHAIN_OPS
from ._fusion import ChainReport as ChainReport
from ._fusion import analyse_chain as analyse_chain
from ._fusion import bandwidth_story as bandwidth_story
from ._fusion import chain_figure as chain_figure
from ._fusion import chain_limit as chain_limit
from ._fusion import chain_source as chain_source
from ._fusion import check_chain as check_chain
from ._fusion import eager_vs_jit_rows as eager_vs_jit_rows
from ._fusion import fusion_rows as fusion_rows
from ._fusion import fusion_story as fusion_story
from ._fusion import recomputed_primitives as recomputed_primitives
from ._fusion import run_chain as run_chain
from ._fusion_report import DEFAULT_CHAIN as DEFAULT_CHAIN
from ._fusion_report import PRESET_CHOICES as PRESET_CHOICES
from ._fusion_report import bytes_caption as bytes_caption
from ._fusion_report import chain_metrics as chain_metrics
from ._fusion_report import eager_vs_jit_table as eager_vs_jit_table
from ._fusion_report import fusion_captions as fusion_captions
from ._fusion_report import fusion_table as fusion_table
from ._fusion_report import preset_chain as preset_chain
from ._fusion_report import preset_of as preset_of
from ._fusion_report import recomputed_caption as recomputed_caption
from ._fusion_report import unfused_caption as unfused_caption
from ._remat import ARTICLE_CODE as ARTICLE_CODE
from ._remat import DEFAULT_VARIANTS as DEFAULT_VARIANTS
from ._remat import GRADIENT_SAMPLE as GRADIENT_SAMPLE
from ._remat import LOOPS as LOOPS
from ._remat import MAX_DEPTH as MAX_DEPTH
from ._remat import MAX_SIZE as MAX_SIZE
from ._remat import MODELS as MODELS
from ._remat import VARIANTS as VARIANTS
from ._remat import Model as Model
from ._remat import RematResult as RematResult
from ._remat import analyse_variant as analyse_variant
from ._remat import build_loss as build_loss
from ._remat import check_size as check_size
from ._remat import platform as platform
from ._remat import run_limit as run_limit
from ._remat import variant_code as variant_code
from ._remat_report import memory_time_figure as memory_time_figure
from ._remat_report import peak_caption as peak_caption
from ._remat_report import remat_story as remat_story
from ._remat_report import residual_rows as residual_rows
from ._remat_report import residual_story as residual_story
from ._remat_report import residuals_heading as residuals_heading
from ._remat_report import summary_caption as summary_caption
from ._remat_report import summary_columns as summary_columns
from ._remat_report import summary_table as summary_table
from ._remat_report import variant_explanation as variant_explanation
from ._remat_run import analysed_label as analysed_label
from ._remat_run import plan_run as plan_run
from ._remat_run import step_label as step_label
from ._run_cost import AUTO_RUN_S as AUTO_RUN_S
from ._run_cost import run_cost as run_cost
from ._settings import Choice as Choice
from ._settings import Choices as Choices
from ._settings import NumberBox as NumberBox
from ._settings import chain_size_box as chain_size_box
from ._settings import checkpoint_boxes as checkpoint_boxes
from ._settings import checkpoint_choices as checkpoint_choices
from ._settings import variants_choice as variants_choice
