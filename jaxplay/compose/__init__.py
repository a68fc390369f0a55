"""The compose page: transforms stacked in any order, and the article's compositions.

A pipeline builder over a formula (a table of transforms, each applied in turn; the presets run
in the server, every other pipeline in a sandboxed worker, :func:`pipeline` says why), the
article's per-sample gradients as written and fixed, ``jacfwd`` against ``jacrev`` as widths
change, and three ways to a Hessian-vector product (forward over reverse, the article's reverse
over reverse, the full Hessian) with the article's ``jit`` of an HVP that takes ``f``. The
article's functions come from :mod:`jaxplay.article`.
"""

from jaxplay.article import hvp as hvp
from jaxplay.article import jac_forward as jac_forward
from jaxplay.article import jac_reverse as jac_reverse
from jaxplay.article import neural_network as neural_network
from jaxplay.article import optimized_hvp as optimized_hvp
from jaxplay.article import per_sample_gradient as per_sample_gradient

from ._compose import FUNCTIONS as FUNCTIONS
from ._compose import HIDDEN as HIDDEN
from ._compose import HVP_FUNCTIONS as HVP_FUNCTIONS
from ._compose import HVP_METHODS as HVP_METHODS
from ._compose import INPUT_SHAPES as INPUT_SHAPES
from ._compose import MAX_FEATURES as MAX_FEATURES
from ._compose import MAX_HVP_DIM as MAX_HVP_DIM
from ._compose import MAX_OUTPUT_ELEMENTS as MAX_OUTPUT_ELEMENTS
from ._compose import MAX_SAMPLES as MAX_SAMPLES
from ._compose import MAX_STACK as MAX_STACK
from ._compose import MAX_WIDTH as MAX_WIDTH
from ._compose import MODES as MODES
from ._compose import NARROW as NARROW
from ._compose import PRESET_PIPELINES as PRESET_PIPELINES
from ._compose import STACK_PRESETS as STACK_PRESETS
from ._compose import SWEEPS as SWEEPS
from ._compose import TRANSFORMS as TRANSFORMS
from ._compose import HvpPoint as HvpPoint
from ._compose import HvpSweep as HvpSweep
from ._compose import JacobianPoint as JacobianPoint
from ._compose import JacobianSweep as JacobianSweep
from ._compose import JitHvp as JitHvp
from ._compose import PerSample as PerSample
from ._compose import PipelineResult as PipelineResult
from ._compose import StackPreset as StackPreset
from ._compose import Transform as Transform
from ._compose import check_stack as check_stack
from ._compose import check_widths as check_widths
from ._compose import compiled_bytes as compiled_bytes
from ._compose import compose as compose
from ._compose import example_input as example_input
from ._compose import forward_over_reverse_hvp as forward_over_reverse_hvp
from ._compose import hessian_times as hessian_times
from ._compose import hvp_agreement as hvp_agreement
from ._compose import hvp_figure as hvp_figure
from ._compose import hvp_inputs as hvp_inputs
from ._compose import hvp_point as hvp_point
from ._compose import hvp_sweep as hvp_sweep
from ._compose import hvp_test_function as hvp_test_function
from ._compose import is_preset as is_preset
from ._compose import jacobian_figure as jacobian_figure
from ._compose import jacobian_point as jacobian_point
from ._compose import jacobian_sweep as jacobian_sweep
from ._compose import jacobians_agree as jacobians_agree
from ._compose import jit_hvp as jit_hvp
from ._compose import loss_for_sample as loss_for_sample
from ._compose import network as network
from ._compose import per_sample as per_sample
from ._compose import per_sample_grads as per_sample_grads
from ._compose import pipeline as pipeline
from ._compose import stack_code as stack_code
from ._compose import time_hvp as time_hvp
from ._compose import time_jacobians as time_jacobians
