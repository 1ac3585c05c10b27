"""Block-sparse matrices (CSR of b x b blocks) and their matmuls with a static or a dynamic pattern."""

from core.sparsity.dynamic import DynamicBlockSparse, capacity_for, dynamic_from_pattern, dynamic_matmul
from core.sparsity.formats import BLOCK_SIZES, BlockPattern, BlockSparseMatrix
from core.sparsity.static import StaticPlan, block_sparse_matmul, plan_static, static_matmul

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
