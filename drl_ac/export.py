"""Exported policies usable without this project (and, for ONNX, without PyTorch).

Works for any ``torch.nn.Module`` mapping a float32 observation batch (B, D) to int64 actions
(B,), e.g. ``GreedyPolicy`` (bias rule on Q(accept) - Q(reject)) or an argmax over K Q-values.
Both formats come from a ``torch.export`` trace (in eval mode) with a dynamic batch dimension:

* ``export_program`` -> ``policy.pt2``:
  ``torch.export.load(path).module()(obs[, u]) -> actions``.
* ``export_onnx`` -> ``policy.onnx``, input ``obs`` (float32, (batch, D)), output ``action``
  (int64, (batch,)): ``onnxruntime.InferenceSession(path).run(["action"], {"obs": obs})[0]``.
  Uses the torch.export-based ONNX exporter (the default and only non-deprecated one since
  torch 2.9; the TorchScript-based ``dynamo=False`` path emits a DeprecationWarning), which needs
  the ``onnxscript`` package.

With ``uniform`` (an admission policy, ``drl_ac.learning.qnet.GreedyPolicy``) both take a
second input ``u``, float32 (batch,), one uniform draw in [0, 1) per row: the policy admits
where ``u`` is below its admission probability, which is 1 or 0 except at a randomised
policy's margin. ``u`` from the caller's seeded generator makes a run reproducible. Every
admission policy exported since takes ``u`` (deterministic ones too, so that one call fits
every admission policy); files exported before take ``obs`` only.

Files are written atomically: to a temporary file in the same folder, fsynced, then renamed over
``path``, so a crash mid-write never leaves a half-written file in place of a good one.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import operator
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch import nn

PROGRAM_FILE = "policy.pt2"
ONNX_FILE = "policy.onnx"
INPUT_NAME = "obs"
UNIFORM_NAME = "u"  # a randomised admission policy's draws: one uniform in [0, 1) per row
OUTPUT_NAME = "action"
# Opset 18 is the one torch's ONNX function library is written for (no version conversion at
# export) and is read by every onnxruntime since 1.14; the graph only uses basic operators.
ONNX_OPSET = 18
# Batch size of the tracing example: 0 and 1 are specialised by torch.export, 2 is not.
_EXAMPLE_BATCH = 2
# Free bytes below which a disk counts as full: a write that failed for want of space leaves
# next to nothing (torch's writer says only that a write failed, not why).
_FULL_BELOW = 1 << 20


def _check_obs_dim(obs_dim: int) -> int:
    try:
        value = operator.index(obs_dim)
    except TypeError:
        value = 0
    if isinstance(obs_dim, bool) or value < 1:
        raise ValueError(f"obs_dim: expected a positive integer, got {obs_dim!r}. Fix: pass the number "
                         "of observation features D of the (B, D) input.")
    return value


def _check_suffix(path: str | Path, suffix: str) -> Path:
    path = Path(path)
    if path.suffix != suffix:
        raise ValueError(f"{path}: expected a file name ending in {suffix}. Fix: pass a path such as "
                         f"{path.with_suffix(suffix)}.")
    return path


@contextlib.contextmanager
def _eval_mode(module: nn.Module) -> Iterator[None]:
    """Trace in eval mode, then give the module back in the mode it came in."""
    training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(training)


def _batch_dims(uniform: bool = False) -> tuple[dict[int, torch.export.Dim], ...]:
    """``dynamic_shapes`` of the (B, D) input, and of the (B,) uniforms if ``uniform``: B
    dynamic (named ``batch``, one dimension for both), D static."""
    batch = torch.export.Dim("batch", min=1)
    return ({0: batch}, {0: batch}) if uniform else ({0: batch},)


def _check_policy(module: nn.Module, obs_dim: int, uniform: bool = False) -> tuple[torch.Tensor, ...]:
    """Run ``module`` eagerly on an example batch (and uniforms); fail early if it does not give
    int64 (B,) actions. Returns the tracing example."""
    example = (torch.zeros(_EXAMPLE_BATCH, obs_dim, dtype=torch.float32),)
    if uniform:
        example += (torch.full((_EXAMPLE_BATCH,), 0.5, dtype=torch.float32),)
    with torch.no_grad():
        out = module(*example)
    if not isinstance(out, torch.Tensor) or out.dtype != torch.int64 or tuple(out.shape) != (_EXAMPLE_BATCH,):
        found = f"{out.dtype} {tuple(out.shape)}" if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"{type(module).__name__}: expected int64 actions of shape (B,) for a (B, {obs_dim}) "
                         f"float32 batch, got {found}. Fix: export the policy (e.g. GreedyPolicy, or an "
                         "argmax over Q-values), not the Q-network.")
    return example


def exported_program(module: nn.Module, obs_dim: int, uniform: bool = False) -> torch.export.ExportedProgram:
    """``torch.export`` trace of ``module`` (in eval mode) with a dynamic batch dimension;
    ``uniform``: it takes the (B,) uniforms of a randomised admission policy too."""
    obs_dim = _check_obs_dim(obs_dim)
    with _eval_mode(module):
        example = _check_policy(module, obs_dim, uniform)
        return torch.export.export(module, example, dynamic_shapes=_batch_dims(uniform))


def _out_of_space(exc: BaseException, folder: Path) -> bool:
    """Whether a write into ``folder`` failed for want of space: an OSError saying so, or torch's zip
    writer failing ("[enforce fail at inline_container.cc:...]", which carries no errno) with the
    disk left full. Asked before the temporary file is removed and gives its space back."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return (isinstance(exc, RuntimeError) and "inline_container" in str(exc)
            and shutil.disk_usage(folder).free < _FULL_BELOW)


