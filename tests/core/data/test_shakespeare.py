import re

import numpy as np
import pytest

from core.data import shakespeare
from core.data.shakespeare import (
    SPLITS,
    clean_markdown,
    evaluation_windows,
    load_shakespeare,
    play_speeches,
    plays_directory,
    sample_windows,
    speeches,
    split_of,
)


def test_corpus_is_split_by_play_deterministically():
    c = load_shakespeare()
    names = sorted(p.stem for p in plays_directory().rglob("*.md"))
    assert sum(len(v) for v in c.plays.values()) == len(names)
    for split, plays in c.plays.items():
        assert all(split_of(names.index(p)) == split for p in plays)
    assert not set(c.plays["train"]) & (set(c.plays["valid"]) | set(c.plays["test"]))
    assert "hamlet" in c.plays["train"] and len(c.plays["test"]) >= 3


def test_text_round_trips_through_the_vocabulary():
    c = load_shakespeare()
    assert c.vocab[0] == "\0" and len(set(c.vocab)) == c.vocab_size and c.vocab_size < 128
    assert c.unknown["train"] == 0
    text = c.decode(c.train)
    assert "Fair is foul, and foul is fair" in text  # Macbeth is a training play
    assert "**" not in text and "#" not in text


def test_markdown_cleaning():
    md = "# Title\n\n## ACT I\n\n_Enter WITCHES_\n\n**First Witch**  \nWhen shall we three meet again  \nIn thunder?\n"
    assert (
        clean_markdown(md)
        == "Title\n\nACT I\n\nEnter WITCHES\n\nFirst Witch\nWhen shall we three meet again\nIn thunder?\n"
    )
    assert clean_markdown("a_b snake_case") == "a_b snake_case\n"


def test_windows():
    data = (np.arange(1000) % 200).astype(np.uint8)
    w = sample_windows(data, 17, 5, np.random.default_rng(0))
    assert w.shape == (5, 17) and w.dtype == np.int32
    assert all((np.diff(row.astype(int)) % 200 == 1).all() for row in w)  # consecutive characters
    np.testing.assert_array_equal(w, sample_windows(data, 17, 5, np.random.default_rng(0)))
    e = evaluation_windows(data, 10, 1000)
    assert e.shape == (99, 10) and e[1, 0] == 10
    with pytest.raises(ValueError, match="too short"):
        sample_windows(data[:10], 17, 1, np.random.default_rng(0))


def test_play_speeches_follow_the_speaker_lines():
    md = (
        "# Title\n\n## ACT I\n\n_Enter THESEUS and HIPPOLYTA_\n\n**THESEUS**  \nNow, fair Hippolyta,  \nour hour.\n\n"
        "_Exit PHILOSTRATE_\n\nHippolyta, I woo'd thee.\n\n**HIPPOLYTA**  \n_\\[Aside]_  \nFour days.\n\n"
        "*Exeunt.*\n\n### SCENE II. A wood.\n\nNot spoken by anyone.\n\n**PUCK**  \n_Exit_\n\n**OBERON**  \nIll met.\n"
    )
    # the name is not spoken, directions are left out (and do not end a speech), a heading ends one, a speech with
    # nothing spoken is dropped
    assert play_speeches(md) == ["Now, fair Hippolyta,\nour hour.\nHippolyta, I woo'd thee.", "Four days.", "Ill met."]


@pytest.mark.parametrize("split", SPLITS)
def test_speeches_are_the_spoken_text_of_the_split(split):
    corpus = load_shakespeare()
    found = speeches(split)
    data = getattr(corpus, split)
    lengths = np.array([len(s) for s in found])
    assert all(s.dtype == np.uint8 and s.ndim == 1 for s in found) and lengths.min() >= 1
    assert max(int(s.max()) for s in found) < corpus.vocab_size
    if split == "train":
        assert all(s.min() > 0 for s in found)  # no character unseen in training
    # one speech per speaker line of the split's plays (a handful have no spoken line); most of the text is speech
    names = sorted(plays_directory().rglob("*.md"), key=lambda p: p.stem)
    speakers = sum(
        len(re.findall(r"^\*\*[^*]+\*\*[ \t]*$", p.read_text(encoding="utf-8"), flags=re.MULTILINE))
        for i, p in enumerate(names)
        if split_of(i) == split
    )
    assert 0.99 * speakers <= len(found) <= speakers
    assert 0.8 * len(data) < lengths.sum() + lengths.size < len(data)
    # every spoken line is a line of the split's text
    lines = set(corpus.decode(data).split("\n"))
    assert all(line in lines for s in found[:: max(1, len(found) // 2000)] for line in corpus.decode(s).split("\n"))
    # skewed lengths: many short speeches and a long tail
    assert np.median(lengths) < lengths.mean() and np.median(lengths) * 10 < lengths.max()
    assert np.mean(lengths < 100) > 0.5


def test_speeches_are_deterministic_and_reject_unknown_splits():
    first = speeches("test")
    shakespeare._speeches.cache_clear()
    again = speeches("test")
    assert len(first) == len(again) and all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    corpus = load_shakespeare()
    assert corpus.decode(speeches("train")[0]).startswith("Now, fair Hippolyta, our nuptial hour\nDraws on apace")
    with pytest.raises(ValueError, match="split must be one of train, valid, test, got 'dev'"):
        speeches("dev")
