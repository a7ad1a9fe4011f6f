"""The notebook runs top to bottom (so it never rots)."""

import nbformat
import pytest
from conftest import ROOT, python_env

nbclient = pytest.importorskip("nbclient")


def executed_outputs(name):
    """Execute ``notebooks/<name>`` in its folder; the text of every code cell's outputs."""
    path = ROOT / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute(env=python_env())          # the kernel imports the pympc under test
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_cross_slide_notebook_executes():
    outputs = executed_outputs("cross_slide.ipynb")
    assert "SLIP_STOP" in outputs and "AGREE" in outputs


def test_design_notebook_executes():
    """The experiment-design notebook: maps, singular verdicts, and the designed experiments fitted."""
    outputs = executed_outputs("design.ipynb")
    assert "never breaks away" in outputs and "only the combination" in outputs
    assert outputs.count("fitted se") == 4


def test_optimal_control_notebook_executes():
    """The FESD optimal-control notebook: solved, verified by simulation, below the bang-bang baseline."""
    outputs = executed_outputs("optimal_control.ipynb")
    assert "solve ok: True" in outputs and "sticks at the target" in outputs and "% less" in outputs
