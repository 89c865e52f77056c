"""deploy/spack, without Spack (it is not installable where CI runs).

The recipe is parsed (it must be valid Python), and every directive it
calls, every package it depends on and every variant it asks of one is
compared with what was checked by hand against Spack's package API and the
spack/spack-packages builtin repository (commit 1e8cf059, 2026-07-01). A
new dependency or variant fails here until someone checks it there and
adds it below.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "deploy" / "spack" / "spack_repo" / "stagehand" / "packages" / "stagehand" / "package.py"

# Directives of Spack's package API (spack.package) the recipe may call in
# its class body.
DIRECTIVES = {"license", "version", "variant", "depends_on", "extends", "when", "maintainers"}

# Each dependency the recipe names, with the variants it asks of it, as
# checked in spack-packages: rust (versions to 1.96.0), c (the compiler
# virtual), llvm (variant clang), pkgconfig (virtual, pkgconf provides it),
# mpi (virtual; providers set spec["mpi"].mpicc), hdf5 (1.10 to 2.1.0),
# libzmq (4.x), python, py-maturin (to 1.13.1), py-pip, py-numpy.
CHECKED = {
    "rust": set(),
    "c": set(),
    "llvm": {"clang"},
    "pkgconfig": set(),
    "mpi": set(),
    "hdf5": set(),
    "libzmq": set(),
    "python": set(),
    "py-maturin": set(),
    "py-pip": set(),
    "py-numpy": set(),
}


def class_body_calls(tree: ast.Module) -> list[ast.Call]:
    """The calls made while the class body runs (directives), not in its methods."""
    (stagehand,) = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    calls = []
    for statement in stagehand.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls += [node for node in ast.walk(statement) if isinstance(node, ast.Call)]
    return calls


def spec_name_and_variants(spec: str) -> tuple[str, set[str]]:
    """'llvm+clang' -> ('llvm', {'clang'}); 'hdf5@1.10:2.2' -> ('hdf5', set())."""
    name = spec
    for mark in "@+~ ":
        name = name.split(mark)[0]
    variants = {part.split("@")[0].split("~")[0] for part in spec.split("+")[1:]}
    return name, variants


def test_the_recipe_is_a_package_class_using_only_spack_directives():
    tree = ast.parse(RECIPE.read_text(), filename=str(RECIPE))
    (stagehand,) = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    assert stagehand.name == "Stagehand"
    assert [base.id for base in stagehand.bases if isinstance(base, ast.Name)] == ["Package"]
    called = {call.func.id for call in class_body_calls(tree) if isinstance(call.func, ast.Name)}
    assert called <= DIRECTIVES, f"not a checked directive: {called - DIRECTIVES}"
    methods = {node.name for node in stagehand.body if isinstance(node, ast.FunctionDef)}
    assert {"install", "setup_build_environment"} <= methods


def test_every_dependency_and_variant_the_recipe_names_was_checked_in_spack_packages():
    tree = ast.parse(RECIPE.read_text(), filename=str(RECIPE))
    named: dict[str, set[str]] = {}
    for call in class_body_calls(tree):
        if isinstance(call.func, ast.Name) and call.func.id in {"depends_on", "extends"}:
            spec = call.args[0]
            assert isinstance(spec, ast.Constant), ast.unparse(call)
            name, variants = spec_name_and_variants(spec.value)
            named.setdefault(name, set()).update(variants)
    assert set(named) == set(CHECKED), f"unchecked: {set(named) - set(CHECKED)}; gone: {set(CHECKED) - set(named)}"
    for name, variants in named.items():
        assert variants <= CHECKED[name], f"{name}: variants {variants - CHECKED[name]} not checked"


def test_the_recipe_asks_for_the_rust_the_workspace_needs():
    tree = ast.parse(RECIPE.read_text(), filename=str(RECIPE))
    rust = [c.args[0].value for c in class_body_calls(tree)
            if isinstance(c.func, ast.Name) and c.func.id == "depends_on" and c.args[0].value.startswith("rust@")]
    workspace = (REPO / "Cargo.toml").read_text()
    (line,) = [l for l in workspace.splitlines() if l.startswith("rust-version")]
    version = line.split('"')[1]
    assert rust == [f"rust@{version}:"]
