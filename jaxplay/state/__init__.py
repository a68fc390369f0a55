"""The stateful-computations page: a training loop that threads its state, beside two that hide it.

Beyond the article: JAX's transforms want pure functions, so a training loop passes its
parameters, optimizer state and PRNG key into a jitted step and takes the new ones back. The
model, the data and the optimizers in plain JAX (``_model``), the loops, threaded and with hidden
state (``_loops``), a run measured and its Code Lab cell (``_runs``) and the loss chart
(``_figures``).
"""

from ._figures import loss_figure as loss_figure
from ._model import OPTIMIZERS as OPTIMIZERS
from ._model import init_params as init_params
from ._model import loss_fn as loss_fn
from ._model import make_data as make_data
from ._model import predict as predict
from ._runs import LEARNING_RATES as LEARNING_RATES
from ._runs import LOOPS as LOOPS
from ._runs import MAX_HIDDEN as MAX_HIDDEN
from ._runs import MAX_STEPS as MAX_STEPS
from ._runs import Loop as Loop
from ._runs import Setup as Setup
from ._runs import TrainingRun as TrainingRun
from ._runs import explain_after as explain_after
from ._runs import explain_runs as explain_runs
from ._runs import explain_stuck as explain_stuck
from ._runs import find_loop as find_loop
from ._runs import loss_change_words as loss_change_words
from ._runs import train as train
from ._runs import training_snippet as training_snippet
