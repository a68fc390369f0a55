"""The grad page: derivatives you can see, checked, in both modes, with custom rules and pytrees.

f, f′, f″ of a formula on a grid with their kinks (``_curves``), computed in the server for the
presets and in a sandboxed worker for a typed formula (``_formulas`` says why); autodiff against
finite differences, ``check_grads`` and the four ways to a derivative (``_checks``); the
article's ``custom_vjp`` rule, breakable (``_custom_vjp``), and ``custom_jvp`` beside it with
what each allows (``_custom_jvp``); ``stop_gradient`` (``_stop_gradient``) and ``linearize``
(``_linearize``); the article's ``complex_loss``: its gradient pytree and the "Hessian
diagonal" (``_pytrees``). The article's functions come from :mod:`jaxplay.article`.
"""

from jaxplay.article import complex_loss as complex_loss
from jaxplay.article import hvp as hvp
from jaxplay.article import my_special_op as my_special_op
from jaxplay.article import my_special_op_bwd as my_special_op_bwd
from jaxplay.article import my_special_op_fwd as my_special_op_fwd

from ._checks import ModesOnVectors as ModesOnVectors
from ._checks import central_difference as central_difference
from ._checks import check_derivatives as check_derivatives
from ._checks import check_figure as check_figure
from ._checks import check_grads_failure as check_grads_failure
from ._checks import modes_at_point as modes_at_point
from ._checks import modes_on_vectors as modes_on_vectors
from ._curves import MAX_ABS_X as MAX_ABS_X
from ._curves import MAX_ORDER as MAX_ORDER
from ._curves import ORDER_NAMES as ORDER_NAMES
from ._curves import PRESETS as PRESETS
from ._curves import DerivativeCurves as DerivativeCurves
from ._curves import check_grid as check_grid
from ._curves import curves_caption as curves_caption
from ._curves import derivative_curves as derivative_curves
from ._curves import derivative_figure as derivative_figure
from ._curves import find_kinks as find_kinks
from ._curves import nth_derivative as nth_derivative
from ._curves import scalar_function as scalar_function
from ._custom_jvp import CustomRules as CustomRules
from ._custom_jvp import custom_rules as custom_rules
from ._custom_jvp import special_op_jvp as special_op_jvp
from ._custom_jvp import special_op_jvp_rule as special_op_jvp_rule
from ._custom_vjp import NEGATIVE_BRANCH_RULES as NEGATIVE_BRANCH_RULES
from ._custom_vjp import CustomVsAutodiff as CustomVsAutodiff
from ._custom_vjp import custom_vjp_figure as custom_vjp_figure
from ._custom_vjp import custom_vs_autodiff as custom_vs_autodiff
from ._custom_vjp import make_special_op as make_special_op
from ._formulas import PointChecks as PointChecks
from ._formulas import checks as checks
from ._formulas import curves as curves
from ._formulas import is_preset as is_preset
from ._linearize import Linearized as Linearized
from ._linearize import linearize_example as linearize_example
from ._linearize import linearize_vs_jvp as linearize_vs_jvp
from ._pytrees import ARGNUMS as ARGNUMS
from ._pytrees import INITS as INITS
from ._pytrees import AuxResult as AuxResult
from ._pytrees import GradientTree as GradientTree
from ._pytrees import HessianDiagonal as HessianDiagonal
from ._pytrees import gradient_tree as gradient_tree
from ._pytrees import hessian_diagonal as hessian_diagonal
from ._pytrees import hessian_diagonal_figure as hessian_diagonal_figure
from ._pytrees import loss_with_aux as loss_with_aux
from ._pytrees import value_and_grad_with_aux as value_and_grad_with_aux
from ._stop_gradient import StopGradient as StopGradient
from ._stop_gradient import round_straight_through as round_straight_through
from ._stop_gradient import stop_gradient_demo as stop_gradient_demo
from ._stop_gradient import stop_gradient_figure as stop_gradient_figure
