"""kiln.tune: the progress lines of `kiln tune`, a log that kiln.compile(tuning_log=) applies."""

import pytest

import kiln
from conftest import assert_close


def test_tune_then_compile_with_log(tiny_cnn, tmp_path, capsys):
    path, x, expected = tiny_cnn
    log = tmp_path / "tiny_cnn.json"
    assert kiln.tune(path, log=log, trials=2) == str(log)
    out = capsys.readouterr().out
    assert f"{path}: " in out and "tuning task" in out and "trials each" in out
    assert "[1/" in out and "GFLOPS" in out
    assert log.read_text().strip()
    m = kiln.compile(path, tuning_log=log)
    assert any("tuned schedules applied to" in note for note in m.notes), m.notes
    assert_close(m.run({"input": x})[0], expected)


def test_tune_errors(tiny_cnn, tmp_path):
    with pytest.raises(kiln.KilnError, match="trials must be at least 1"):
        kiln.tune(tiny_cnn[0], log=tmp_path / "log.json", trials=0)
    with pytest.raises(kiln.KilnError, match="no directory"):
        kiln.tune(tiny_cnn[0], log=tmp_path / "missing" / "log.json", trials=1)
