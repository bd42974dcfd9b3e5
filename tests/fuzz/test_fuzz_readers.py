"""Issue 21's fuzz suite, bounded and seeded (derandomized Hypothesis): every reader (stack
YAML and JSON, base plans, stack outputs, kubeconfigs, workload profiles, smoke histories, host
reports) gets mutated seeds from tests/fuzz/corpus and must answer each with exit 0, 1 (a check
that ran and failed, e.g. `advise` with no candidate) or 2, never 3, never a traceback, and
change nothing: not the file it read, nor anything beside it. Each case's time is recorded (the
long run, benchmarks/fuzz_readers.py, reports it against the 2 s budget); no timing is
asserted. `make test` runs EXAMPLES cases per reader."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import READERS, Mutation, run_case, seeds

EXAMPLES = 12
TIMES: dict[str, list[float]] = {}

mutations = st.lists(st.builds(
    Mutation, st.sampled_from(("insert", "insert", "replace-line", "delete", "duplicate",
                               "truncate", "crlf", "flip", "json-set", "json-set", "json-drop",
                               "json-dup")),
    st.floats(0, 1, exclude_max=True), st.floats(0, 1), st.integers(0, 10_000)),
    min_size=1, max_size=4)


@pytest.mark.parametrize("reader", READERS)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), edits=mutations)
def test_every_reader_refuses_hostile_input_with_exit_2(reader: str, data: st.DataObject,
                                                        edits: list[Mutation]) -> None:
    seed = data.draw(st.sampled_from(seeds(reader)))
    with tempfile.TemporaryDirectory(prefix="accelfleet-fuzz-") as tmp:
        outcome = run_case(reader, seed, edits, Path(tmp))
    TIMES.setdefault(reader, []).append(outcome.seconds)
    assert outcome.code in (0, 1, 2), outcome.output
    assert not outcome.traceback, outcome.output
    assert outcome.changed == [], (outcome.changed, outcome.output)


@pytest.mark.parametrize("reader", READERS)
def test_each_seed_is_read_as_it_is(reader: str, tmp_path: Path) -> None:
    """The unmutated seeds are valid input (exit 0), so that the mutations start from
    something every reader accepts."""
    for seed in seeds(reader):
        work = tmp_path / seed.stem
        work.mkdir()
        outcome = run_case(reader, seed, [], work)
        assert outcome.code == 0, outcome.output


def test_the_mutations_are_seeded() -> None:
    from tests.fuzz.harness import mutate, random_mutations

    seed = seeds("stack")[0]
    one = [mutate(seed, random_mutations(random.Random(7), json_doc=False)) for _ in range(3)]
    two = [mutate(seed, random_mutations(random.Random(7), json_doc=False)) for _ in range(3)]
    assert one == two


# Cases the long run found (benchmarks/fuzz_readers.py --seed S), replayed here for good.
FOUND = [
    # seed 22, case 6817: `expect` a list of nulls reached the JUnit writer as exit 3
    ("host", "recorded-node.json", [Mutation("json-set", 0.007134915094877181,
                                             0.3332919695445876, 6834)]),
]


@pytest.mark.parametrize(("reader", "seed_name", "edits"), FOUND)
def test_each_case_the_long_run_found_is_refused(reader: str, seed_name: str,
                                                 edits: list[Mutation], tmp_path: Path) -> None:
    seed = next(s for s in seeds(reader) if s.name == seed_name)
    outcome = run_case(reader, seed, edits, tmp_path)
    assert outcome.code in (0, 1, 2) and not outcome.traceback, outcome.output
