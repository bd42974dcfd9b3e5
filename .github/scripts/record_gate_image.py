#!/usr/bin/env python3
"""Record a published gate image in fleet/catalog/data/gate_images.yaml (release.yml, after the
image was pushed and pulled anonymously): one entry `{version, image, digest}` appended to
`published`, the file's comments kept. An entry of that version and image already there is
left as it is (a re-run); the same version and image with another digest is refused (a tag
pushed twice: look before recording).

    python3 .github/scripts/record_gate_image.py 0.1.0 ghcr.io/acme/accelfleet-gate sha256:...
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FILE = Path("fleet/catalog/data/gate_images.yaml")
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
IMAGE = re.compile(r"^[a-z0-9.-]+(?::\d+)?(?:/[a-z0-9._-]+)+$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
ENTRY = re.compile(r'^  - \{version: "([^"]+)", image: "([^"]+)", digest: "([^"]+)"\}$')


def record(path: Path, version: str, image: str, digest: str) -> str:
    """The file's new text; ValueError for a bad argument or a conflicting entry."""
    for what, value, form in (("version", version, VERSION), ("image", image, IMAGE),
                              ("digest", digest, DIGEST)):
        if not form.match(value):
            raise ValueError(f"{what} {value!r} is not of the form {form.pattern}")
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    for line in lines:
        m = ENTRY.match(line)
        if m and (m[1], m[2]) == (version, image):
            if m[3] != digest:
                raise ValueError(f"{image} {version} is recorded with digest {m[3]}, not "
                                 f"{digest}: the tag was pushed twice")
            return text
    entry = f'  - {{version: "{version}", image: "{image}", digest: "{digest}"}}'
    if "published: []" in lines:
        i = lines.index("published: []")
        lines[i:i + 1] = ["published:", entry]
    elif "published:" in lines:
        i = lines.index("published:") + 1
        while i < len(lines) and lines[i].startswith("  - "):
            i += 1
        lines.insert(i, entry)
    else:
        raise ValueError(f"{path} has no `published:` list")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[4]) if len(argv) == 5 else FILE
    try:
        new = record(path, argv[1], argv[2], argv[3])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path.write_text(new, encoding="utf-8")
    print(f"recorded {argv[2]}:v{argv[1]}@{argv[3]} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