def write_atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """``write(tmp)`` to a temporary file next to ``path``, fsync, then rename it over ``path``;
    on failure the temporary file is removed and ``path`` keeps its earlier content."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same suffix as the target: torch.export.save warns about any other.
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        full = _out_of_space(exc, path.parent)
        tmp.unlink(missing_ok=True)
        if full:
            raise OSError(errno.ENOSPC, f"{path}: not written, the disk is full (the earlier {path.name} there, "
                          "if any, is intact). Fix: free space on that disk, or write to another one, and "
                          "save again.") from None
        raise
    return path


def export_program(module: nn.Module, obs_dim: int, path: str | Path, uniform: bool = False) -> Path:
    """Write ``module`` as a ``torch.export`` program (``.pt2``) with a dynamic batch dimension.

    Load with ``torch.export.load(path).module()``; calling that on a float32 (B, D) tensor gives
    the int64 (B,) actions.
    """
    path = _check_suffix(path, ".pt2")
    program = exported_program(module, obs_dim, uniform)
    # In memory first: torch's archive writer, when the disk fills under it, fails again as it is
    # freed and aborts the whole process; a plain write of the bytes fails cleanly.
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return write_atomic(path, lambda tmp: tmp.write_bytes(buffer.getvalue()))


class _DropTorchvisionNotice(logging.Filter):
    """torch's ONNX exporter logs a WARNING per torchvision operator when torchvision is not
    installed ("torchvision is not installed. Skipping torchvision::nms", ...); a policy never
    uses torchvision operators, so these lines are noise. Only those records are dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("torchvision is not installed")


_ONNX_REGISTRY_LOGGER = "torch.onnx._internal.exporter._registration"


def export_onnx(module: nn.Module, obs_dim: int, path: str | Path, uniform: bool = False) -> Path:
    """Write ``module`` as an ONNX model: input ``obs`` float32 (batch, D) (and ``u`` float32
    (batch,) if ``uniform``), output ``action`` int64 (batch,), batch dynamic, weights inside
    the file (no external data)."""
    path = _check_suffix(path, ".onnx")
    obs_dim = _check_obs_dim(obs_dim)
    notice = _DropTorchvisionNotice()
    logger = logging.getLogger(_ONNX_REGISTRY_LOGGER)
    logger.addFilter(notice)
    try:
        with warnings.catch_warnings():
            # torch's own decomposition step (ExportedProgram.run_decompositions) deep-copies the
            # module call graph, whose pytree specs include torch's deprecated LeafSpec class;
            # copying it emits this FutureWarning from inside torch (seen with torch 2.13), which
            # no argument of ours avoids. Only that message is silenced.
            warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                                    category=FutureWarning)
            # obs and u share the batch dimension: torch says it keeps one name for both
            warnings.filterwarnings("ignore", message=r"# The axis name: batch will not be used", category=UserWarning)
            with _eval_mode(module):
                example = _check_policy(module, obs_dim, uniform)
                # The module itself (not an ExportedProgram) with dynamic_shapes, so that the ONNX
                # batch dimension is named "batch" rather than an internal symbol ("s35").
                onnx_program = torch.onnx.export(
                    module, example, input_names=[INPUT_NAME, UNIFORM_NAME][:len(example)],
                    output_names=[OUTPUT_NAME], dynamic_shapes=_batch_dims(uniform), opset_version=ONNX_OPSET,
                    dynamo=True,
                    external_data=False, verbose=False)
    finally:
        logger.removeFilter(notice)
    if onnx_program is None:  # pragma: no cover - only the legacy exporter returns None
        raise RuntimeError("torch.onnx.export returned no program. Fix: upgrade torch to >= 2.6.")
    return write_atomic(path, lambda tmp: onnx_program.save(tmp, external_data=False))
