"""The PRNG page: seeds, keys, splits, implementations and the pitfalls of randomness in JAX.

What a seed becomes with x64 off and on (``_seeds``); key trees and derivation schemes
(``_trees``); typed and legacy keys and the PRNG implementations (``_impls``); the article's
parallel streams (``_streams``); reused keys, the article's stochastic layer and dropped keys
(``_pitfalls``); the page's charts (``_figures``). Nothing here changes a process-wide JAX
setting: x64 and the key-reuse checker are used through thread-local contexts.
"""

from jaxplay.article import stochastic_layer as stochastic_layer

from ._figures import correlation_figure as correlation_figure
from ._figures import histograms_figure as histograms_figure
from ._figures import key_tree_figure as key_tree_figure
from ._figures import samples_heatmap as samples_heatmap
from ._figures import timing_figure as timing_figure
from ._figures import training_figure as training_figure
from ._impls import ImplTiming as ImplTiming
from ._impls import explain_impls as explain_impls
from ._impls import impl_infos as impl_infos
from ._impls import intro as intro
from ._impls import key_forms as key_forms
from ._impls import time_impl as time_impl
from ._pitfalls import LayerRun as LayerRun
from ._pitfalls import TrainingRun as TrainingRun
from ._pitfalls import check_key_reuse_sandboxed as check_key_reuse_sandboxed
from ._pitfalls import key_reuse_source as key_reuse_source
from ._pitfalls import reuse_demo as reuse_demo
from ._pitfalls import stochastic_layer_fixed as stochastic_layer_fixed
from ._pitfalls import stochastic_layer_runs as stochastic_layer_runs
from ._pitfalls import train_dropping_key as train_dropping_key
from ._pitfalls import train_threading_key as train_threading_key
from ._pitfalls import training_runs as training_runs
from ._pitfalls import training_step as training_step
from ._pitfalls import transform_agreement as transform_agreement
from ._seeds import ARTICLE_SEED as ARTICLE_SEED
from ._seeds import IMPLS as IMPLS
from ._seeds import MAX_PARALLEL_VALUES as MAX_PARALLEL_VALUES
from ._seeds import MAX_SEED_DIGITS as MAX_SEED_DIGITS
from ._seeds import MAX_TREE_BRANCHING as MAX_TREE_BRANCHING
from ._seeds import MAX_TREE_NODES as MAX_TREE_NODES
from ._seeds import SeedError as SeedError
from ._seeds import SeedInfo as SeedInfo
from ._seeds import describe_seed as describe_seed
from ._seeds import key_hex as key_hex
from ._seeds import parse_seed as parse_seed
from ._seeds import seed_rule as seed_rule
from ._seeds import threefry_seed_words as threefry_seed_words
from ._streams import ParallelStats as ParallelStats
from ._streams import article_parallel as article_parallel
from ._streams import band_caption as band_caption
from ._streams import check_parallel as check_parallel
from ._streams import parallel_stats as parallel_stats
from ._trees import KeyTree as KeyTree
from ._trees import chained_keys as chained_keys
from ._trees import derive_keys as derive_keys
from ._trees import key_tree as key_tree
from ._trees import max_depth as max_depth
from ._trees import max_fold_data as max_fold_data
from ._trees import node_samples as node_samples
from ._trees import time_derivations as time_derivations
from ._trees import wide_fold_in_keys as wide_fold_in_keys
from ._trees import wide_split_keys as wide_split_keys
