"""The compose page: transforms stacked in any order, and the article's compositions.

A pipeline builder over a formula (a table of transforms, each applied in turn; the presets run
in the server, every other pipeline in a sandboxed worker, :func:`pipeline` says why), the
article's per-sample gradients as written and fixed, ``jacfwd`` against ``jacrev`` as widths
change, and three ways to a Hessian-vector product (forward over reverse, the article's reverse
over reverse, the full Hessian) with the article's ``jit`` of an HVP that takes ``f``. The
article's functions come from :mod:`jaxplay.article`.
"""

from jaxplay.article import hvp as hvp
from jaxplay.article import neural_network as neural_network
from jaxplay.article import optimized_hvp as optimized_hvp
from jaxplay.article import per_sample_gradient as per_sample_gradient

from ._hvp import HVP_METHODS as HVP_METHODS
from ._hvp import MAX_HVP_DIM as MAX_HVP_DIM
from ._hvp import HvpPoint as HvpPoint
from ._hvp import HvpSweep as HvpSweep
from ._hvp import JitHvp as JitHvp
from ._hvp import forward_over_reverse_hvp as forward_over_reverse_hvp
from ._hvp import hvp_agreement as hvp_agreement
from ._hvp import hvp_figure as hvp_figure
from ._hvp import hvp_point as hvp_point
from ._hvp import hvp_sweep as hvp_sweep
from ._hvp import jit_hvp as jit_hvp
from ._jacobians import MAX_WIDTH as MAX_WIDTH
from ._jacobians import NARROW as NARROW
from ._jacobians import SWEEPS as SWEEPS
from ._jacobians import JacobianPoint as JacobianPoint
from ._jacobians import jacobian_figure as jacobian_figure
from ._jacobians import jacobian_point as jacobian_point
from ._jacobians import jacobian_sweep as jacobian_sweep
from ._jacobians import jacobians_agree as jacobians_agree
from ._per_sample import MAX_FEATURES as MAX_FEATURES
from ._per_sample import MAX_SAMPLES as MAX_SAMPLES
from ._per_sample import PerSample as PerSample
from ._per_sample import loss_for_sample as loss_for_sample
from ._per_sample import per_sample as per_sample
from ._pipeline import FUNCTIONS as FUNCTIONS
from ._pipeline import INPUT_SHAPES as INPUT_SHAPES
from ._pipeline import MAX_STACK as MAX_STACK
from ._pipeline import STACK_PRESETS as STACK_PRESETS
from ._pipeline import TRANSFORMS as TRANSFORMS
from ._pipeline import PipelineResult as PipelineResult
from ._pipeline import compose as compose
from ._pipeline import is_preset as is_preset
from ._pipeline import pipeline as pipeline
from ._pipeline import plain_words as plain_words
from ._pipeline import stack_code as stack_code
