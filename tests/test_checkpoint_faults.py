"""Checkpoint saves that fail (issue 18, item 8): a read-only or full location.

Every failure raises the OSError class the system gave, with a message that
names the checkpoint's path; any previous file at that path keeps its bytes,
no temporary file is left behind, and the model is unchanged.
"""

from __future__ import annotations

import errno
import os
import stat

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber import serialization


@pytest.fixture
def model(make_data):
    model = RenewableHuberRegressor(backend="numpy")
    for k in range(2):
        X, y, _ = make_data(n=80, p=3, outliers=2, shift=0.2 * k)
        model.partial_fit(X, y)
    return model


def _state_bits(model):
    state = model.state_dict()
    return {key: (value.tobytes() if isinstance(value, np.ndarray) else value) for key, value in state.items()}


def _after_one_more_batch(model, make_data):
    X, y, _ = make_data(n=80, p=3, outliers=2, shift=1.0)
    model.partial_fit(X, y)
    return model


class FailingWrites:
    """A file whose writes fail with ENOSPC once ``allowed`` bytes were written."""

    def __init__(self, handle, allowed: int) -> None:
        self._handle = handle
        self._left = allowed
        self.failed = False

    def write(self, data) -> int:
        data = bytes(data)
        if len(data) > self._left:
            self._handle.write(data[: self._left])
            self._left = 0
            self.failed = True
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._left -= len(data)
        return self._handle.write(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._handle.close()


@pytest.mark.parametrize("allowed", [0, 100, 600])
def test_a_full_disk_midway_keeps_the_previous_file(model, make_data, tmp_path, monkeypatch, allowed):
    path = model.save(tmp_path / "model.npz")
    previous = path.read_bytes()
    assert len(previous) > allowed + 100  # the write fails midway, not after the end
    _after_one_more_batch(model, make_data)
    before = _state_bits(model)
    real_fdopen = os.fdopen
    opened = []

    def fdopen(descriptor, *args, **kwargs):
        opened.append(FailingWrites(real_fdopen(descriptor, *args, **kwargs), allowed))
        return opened[-1]

    monkeypatch.setattr(serialization.os, "fdopen", fdopen)
    with pytest.raises(OSError) as caught:
        model.save(path)
    assert opened and opened[0].failed
    assert caught.value.errno == errno.ENOSPC
    assert str(path) in str(caught.value) and "No space left on device" in str(caught.value)
    assert "previous file there is unchanged" in str(caught.value)
    assert path.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]
    assert _state_bits(model) == before
    monkeypatch.undo()
    assert RenewableHuberRegressor.load(path).state_.batch_count == 2
    assert RenewableHuberRegressor.load(model.save(path)).state_.batch_count == 3


def test_a_full_disk_for_a_new_file_leaves_nothing(model, tmp_path, monkeypatch):
    real_fdopen = os.fdopen
    monkeypatch.setattr(serialization.os, "fdopen", lambda fd, *a, **k: FailingWrites(real_fdopen(fd, *a, **k), 50))
    with pytest.raises(OSError, match="nothing was written") as caught:
        model.save(tmp_path / "new.npz")
    assert caught.value.errno == errno.ENOSPC and "new.npz" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_refuses_new_files_keeps_the_previous_file(model, make_data, tmp_path, monkeypatch):
    """The temporary file cannot be created (as in a read-only directory, for
    any user: the refusal is injected where the file is created)."""
    path = model.save(tmp_path / "model.npz")
    previous = path.read_bytes()
    _after_one_more_batch(model, make_data)
    before = _state_bits(model)

    def refuse(*args, dir=None, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.path.join(dir, ".model.npz.x.tmp"))

    monkeypatch.setattr(serialization.tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as caught:
        model.save(path)
    assert str(path) in str(caught.value) and "Permission denied" in str(caught.value)
    assert ".tmp" not in str(caught.value)  # the user's path, not the temporary one
    assert path.read_bytes() == previous
    assert _state_bits(model) == before


def test_a_read_only_directory_keeps_the_previous_file(model, make_data, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = model.save(folder / "model.npz")
    previous = path.read_bytes()
    _after_one_more_batch(model, make_data)
    before = _state_bits(model)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        probe = folder / "probe"
        try:
            probe.touch()
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip("this user writes into read-only directories (root); the injected refusal above covers it")
        with pytest.raises(PermissionError) as caught:
            model.save(path)
        assert str(path) in str(caught.value)
        assert path.read_bytes() == previous
        assert sorted(p.name for p in folder.iterdir()) == ["model.npz"]
        assert _state_bits(model) == before
    finally:
        folder.chmod(stat.S_IRWXU)
