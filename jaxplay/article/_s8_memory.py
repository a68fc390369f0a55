"""Section 8 of the article, memory and fusion: gradient checkpointing and an elementwise chain.

The article's function lives here as code, and the examples below show the very same source
(:func:`~jaxplay.article._example.code`), kept token for token as the article writes it.
"""

import jax.numpy as jnp

from jaxplay.article._example import Example, Section, code
from jaxplay.core.i18n import N_

SECTION = Section(
    8, "memory", N_("Memory and fusion"), N_("Gradient checkpointing and XLA's operator fusion.")
)

# fmt: off

def memory_intensive_layer(x):
    """Memory-hungry computation"""
    for _ in range(10):
        x = jnp.sin(x) @ jnp.cos(x).T
    return x

# fmt: on

EXAMPLES: tuple[Example, ...] = (
    Example(
        id="memory-checkpoint-as-written",
        section=8,
        title=N_("Gradient checkpointing"),
        as_written=True,
        fixed_by="memory-checkpoint-fixed",
        source=code(
            """\
import jax
import jax.numpy as jnp
from jax import checkpoint

""",
            memory_intensive_layer,
            """
# Normal: keep every intermediate for the backward pass
normal_grad_fn = jax.grad(lambda x: jnp.sum(memory_intensive_layer(x)))

# Checkpointed: recompute intermediates to save memory
@jax.grad
def checkpointed_fn(x):
    @checkpoint
    def checkpointed_layer(x):
        return memory_intensive_layer(x)
    return jnp.sum(checkpointed_layer(x))

x = jnp.ones((1000, 1000))
# "Observe the memory difference (run it in a real environment)":
print("注意观察内存使用差异（在实际环境中运行）")
""",
        ),
        explanation=N_(
            "Runs, and shows nothing: the gradients are never computed and memory is never "
            "measured. The fixed version counts what each version saves for the backward pass "
            "and asks XLA for the compiled programs' temporary memory."
        ),
    ),
    Example(
        id="memory-checkpoint-fixed",
        section=8,
        title=N_("What checkpointing saves, measured"),
        source=code(
            """\
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import print_saved_residuals

""",
            memory_intensive_layer,
            """
def loss(x):
    return jnp.sum(memory_intensive_layer(x))

def loss_checkpointed(x):
    return jnp.sum(jax.checkpoint(memory_intensive_layer)(x))

x = jnp.ones((300, 300)) / 300
print("saved for the backward pass, no checkpoint:")
print_saved_residuals(loss, x)
print("with checkpoint:")
print_saved_residuals(loss_checkpointed, x)

grads = []
for name, f in [("normal", loss), ("checkpointed", loss_checkpointed)]:
    compiled = jax.jit(jax.grad(f)).lower(x).compile()
    mem = compiled.memory_analysis()
    temp = getattr(mem, "temp_size_in_bytes", None) if mem is not None else None
    print(f"{name}: temporary bytes = {temp}")
    grads.append(compiled(x))

print("same gradients:", bool(jnp.allclose(grads[0], grads[1], rtol=1e-4)))
""",
        ),
        explanation=N_(
            "`print_saved_residuals` lists every array kept for the backward pass: 40 without "
            "checkpointing, four per round: the matmul's operands (`sin(x)` and `cos(x).T`) and "
            "the derivative factors (`cos(x)` for `sin`, `sin(x)` for `cos`); only the input "
            "with it. XLA's `memory_analysis()` of the compiled gradients reports their "
            "temporary buffers, and both come out the same here: `grad` uses no value of the "
            "forward pass, so JAX leaves it out, and the checkpoint's rerun in the backward "
            "pass is the only forward pass (the Memory page counts the sines and barriers in "
            "both programs, and shows a `lax.scan` loop checkpointed block by block, where the "
            "temp memory does drop). The gradients are "
            "equal: checkpointing trades compute for memory. The "
            "matrix is 300x300 instead of 1000x1000 (and scaled so the values stay finite) so "
            "the example runs quickly."
        ),
    ),
    Example(
        id="memory-fusion",
        section=8,
        title=N_("Fusion: a chain of element-wise ops becomes one kernel"),
        source='''\
import jax
import jax.numpy as jnp

# The article stops after `y = jnp.sin(x)`; a chain completed in its spirit:
@jax.jit
def unoptimized_chain(x):
    """An element-wise chain"""
    y = jnp.sin(x)
    z = jnp.cos(y)
    return z * 2.0 + 1.0

x = jnp.ones((1000, 1000))
compiled = unoptimized_chain.lower(x).compile()
hlo = compiled.as_text()
fusions = [line.strip() for line in hlo.splitlines() if " fusion(" in line]
print(f"{len(fusions)} fused kernel(s):")
for line in fusions:
    print(" ", line[:120])
cost = compiled.cost_analysis()
cost = cost[0] if isinstance(cost, list) else cost
print("bytes accessed:", cost.get("bytes accessed"))
''',
        explanation=N_(
            "The article's last snippet is cut off. Completed: sin, cos, multiply and add are "
            "element-wise, so XLA fuses them into one loop over memory. The compiled HLO shows "
            "the fusion, and its cost analysis counts bytes accessed near one read and one "
            "write of the array instead of four of each."
        ),
    ),
)
