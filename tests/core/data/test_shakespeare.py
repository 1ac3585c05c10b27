import numpy as np
import pytest

from core.data.shakespeare import (
    clean_markdown,
    evaluation_windows,
    load_shakespeare,
    plays_directory,
    sample_windows,
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
