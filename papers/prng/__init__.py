"""A Fast Hardware Pseudorandom Number Generator Based on xoroshiro128 (Hanlon & Felix, Graphcore 2022).

Statistical findings of the paper on CPU scale: xoroshiro128+ fails binary-rank and linear-complexity tests on its
low bits (they are linear), xoroshiro128aox passes them on every bit; plus a Hamming-weight dependency test (with
the sample it would need to see the paper's gjrand z9 finding), the frequency tests, an optional dieharder subset,
and the hardware-cost argument (cells of both whole generators from netlists, papers.prng.cost). Beside the claims, a
table: the battery on streams drawn through jax.random from split / folded-in xoroshiro128aox keys
(core.random.jax_prng, papers.prng.jax_streams).

The paper contract (core.paper): `run` (papers/prng/run.py) draws every generator's streams and runs the battery on
them (papers.prng.battery: p-values per bit), the optional dieharder subset and the battery on the jax.random
streams, and counts the netlists' cells under every technology mapping (papers.prng.cost); it returns the Results
(results.py). `decide` (claims.py) decides the claims declared there, the analytic fact and the tables' figures from
the Results alone; `render` (report.py) makes the tables. `Config` (config.py) is the `prng` config section; labels,
mappings and the paper's cell counts are in paper.py; `raw_outputs` (a generator's stream), `battery_results` (the
battery on one stream) and `run_dieharder` are in run.py. The generators themselves are core.random.
"""

from core.paper import Paper

PAPER = Paper(
    name="prng",
    title="A Fast Hardware Pseudorandom Number Generator Based on xoroshiro128",
    config="papers.prng.config:Config",
    claims="papers.prng.claims:claims",
    results="papers.prng.results:Results",
    run="papers.prng.run:run",
    ipu_steps="papers.prng.run:ipu_steps",
    decide="papers.prng.claims:decide",
    render="papers.prng.report:render",
    ledger="papers.prng.ledger",
)
__getattr__ = PAPER.exports  # papers.prng.Config and .Results, loaded on first use
