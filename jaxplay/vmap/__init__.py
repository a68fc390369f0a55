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
from ._axes import VmapOutcome as VmapOutcome
from ._axes import apply_axes as apply_axes
from ._axes import correct_axes as correct_axes
from ._axes import parse_axes as parse_axes
from ._batching import MAX_TIMING_BATCH as MAX_TIMING_BATCH
from ._batching import BatchPoint as BatchPoint
from ._batching import batching_figure as batching_figure
from ._batching import check_batch_sizes as check_batch_sizes
from ._batching import combine as combine
from ._batching import time_batch as time_batch
from ._conv import CUSTOM_KERNEL as CUSTOM_KERNEL
from ._conv import KERNELS as KERNELS
from ._conv import MAX_IMAGE as MAX_IMAGE
from ._conv import MAX_IMAGES as MAX_IMAGES
from ._conv import MAX_KERNELS as MAX_KERNELS
from ._conv import MIN_IMAGE as MIN_IMAGE
from ._conv import PATTERNS as PATTERNS
from ._conv import ConvResult as ConvResult
from ._conv import conv_figure as conv_figure
from ._conv import run_conv as run_conv
from ._jaxprs import JAXPR_BATCH as JAXPR_BATCH
from ._jaxprs import batched_jaxprs as batched_jaxprs
