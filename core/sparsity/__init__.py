"""Block-sparse matrices (CSR of b x b blocks) and their matmuls with a static or a dynamic pattern (PopSparse).

BlockPattern, BlockSparseMatrix, BLOCK_SIZES    which b x b blocks are non-zero, and their values
plan_static, static_matmul, StaticPlan          Y = W X with the pattern fixed at trace time (planned once)
block_sparse_matmul                             the static matmul from a matrix in one call
DynamicBlockSparse, dynamic_from_pattern, dynamic_matmul, capacity_for
                                                Y = W X with a pattern that changes between calls without
                                                recompiling (a fixed capacity of blocks)
"""

from core.sparsity.formats import BLOCK_SIZES, BlockPattern, BlockSparseMatrix  # numpy only

_DYNAMIC = ("DynamicBlockSparse", "capacity_for", "dynamic_from_pattern", "dynamic_matmul")
_STATIC = ("StaticPlan", "block_sparse_matmul", "plan_static", "static_matmul")

__all__ = [
    "BLOCK_SIZES",
    "BlockPattern",
    "BlockSparseMatrix",
    "DynamicBlockSparse",
    "StaticPlan",
    "block_sparse_matmul",
    "capacity_for",
    "dynamic_from_pattern",
    "dynamic_matmul",
    "plan_static",
    "static_matmul",
]


def __getattr__(name: str):
    """The matmuls (JAX) load on first use, so the formats import without JAX (a paper's config validates block
    sizes against BLOCK_SIZES). The imports are written out, so core.provenance still follows them."""
    if name in _DYNAMIC:
        from core.sparsity import dynamic

        return getattr(dynamic, name)
    if name in _STATIC:
        from core.sparsity import static

        return getattr(static, name)
    raise AttributeError(f"module 'core.sparsity' has no attribute {name!r}")
