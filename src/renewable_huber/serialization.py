"""The checkpoint codec: compressed ``.npz`` (format v3; v2 and v1 readable), no pickle.

A checkpoint holds exactly ``coefficients`` (d), ``information`` (d x d) in the
model dtype, ``metadata``, a 0-d unicode array of JSON, and from format 3 on
``meat`` (d x d) when the stream tracks it (amendment 0003; absent when the
model has ``inference=False`` or its meat is unknown: a stream resumed from
a format 2 file). Every decoding failure maps to one documented
ValidationError message (spec/API.md, "Checkpoints"); files are written to
a temporary name and renamed.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from .config import PARAMETER_NAMES
from .exceptions import ValidationError
from .state import RenewableHuberState

FORMAT_VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)
ARRAY_KEYS = frozenset({"coefficients", "information", "metadata"})
#: format 3 adds the meat, when it is known
OPTIONAL_ARRAY_KEYS = frozenset({"meat"})

CORRUPTED = "Invalid or corrupted renewable-huber checkpoint"
UNSUPPORTED = "Unsupported renewable-huber checkpoint format"
BAD_CONFIG = "Invalid renewable-huber checkpoint configuration"


@dataclass
class CheckpointPayload:
    config: dict[str, Any]
    state: RenewableHuberState
    feature_names: Optional[list]
    converged_batches: Optional[int] = None


def write_checkpoint(path: "os.PathLike[str] | str", state_dict: Mapping[str, Any]) -> Path:
    """Write ``state_dict`` (from the estimator) to exactly ``path``, atomically.

    The file is written under a temporary name in the same directory, flushed
    to disk and renamed over ``path`` (``os.replace``), so a reader sees the
    previous file or the new one, never part of one. A failure (a read-only
    or full location, an interrupted write) raises the OSError's own class
    with a message naming ``path`` and leaves any previous file there intact.
    """
    target = Path(path)
    metadata = {
        "format_version": FORMAT_VERSION,
        "config": state_dict["config"],
        "n_samples_seen": state_dict["n_samples_seen"],
        "batch_count": state_dict["batch_count"],
        "previous_lambda": state_dict["previous_lambda"],
        "n_features_in": state_dict["n_features_in"],
        "fit_intercept": state_dict["fit_intercept"],
        "weight_sum": state_dict["weight_sum"],
        "feature_names_in": state_dict["feature_names_in"],
        "converged_batches": state_dict.get("converged_batches"),
    }
    temporary = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        arrays = {"coefficients": np.ascontiguousarray(state_dict["coefficients"]),
                  "information": np.ascontiguousarray(state_dict["information"])}
        if state_dict.get("meat") is not None:
            arrays["meat"] = np.ascontiguousarray(state_dict["meat"])
        with os.fdopen(descriptor, "wb") as handle:
            np.savez_compressed(handle, **arrays, metadata=np.array(json.dumps(metadata, allow_nan=False)))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
        temporary = None
        _sync_directory(target.parent)
    except OSError as exc:
        raise _write_error(exc, target) from exc
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
    return target


def _write_error(error: OSError, target: Path) -> OSError:
    """The same OSError class (PermissionError, ...), its errno, and a message that names the checkpoint."""
    reason = error.strerror or str(error)
    kept = "the previous file there is unchanged" if target.exists() else "nothing was written"
    message = f"cannot write the checkpoint {str(target)!r}: {reason}; {kept}"
    if error.errno is None:
        return type(error)(message)
    return type(error)(error.errno, message)


def _sync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX); a platform that cannot open a directory skips it."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def read_checkpoint(path: "os.PathLike[str] | str") -> CheckpointPayload:
    """Decode a checkpoint; FileNotFoundError when absent, ValidationError when bad."""
    source = Path(path)
    if not source.exists():
        raise FileNotFoundError(f"No such checkpoint: '{source}'")
    try:
        # Our own handle: np.load(path) can leave its file open when a
        # truncated archive fails half-way through.
        with open(source, "rb") as handle:
            archive = np.load(handle, allow_pickle=False)
            if not isinstance(archive, np.lib.npyio.NpzFile):  # a bare .npy array, not an archive
                raise ValueError("not an npz archive")
            with archive:
                if not ARRAY_KEYS <= set(archive.files) <= ARRAY_KEYS | OPTIONAL_ARRAY_KEYS:
                    raise ValueError("unexpected arrays")
                coefficients = archive["coefficients"]
                information = archive["information"]
                meat = archive["meat"] if "meat" in archive.files else None
                raw_metadata = archive["metadata"]
        if raw_metadata.shape != () or raw_metadata.dtype.kind != "U":
            raise ValueError("metadata is not a 0-d string")
        metadata = json.loads(str(raw_metadata))
        if not isinstance(metadata, dict):
            raise ValueError("metadata is not an object")
        for array in (coefficients, information, meat):
            if array is not None and array.dtype.kind != "f":
                raise ValueError("arrays must be floating point")
    except Exception as exc:  # any decode failure: zip, zlib, npy header, JSON, ...
        raise ValidationError(CORRUPTED) from exc
    if meat is not None and metadata.get("format_version") in (1, 2):
        raise ValidationError(CORRUPTED)  # a format older than the meat cannot hold one
    return _payload_from_metadata(metadata, coefficients, information, meat)


def payload_from_state_dict(state_dict: Mapping[str, Any]) -> CheckpointPayload:
    """The same decoding and checks for an in-memory ``state_dict()``."""
    if not isinstance(state_dict, Mapping):
        raise ValidationError(CORRUPTED)
    metadata = dict(state_dict)
    metadata["format_version"] = FORMAT_VERSION
    try:
        coefficients = np.asarray(metadata.pop("coefficients"))
        information = np.asarray(metadata.pop("information"))
        meat = metadata.pop("meat", None)  # a state dict of a version without inference has none
        meat = None if meat is None else np.asarray(meat)
        for array in (coefficients, information, meat):
            if array is not None and array.dtype.kind not in "fiu":
                raise ValueError("arrays must be numeric")
    except (KeyError, ValueError, TypeError) as exc:
        raise ValidationError(CORRUPTED) from exc
    return _payload_from_metadata(metadata, coefficients, information, meat)


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("expected an integer")
    return value


def _real(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a number")
    try:
        return float(value)
    except OverflowError:  # an integer past float64: infinite, refused by name in state.validate()
        return math.inf if value > 0 else -math.inf


def _payload_from_metadata(metadata: dict, coefficients: np.ndarray, information: np.ndarray,
                           meat: Optional[np.ndarray]) -> CheckpointPayload:
    version = metadata.get("format_version")
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise ValidationError(UNSUPPORTED)
    config = metadata.get("config")
    if not isinstance(config, Mapping) or not set(config) <= set(PARAMETER_NAMES):
        raise ValidationError(BAD_CONFIG)
    try:
        fit_intercept = metadata["fit_intercept"]
        if not isinstance(fit_intercept, bool):
            raise ValueError("fit_intercept must be a boolean")
        n_samples_seen = _integer(metadata["n_samples_seen"])
        weight_sum: Optional[float]
        converged = metadata.get("converged_batches") if version >= 3 else None
        if converged is not None:
            converged, batches = _integer(converged), _integer(metadata["batch_count"])
            if converged < 0 or 0 <= batches < converged:  # (a negative batch_count is refused by name later)
                raise ValueError("converged_batches must be between 0 and batch_count")
        if version == 1:
            weight_sum, names = None, None
        else:
            raw_weight = metadata.get("weight_sum")
            weight_sum = None if raw_weight is None else _real(raw_weight)
            names = metadata.get("feature_names_in")
            if names is not None and not isinstance(names, list):
                raise ValueError("feature names must be a list")
        previous_lambda = _real(metadata["previous_lambda"])
        state = RenewableHuberState(
            coefficients=coefficients,
            information=information,
            n_samples_seen=n_samples_seen,
            batch_count=_integer(metadata["batch_count"]),
            previous_lambda=previous_lambda,
            n_features_in=_integer(metadata["n_features_in"]),
            fit_intercept=fit_intercept,
            weight_sum=weight_sum,
            meat=meat,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise ValidationError(CORRUPTED) from exc
    return CheckpointPayload(config=dict(config), state=state, feature_names=names, converged_batches=converged)
