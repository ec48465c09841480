"""chainrule_course.pages.glue.glue: what a chapter's cell glues is what the page's prose prints."""

import sys

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from chainrule_course.pages.glue import glue


def glued_text(name, value):
    """The text/plain that myst-nb would read from the cell's output."""
    InteractiveShell.instance()
    with capture_output() as captured:
        assert glue(name, value) is value
    [output] = captured.outputs
    assert output.metadata["scrapbook"]["name"] == name
    [text] = [text for mime, text in output.data.items() if mime.endswith("text/plain")]
    return text


def test_a_numpy_scalar_is_glued_as_the_python_number_it_holds():
    assert glued_text("ratio", np.float64(1.5)) == "1.5"  # not np.float64(1.5), which no format spec reads
    assert glued_text("count", np.int64(1_001_500)) == "1001500"
    assert glued_text("name", "float32") == "'float32'"


def test_nothing_else_can_be_glued():
    with pytest.raises(TypeError, match=r"glue\('shape'\): expected a number or a string, got tuple"):
        glue("shape", (2, 3))
    with pytest.raises(TypeError, match="the name must be a non-empty string"):
        glue("", 1.0)


def test_without_myst_nb_glue_does_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # import myst_nb raises ImportError, as on Colab
    with capture_output() as captured:
        assert glue("ratio", 2.0) == 2.0
    assert not captured.outputs
