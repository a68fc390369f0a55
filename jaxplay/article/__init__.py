"""The tutorial article's code: every snippet of its eight sections, runnable, and its functions.

Why a package of its own: the article (“JAX core API in depth: composable functional transforms
beyond NumPy”, a Chinese-language tutorial on JAX's core API) is what the whole app explores. Its
code exists once, here: each section module (``_s1_jit`` … ``_s8_memory``) holds the article's
functions as live code, which the topic pages run, and that section's examples, whose source is
built from those functions (:func:`~jaxplay.article._example.code`), so "show the code that ran"
shows the code that really ran. The walkthrough and the Code Lab read the registry below.
"""

from jaxplay.article._example import Example as Example
from jaxplay.article._example import code as code
from jaxplay.article._registry import ABOUT as ABOUT
from jaxplay.article._registry import DEFAULT_ID as DEFAULT_ID
from jaxplay.article._registry import EXAMPLES as EXAMPLES
from jaxplay.article._registry import SECTIONS as SECTIONS
from jaxplay.article._registry import TITLE as TITLE
from jaxplay.article._registry import by_id as by_id
from jaxplay.article._registry import in_section as in_section
from jaxplay.article._registry import section as section
from jaxplay.article._s1_jit import naive_softmax as naive_softmax
from jaxplay.article._s2_grad import complex_loss as complex_loss
from jaxplay.article._s2_grad import my_special_op as my_special_op
from jaxplay.article._s2_grad import my_special_op_bwd as my_special_op_bwd
from jaxplay.article._s2_grad import my_special_op_fwd as my_special_op_fwd
from jaxplay.article._s3_vmap import BATCH_CONV2D_LINES as BATCH_CONV2D_LINES
from jaxplay.article._s3_vmap import batch_conv2d as batch_conv2d
from jaxplay.article._s3_vmap import conv2d_single as conv2d_single
from jaxplay.article._s3_vmap import manual_batch_process as manual_batch_process
from jaxplay.article._s3_vmap import process_single_example as process_single_example
from jaxplay.article._s4_compose import hvp as hvp
from jaxplay.article._s4_compose import jac_forward as jac_forward
from jaxplay.article._s4_compose import jac_reverse as jac_reverse
from jaxplay.article._s4_compose import neural_network as neural_network
from jaxplay.article._s4_compose import optimized_hvp as optimized_hvp
from jaxplay.article._s4_compose import per_sample_gradient as per_sample_gradient
from jaxplay.article._s5_prng import stochastic_layer as stochastic_layer
from jaxplay.article._s6_tracing import dynamic_control_flow as dynamic_control_flow
from jaxplay.article._s6_tracing import simple_function as simple_function
from jaxplay.article._s7_devices import all_reduce_example as all_reduce_example
from jaxplay.article._s7_devices import manual_device_placement as manual_device_placement
from jaxplay.article._s7_devices import model_fn as model_fn
from jaxplay.article._s8_memory import memory_intensive_layer as memory_intensive_layer
