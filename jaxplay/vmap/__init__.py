"""The vmap page: one example's function batched; axes, speed, a nested-vmap convolution, jaxprs.

The article's ``process_single_example`` under any ``in_axes`` a visitor types (``_axes``); the
article's loop against ``vmap`` and ``jit(vmap)``, timed (``_batching``); the article's
nested-vmap convolution checked against libraries (``_conv``); the batched jaxprs (``_jaxprs``).
The article's functions come from :mod:`jaxplay.article`.
"""

from jaxplay.article import BATCH_CONV2D_LINES as BATCH_CONV2D_LINES
from jaxplay.article import batch_conv2d as batch_conv2d
from jaxplay.article import conv2d_single as conv2d_single
from jaxplay.article import manual_batch_process as manual_batch_process
from jaxplay.article import process_single_example as process_single_example

from ._axes import EDITOR_BATCH as EDITOR_BATCH
from ._axes import LAYOUTS as LAYOUTS
from ._axes import W_CHOICES as W_CHOICES
from ._axes import AxesError as AxesError
from ._axes import AxesVerdict as AxesVerdict
from ._axes import VmapOutcome as VmapOutcome
from ._axes import apply_axes as apply_axes
from ._axes import axes_verdict as axes_verdict
from ._axes import correct_axes as correct_axes
from ._axes import parse_axes as parse_axes
from ._axes import puzzle_intro as puzzle_intro
from ._axes import shape_sentence as shape_sentence
from ._batching import BATCH_SIZE_CHOICES as BATCH_SIZE_CHOICES
from ._batching import DEFAULT_BATCH_SIZES as DEFAULT_BATCH_SIZES
from ._batching import MAX_TIMING_BATCH as MAX_TIMING_BATCH
from ._batching import BatchPoint as BatchPoint
from ._batching import batching_caption as batching_caption
from ._batching import batching_figure as batching_figure
from ._batching import check_batch_sizes as check_batch_sizes
from ._batching import combine as combine
from ._batching import point_label as point_label
from ._batching import time_batch as time_batch
from ._batching import timing_labels as timing_labels
from ._conv import CUSTOM_KERNEL as CUSTOM_KERNEL
from ._conv import DEFAULT_CUSTOM_KERNEL as DEFAULT_CUSTOM_KERNEL
from ._conv import DEFAULT_IMAGES as DEFAULT_IMAGES
from ._conv import DEFAULT_KERNELS as DEFAULT_KERNELS
from ._conv import KERNEL_CHOICES as KERNEL_CHOICES
from ._conv import KERNELS as KERNELS
from ._conv import MAX_IMAGE as MAX_IMAGE
from ._conv import MAX_IMAGES as MAX_IMAGES
from ._conv import MAX_KERNELS as MAX_KERNELS
from ._conv import MIN_IMAGE as MIN_IMAGE
from ._conv import PATTERNS as PATTERNS
from ._conv import ConvResult as ConvResult
from ._conv import agreement_metrics as agreement_metrics
from ._conv import conv_figure as conv_figure
from ._conv import conv_inputs as conv_inputs
from ._conv import level_table as level_table
from ._conv import run_conv as run_conv
from ._jaxprs import JAXPR_BATCH as JAXPR_BATCH
from ._jaxprs import batched_jaxprs as batched_jaxprs
from ._jaxprs import jaxpr_panels as jaxpr_panels
