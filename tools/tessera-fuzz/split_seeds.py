"""Writes each `// -----` section of the given .mlir files as one seed file."""

import hashlib
import pathlib
import re
import sys


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[2:]:
        path = pathlib.Path(name)
        if not path.is_file():
            continue
        text = path.read_text()
        for section in re.split(r"^// -----.*$", text, flags=re.M):
            body = "\n".join(
                line for line in section.splitlines()
                if not line.lstrip().startswith("// RUN")
            ).strip()
            if not body:
                continue
            digest = hashlib.sha1(body.encode()).hexdigest()[:16]
            (out / f"seed-{digest}.mlir").write_text(body + "\n")


if __name__ == "__main__":
    main()
