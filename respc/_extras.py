"""How to install an optional part of respc, in words that work where respc came from.

respc is installed from its checkout (it is not on PyPI), so asking pip for the extra of the
distribution by name fails anywhere else; a hint names the extra as the checkout installs it and the packages it brings.
`PACKAGES` mirrors `pyproject.toml`'s extras (tests/package checks that it does).
"""

from __future__ import annotations

__all__ = ["PACKAGES", "install_hint"]

PACKAGES = {
    "compiler": ("jinja2", "black"),
    "authoring": ("jinja2>=3.1.6", "black"),
    "tokenizers": ("tokenizers",),
    "parquet": ("pyarrow",),
    "ray": ("ray[data]", "pyarrow", "aiohttp"),
    "datasets": ("datasets", "pyarrow"),
    "serve": ("starlette", "uvicorn"),
}


def install_hint(extra: str) -> str:
    """`pip install '.[extra]'` in the checkout, or the packages themselves."""
    packages = " ".join(f"'{p}'" if "[" in p or ">" in p else p for p in PACKAGES[extra])
    return f"pip install '.[{extra}]' in respc's checkout, or pip install {packages}"
