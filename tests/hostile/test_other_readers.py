"""Item 10: every other file accelfleet reads is checked against its schema at the boundary and
refused with exit 2 and a message naming the field (base plans, stack outputs, kubeconfigs,
workload profiles); item 14: reading a history never writes, and a file that is not an
accelfleet history is refused, untouched. Each case was exit 3 (or a write) before."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from tests.hostile.conftest import ROOT, invoke, refused

BASE_PLANS = {
    "resource-not-a-mapping": ({"resources": [1]}, "resources[0]: must be a mapping"),
    "resource-type-a-number": ({"resources": [{"type": 1, "name": "x"}]},
                               "resources[0].type: must be text"),
    "pool-without-name": ({"resources": [], "pools": [{"nodes": 1}]},
                          "pools[0].name: is required"),
    "teams-not-a-list": ({"resources": [], "teams": "abc"}, "teams: must be a list"),
    "nodes-as-text": ({"resources": [], "pools": [{"name": "h100", "nodes": "x"}]},
                      "pools[0].nodes: must be a whole number"),
    "stack-a-mapping": ({"resources": [], "stack": {"a": 1}}, "stack: must be text"),
}


@pytest.mark.parametrize("case", sorted(BASE_PLANS))
def test_a_base_plan_of_the_wrong_shape_is_refused(case: str, tmp_path: Path) -> None:
    doc, says = BASE_PLANS[case]
    base = tmp_path / "base.json"
    base.write_text(json.dumps(doc), encoding="utf-8")
    refused(*invoke("plan", "--diff", str(base)), "is not an `accelfleet plan --json` document",
            says)


def test_a_base_plan_with_a_huge_integer_or_nan_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text('{"resources": [], "x": ' + "9" * 5000 + "}", encoding="utf-8")
    refused(*invoke("plan", "--diff", str(base)), "a value JSON readers refuse")
    base.write_text('{"resources": [], "x": NaN}', encoding="utf-8")
    refused(*invoke("plan", "--diff", str(base)), "NaN is not a JSON number")


def _outputs(tmp_path: Path, change: dict[str, object]) -> Path:
    from fleet import load_fleet
    from fleet.inventory import build_inventory

    inv = build_inventory(load_fleet(str(ROOT / "stacks" / "Pulumi.example.yaml")), "example")
    doc = json.loads(json.dumps(inv.to_dict()))
    doc["pools"][0].update(change)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"inventory": doc}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "says"), [
    ({"nodes": [2]}, "pools[0].nodes: must be a whole number"),
    ({"tolerations": [{"key": 1}]}, "pools[0].tolerations[0].key: must be text"),
    ({"node_selector": "x"}, "pools[0].node_selector: must be a mapping"),
    ({"devices_per_node": -8}, "a count outside"),
    ({"name": None}, "pools[0].name: must be text"),
])
def test_stack_outputs_with_wrongly_typed_fields_are_refused(change: dict[str, object],
                                                             says: str, tmp_path: Path) -> None:
    path = _outputs(tmp_path, change)
    refused(*invoke("smoke", "render", "--outputs", str(path)), "malformed inventory", says)


def test_a_kubeconfig_that_is_not_yaml_is_refused() -> None:
    from fleet.errors import AccelfleetError
    from smoke.cluster.access import ClusterRef, connect

    ref = ClusterRef("gke", "gcp", "us-central1", "acme")
    for text in ("{{{ not: [yaml", "just text", "- 1\n- 2\n", "apiVersion: v1\nclusters: 7\n"):
        with pytest.raises(AccelfleetError, match="kubeconfig cannot be used") as err:
            connect([ref], kubeconfig=Path("/nonexistent/kubeconfig"),
                    outputs_kubeconfigs={"gke": text}, check=False)
        assert err.value.exit_code == 2


def test_a_kubeconfig_path_that_is_a_device_is_refused() -> None:
    from fleet.errors import InputError
    from smoke.cluster.access import ClusterRef, connect

    with pytest.raises(InputError, match="character device, not a regular file"):
        connect([ClusterRef("gke", "gcp")], kubeconfig=Path("/dev/zero"), check=False)


WORKLOAD = """kind: training
model: {layers: 32, hidden_size: 4096, attention_heads: 32, vocab_size: 128256}
sequence_length: 8192
global_batch_sequences: 512
tokens: 1.6e11
"""


@pytest.mark.parametrize(("old", "new", "says"), [
    ("layers: 32", "layers: " + "9" * 400, "is beyond any workload"),
    ("8192", "9" * 5000, "holds a value that cannot be read"),
    ("model: {", "model: {parameters: 1.0e308, ", "is beyond any workload"),
    ("128256", "1" + "0" * 300, "is beyond any workload"),
    ("tokens: 1.6e11", "tokens: .nan", "tokens"),
    ("tokens: 1.6e11", 'tokens: !!float "x"', "holds a value that cannot be read"),
])
def test_workload_numbers_beyond_float_range_are_refused(old: str, new: str, says: str,
                                                         tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(WORKLOAD.replace(old, new), encoding="utf-8")
    code, output = invoke("advise", "--workload", str(path), "--catalog", "--json")
    refused(code, output, says)
    assert "Infinity" not in output and "NaN" not in output


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _other_app_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('keep me')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("make", ["other-app", "empty-file", "our-version-wrong-tables",
                                  "damaged-row"])
@pytest.mark.parametrize("command", [("smoke", "history"), ("advise", "--workload",
                                                            "llama3-8b-pretrain", "--catalog")])
def test_reading_a_history_never_writes_and_refuses_another_schema(
        make: str, command: tuple[str, ...], tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    if make == "other-app":
        _other_app_db(path)
        says = "another application (tables notes)"
    elif make == "empty-file":
        path.write_bytes(b"")
        says = "holds no runs"
    elif make == "our-version-wrong-tables":
        _other_app_db(path)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA user_version = 1")
        conn.close()
        says = "table `runs` lacks"
    else:
        from smoke.history import History

        with History.open(path):
            pass
        conn = sqlite3.connect(path)
        conn.execute("INSERT INTO runs VALUES (1, 'r1', 'local', 's', 't', 1.0, 'v', 1, 't')")
        conn.execute("INSERT INTO results VALUES (1, '', 'p', 'n', 'a', 'd', 'matmul_tflops', "
                     "2, 'TFLOP/s', 'lots', NULL, NULL, 'pass', 'torch')")
        conn.commit()
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.close()
        says = "damaged result"
    before = _digest(path)
    siblings = sorted(p.name for p in tmp_path.iterdir())
    code, output = invoke(*command, "--history", str(path))
    refused(code, output, says)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings  # no -wal, no -shm


def test_markup_in_a_history_unit_is_shown_as_typed(tmp_path: Path) -> None:
    """Found by the long fuzz run (case 5738 of seed 21): Rich markup in a unit crashed
    `smoke history`."""
    from smoke.history import History

    path = tmp_path / "history.sqlite"
    with History.open(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO runs VALUES (1, 'r1', 'local', 's', 't', 1.0, 'v', 1, 't')")
    conn.execute("INSERT INTO results VALUES (1, '', 'p', 'n[b]', 'a', 'd', 'matmul_tflops', "
                 "2, '[red]x[/blue]', 800.0, NULL, NULL, 'pass', 'torch')")
    conn.commit()
    conn.close()
    code, out = invoke("smoke", "history", "--history", str(path))
    assert code == 0, out
    assert "[red]x[/blue]" in out


def test_every_unusable_cluster_is_named_in_one_go(tmp_path: Path) -> None:
    """Item 8 (part): two clusters without a kubeconfig context are both named."""
    from fleet.errors import SetupError
    from smoke.cluster.access import ClusterRef, connect

    refs = [ClusterRef("ml-gke", "gcp", "us-central1", "acme"),
            ClusterRef("ml-eks", "aws", "us-east-1")]
    with pytest.raises(SetupError) as err:
        connect(refs, kubeconfig=tmp_path / "missing", check=False)
    assert "2 of 2 clusters cannot be used" in err.value.message
    assert "cluster ml-gke:" in err.value.message and "cluster ml-eks:" in err.value.message
