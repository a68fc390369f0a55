"""The pytrees page: what a pytree is, your own classes as pytrees, static vs dynamic fields and
jit's cache, ``None`` and empty containers, and parameters through ``grad`` and ``vmap``.

Beyond the article: the article passes dicts of parameters to ``grad`` without saying what JAX
makes of them. A tree's nodes, leaves and the tree functions (``_anatomy``), the examples and the
safe reader of a typed literal (``_examples``), registered and unregistered classes (``_classes``),
static and dynamic fields counted against jit's cache (``_static``), parameters through ``grad``
and ``vmap`` (``_params``) and the tree chart (``_figures``). Each demo's code is a live function,
and its Code Lab snippet is built from that function's source.
"""

from ._anatomy import Anatomy as Anatomy
from ._anatomy import describe as describe
from ._anatomy import snippet as snippet
from ._anatomy import tree_functions as tree_functions
from ._classes import CALLS as CALLS
from ._classes import REGISTRATIONS as REGISTRATIONS
from ._classes import ClassDemo as ClassDemo
from ._classes import affine as affine
from ._classes import class_demo as class_demo
from ._classes import class_snippet as class_snippet
from ._classes import find_registration as find_registration
from ._classes import layer_loss as layer_loss
from ._empty import EmptyDemo as EmptyDemo
from ._empty import empty_demo as empty_demo
from ._empty import empty_snippet as empty_snippet
from ._empty import none_leaves as none_leaves
from ._empty import show_leaf as show_leaf
from ._examples import DEFAULT_LITERAL as DEFAULT_LITERAL
from ._examples import EXAMPLES as EXAMPLES
from ._examples import LITERAL as LITERAL
from ._examples import MAP_FUNCTIONS as MAP_FUNCTIONS
from ._examples import MAX_LITERAL_CHARS as MAX_LITERAL_CHARS
from ._examples import MAX_LITERAL_DEPTH as MAX_LITERAL_DEPTH
from ._examples import MAX_LITERAL_NODES as MAX_LITERAL_NODES
from ._examples import LiteralError as LiteralError
from ._examples import find_example as find_example
from ._examples import parse_literal as parse_literal
from ._figures import tree_figure as tree_figure
from ._params import AXES as AXES
from ._params import MAX_BATCH as MAX_BATCH
from ._params import MAX_FEATURES as MAX_FEATURES
from ._params import MAX_HIDDEN as MAX_HIDDEN
from ._params import MAX_MEMBERS as MAX_MEMBERS
from ._params import AxesChoice as AxesChoice
from ._params import ParamsRun as ParamsRun
from ._params import find_axes as find_axes
from ._params import init_params as init_params
from ._params import loss as loss
from ._params import params_run as params_run
from ._params import params_snippet as params_snippet
from ._params import predict as predict
from ._params import vmapped_predict as vmapped_predict
from ._static import ACTIVATIONS as ACTIVATIONS
from ._static import CHANGES as CHANGES
from ._static import MAX_CALLS as MAX_CALLS
from ._static import Scaled as Scaled
from ._static import StaticLab as StaticLab
from ._static import explain_compiles as explain_compiles
from ._static import explain_failure as explain_failure
from ._static import find_change as find_change
from ._static import static_lab as static_lab
from ._static import static_snippet as static_snippet
