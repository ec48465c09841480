"""What every drill kind of the registry owes a reader, a new kind included: questions that do not repeat
(40 different ones in 100 seeds, at every level)."""

from chainrule_course.drills import KINDS, Question, question

DIFFERENT = 40  # different questions at least, in the first 100 seeds of each kind and level
LEVELS = [(kind, level) for kind in KINDS for level in KINDS[kind].levels]


def shown(q):
    """The question as a reader sees it: the prompt and the instance in words (a graph's, for the graph kinds)."""
    lines = q.graph.description() if isinstance(q, Question) else q.lines
    return (q.prompt, *lines)


def test_every_kind_and_level_offers_40_different_questions_in_100_seeds():
    counts = {(kind, level): len({shown(question(kind, level, seed)) for seed in range(100)}) for kind, level in LEVELS}
    table = "\n".join(f"{kind:12} {level}  {n}/100" for (kind, level), n in counts.items())
    few = [f"{kind} level {level}: {n}" for (kind, level), n in counts.items() if n < DIFFERENT]
    assert not few, f"fewer than {DIFFERENT} different questions in 100 seeds: {few}\n{table}"
