"""The compose page: transforms stacked in any order, and the article's compositions.

A pipeline builder over a formula (a table of transforms, each applied in turn; the presets run
in the server, every other pipeline in a sandboxed worker, :func:`pipeline` says why), the
article's per-sample gradients as written and fixed, ``jacfwd`` against ``jacrev`` as widths
change, and three ways to a Hessian-vector product (forward over reverse, the article's reverse
over reverse, the full Hessian) with the article's ``jit`` of an HVP that takes ``f``. The
article's functions come from :mod:`jaxplay.article`.

What the page says about each run is built here too, beside what it describes (the builder's
choices and sentences in ``_builder``, the two timed sweeps as one table in ``_sizes``), so the
page only places widgets and these results.
"""

from jaxplay.article import hvp as hvp
from jaxplay.article import neural_network as neural_network
from jaxplay.article import optimized_hvp as optimized_hvp
from jaxplay.article import per_sample_gradient as per_sample_gradient

from ._builder import DEFAULT_SETTINGS as DEFAULT_SETTINGS
from ._builder import FUNCTION_CHOICES as FUNCTION_CHOICES
from ._builder import PRESET_CHOICES as PRESET_CHOICES
from ._builder import SETTING_KEYS as SETTING_KEYS
from ._builder import SHAPE_CHOICES as SHAPE_CHOICES
from ._builder import SLOT_CHOICES as SLOT_CHOICES
from ._builder import SLOT_KEYS as SLOT_KEYS
from ._builder import TYPED_FORMULA as TYPED_FORMULA
from ._builder import applying as applying
from ._builder import formula_help as formula_help
from ._builder import pipeline_notes as pipeline_notes
from ._builder import preset_settings as preset_settings
from ._builder import refusal as refusal
from ._builder import refused_sentence as refused_sentence
from ._builder import shapes_sentence as shapes_sentence
from ._builder import slot_label as slot_label
from ._builder import stack_caption as stack_caption
from ._builder import stack_of as stack_of
from ._builder import values_text as values_text
from ._hvp import AGREEMENT_N as AGREEMENT_N
from ._hvp import HVP_METHODS as HVP_METHODS
from ._hvp import HVP_WAYS as HVP_WAYS
from ._hvp import MAX_HVP_DIM as MAX_HVP_DIM
from ._hvp import HvpPoint as HvpPoint
from ._hvp import JitHvp as JitHvp
from ._hvp import as_written_sentence as as_written_sentence
from ._hvp import forward_over_reverse_hvp as forward_over_reverse_hvp
from ._hvp import hvp_agreement as hvp_agreement
from ._hvp import hvp_figure as hvp_figure
from ._hvp import hvp_point as hvp_point
from ._hvp import jit_hvp as jit_hvp
from ._hvp import jit_hvp_why as jit_hvp_why
from ._jacobians import MAX_WIDTH as MAX_WIDTH
from ._jacobians import SWEEPS as SWEEPS
from ._jacobians import JacobianPoint as JacobianPoint
from ._jacobians import agreement_sentence as agreement_sentence
from ._jacobians import jacobian_figure as jacobian_figure
from ._jacobians import jacobian_plan as jacobian_plan
from ._jacobians import jacobian_point as jacobian_point
from ._jacobians import jacobians_agree as jacobians_agree
from ._per_sample import MAX_FEATURES as MAX_FEATURES
from ._per_sample import MAX_SAMPLES as MAX_SAMPLES
from ._per_sample import PerSample as PerSample
from ._per_sample import fixed_rows as fixed_rows
from ._per_sample import loss_for_sample as loss_for_sample
from ._per_sample import per_sample as per_sample
from ._per_sample import per_sample_cases as per_sample_cases
from ._per_sample import per_sample_fixed as per_sample_fixed
from ._per_sample import per_sample_why as per_sample_why
from ._per_sample import shapes_line as shapes_line
from ._pipeline import FUNCTIONS as FUNCTIONS
from ._pipeline import INPUT_SHAPES as INPUT_SHAPES
from ._pipeline import MAX_STACK as MAX_STACK
from ._pipeline import STACK_PRESETS as STACK_PRESETS
from ._pipeline import PipelineResult as PipelineResult
from ._pipeline import compose as compose
from ._pipeline import is_preset as is_preset
from ._pipeline import pipeline as pipeline
from ._pipeline import stack_code as stack_code
from ._sizes import HVP_SIZES as HVP_SIZES
from ._sizes import JACOBIAN_SIZES as JACOBIAN_SIZES
from ._sizes import SizeSweep as SizeSweep
