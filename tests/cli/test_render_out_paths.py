"""Issue 30: `smoke render --out` onto a symbolic link to nowhere, or under a file, exits 2 with
a sentence (it used to exit 3 from mkdir)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from fleet.stack.read import EXAMPLE_STACK


@pytest.mark.parametrize(("make", "says"), [
    (lambda d: (d / "out").symlink_to(d / "nowhere" / "x") or d / "out", "symbolic link"),
    (lambda d: (d / "afile").write_text("x") and d / "afile" / "sub", "is a file"),
    (lambda d: (d / "afile").write_text("x") and d / "afile", "is a file"),
])
def test_render_out_onto_what_cannot_be_a_directory_exits_2(tmp_path: Path, make: object,
                                                            says: str) -> None:
    out = make(tmp_path)  # type: ignore[operator]
    result = CliRunner().invoke(app, ["smoke", "render", str(EXAMPLE_STACK), "--out",
                                      str(out)])
    assert result.exit_code == 2, result.output
    assert says in result.output and "internal error" not in result.output
