"""The on-disk cache of the numba kernels (pympc/_compiling.py): keyed by every kernel source, never stale across
files, and a damaged or foreign cache is compiled again, never an error or a wrong result."""

import pathlib
import shutil
import textwrap

from conftest import python_env, run_python

from pympc import _compiling

ROOT = pathlib.Path(__file__).resolve().parents[1]

TINY = textwrap.dedent("""\
    from numba import njit


    @njit(cache=True)
    def kernel(x):
        return x * {factor} + 1.0


    from pympc._compiling import cache_by_content, kernels_stamp  # noqa: E402

    cache_by_content(globals())
    assert kernel._cache._cache_file._source_stamp[0] == kernels_stamp()
    print(kernel(2.0))
    """)


def _run(module_dir, cache_dir):
    out = run_python("-c", "import tiny_kernel", env=python_env(module_dir, NUMBA_CACHE_DIR=cache_dir))
    assert out.returncode == 0, out.stderr
    return float(out.stdout)


def test_every_kernel_file_is_in_the_key(tmp_path):
    """Changing any one kernel module changes the key of every kernel (a caller never keeps a callee's old code)."""
    pkg = ROOT / "pympc"
    kernels = {p.relative_to(pkg).as_posix() for p in pkg.rglob("*.py") if "njit" in p.read_text(encoding="utf-8")}
    assert kernels - {"cli.py", "_compiling.py", "mpec/crosscheck.py", "sweep/worker.py"} <= set(_compiling.KERNEL_FILES)
    for name in _compiling.KERNEL_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(pkg / name, tmp_path / name)
    assert _compiling.kernels_stamp(tmp_path) == _compiling.kernels_stamp()
    stamps = set()
    for name in _compiling.KERNEL_FILES:
        tree = tmp_path / f"edited_{name.replace('/', '_')}"
        for other in _compiling.KERNEL_FILES:
            (tree / other).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(pkg / other, tree / other)
        with open(tree / name, "a") as f:
            f.write("\n# edited\n")
        stamps.add(_compiling.kernels_stamp(tree))
    assert len(stamps) == len(_compiling.KERNEL_FILES) and _compiling.kernels_stamp() not in stamps


def test_a_damaged_cache_is_compiled_again(tmp_path):
    """Truncated or garbage index and data files: the kernel compiles again and gives its result, no error."""
    (tmp_path / "tiny_kernel.py").write_text(TINY.format(factor=3.0))
    cache = tmp_path / "cache"
    assert _run(tmp_path, cache) == 7.0
    files = sorted(p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc"))
    assert {p.suffix for p in files} == {".nbi", ".nbc"}
    assert _run(tmp_path, cache) == 7.0                     # loaded from the cache
    for damage in (lambda b: b[: len(b) // 2], lambda b: b"not a numba cache file" * 3):
        for p in files:
            p.write_bytes(damage(p.read_bytes()))
        assert _run(tmp_path, cache) == 7.0
        assert _run(tmp_path, cache) == 7.0                 # and the rewritten cache is read back


def test_a_kernel_whose_source_changed_is_not_read_from_the_cache(tmp_path):
    """Same function, same file name and line, another constant in its body (the same bytecode, which is all numba
    keys an entry by): the cached machine code of the old one is not used."""
    (tmp_path / "tiny_kernel.py").write_text(TINY.format(factor=3.0))
    cache = tmp_path / "cache"
    assert _run(tmp_path, cache) == 7.0
    (tmp_path / "tiny_kernel.py").write_text(TINY.format(factor=5.0))
    assert _run(tmp_path, cache) == 11.0


def _hits(module_dir, cache_dir):
    """(result, cache hits) of the tiny kernel in a fresh process, kernels cached in ``cache_dir`` (None: numba's
    default, the module's own __pycache__)."""
    code = "import tiny_kernel; print(sum(tiny_kernel.kernel.stats.cache_hits.values()))"
    out = run_python("-c", code, env=python_env(module_dir, NUMBA_CACHE_DIR=cache_dir))
    assert out.returncode == 0, out.stderr
    value, hits = out.stdout.split()
    return float(value), int(hits)


def test_the_package_cache_is_read_where_the_kernels_are_cached_elsewhere(tmp_path):
    """Kernels compiled into the package's __pycache__ (as ``pip install .`` does) are loaded when the cache
    directory is another one (NUMBA_CACHE_DIR, or the user-wide one of a read-only install); a damaged one is
    compiled again."""
    (tmp_path / "tiny_kernel.py").write_text(TINY.format(factor=3.0))
    assert _hits(tmp_path, None) == (7.0, 0)                     # compiled into tmp_path/__pycache__
    assert any((tmp_path / "__pycache__").glob("tiny_kernel.kernel-*.nbc"))
    assert _hits(tmp_path, tmp_path / "elsewhere") == (7.0, 1)   # read from the package's cache
    for p in (tmp_path / "__pycache__").glob("tiny_kernel.kernel-*.nb*"):
        p.write_bytes(b"damaged")
    assert _hits(tmp_path, tmp_path / "again") == (7.0, 0)


def test_subprocesses_of_the_tests_import_this_sessions_pympc():
    """The suite's subprocesses (conftest.run_python) run the pympc under test, and so load its compiled kernels: a
    subprocess that imported a source tree's copy instead (the working directory first on sys.path) would test
    other code and compile that copy's kernels for a minute."""
    import pympc

    out = run_python("-c", "import pympc; print(pympc.__file__)")
    assert out.returncode == 0, out.stderr
    assert pathlib.Path(out.stdout.strip()).resolve() == pathlib.Path(pympc.__file__).resolve()
