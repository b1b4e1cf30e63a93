"""Checkpoints: atomic writes, safe loading, exported greedy policies.

Two kinds of file, both read with ``torch.load(weights_only=True)`` (tensors and plain
containers only; nothing in a file can run code):
* ``policy.pt`` (``format: drl_ac.policy``): the Q-network weights with the scenario,
  settings, evaluation and versions. ``load_policy`` turns it into a callable.
* ``checkpoint.pt`` (``format: drl_ac.checkpoint``): everything a run needs to continue
  exactly: the policy section plus optimizer, rbar, multiplier, exploration, step count,
  replay, delayed-completion store, simulator state and all RNG states.
NumPy arrays are stored as tensors and turned back on load.
"""

from __future__ import annotations

import errno
import json
import math
import pickle
import platform
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from drl_ac.export import ONNX_FILE, PROGRAM_FILE, export_onnx, export_program, write_atomic
from drl_ac.learning.qnet import GreedyPolicy, QNetwork, RuleDefault
from envs.observation import ObservationEncoding

POLICY_FORMAT = "drl_ac.policy"
CHECKPOINT_FORMAT = "drl_ac.checkpoint"
FORMAT_VERSION = 2
READABLE_POLICY_VERSIONS = (1, 2)  # version 1 policies (2 actions, queue-length features) still load


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, corrupt, truncated or from an incompatible version."""


def versions() -> dict[str, str]:
    import gymnasium

    from drl_ac import __version__
    return {"drl_ac": __version__, "torch": str(torch.__version__), "numpy": str(np.__version__),
            "gymnasium": str(gymnasium.__version__), "python": platform.python_version()}


def to_tensors(obj: Any) -> Any:
    """NumPy arrays -> tensors, recursively (so the file loads with weights_only=True)."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj))
    if isinstance(obj, dict):
        return {k: to_tensors(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_tensors(v) for v in obj)
    return obj


def to_arrays(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: to_arrays(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_arrays(v) for v in obj)
    return obj


def save_atomic(obj: dict, path: str | Path) -> Path:
    """``torch.save`` through ``write_atomic``: a crash mid-write never leaves a half-written
    checkpoint in place of a good one."""
    return write_atomic(Path(path), lambda tmp: torch.save(obj, tmp))


def _load_failure(exc: BaseException) -> str:
    """Why torch.load refused a file, in words for a drl_ac user. torch's own text advises
    retrying with ``weights_only=False`` (which would let the file run code): never pass that on."""
    text = str(exc)
    if "Unsupported global" in text:
        name = text.split("GLOBAL ", 1)[1].split(" ", 1)[0] if "GLOBAL " in text else "an object"
        return (f"it holds Python objects ({name}) besides tensors and plain containers, which drl_ac never "
                "unpickles because that could run code")
    if "central directory" in text or isinstance(exc, EOFError) or "unexpected EOF" in text.lower():
        return "the file ends early or is damaged (a copy, download or save that did not finish)"
    if "Weights only load failed" in text or isinstance(exc, (pickle.UnpicklingError, zipfile.BadZipFile)):
        return "not a PyTorch file"
    if isinstance(exc, KeyError):  # torch's legacy (non-zip) reader on arbitrary bytes
        return "not a PyTorch file"
    if isinstance(exc, OSError):
        if exc.errno == errno.EINVAL:  # the zip reader seeking past the end of a cut-off file
            return "the file ends early or is damaged (a copy, download or save that did not finish)"
        return f"cannot read it ({exc.strerror or type(exc).__name__})"
    first = text.splitlines()[0] if text else ""
    if "weights_only" in first or "trust" in first:
        first = ""
    return f"{type(exc).__name__}{': ' + first[:160] if first else ''}"


# Zip member attribute bit of a folder: torch's reader (miniz) hands back no bytes for a member
# so marked, and the tensor it stores keeps whatever memory it got.
_DIRECTORY_ATTRIBUTE = 0x10
# What zipfile raises on a zip whose headers are damaged, besides failing checksums (OSError:
# a seek to an offset that points outside the file).
_ZIP_DAMAGE = (zipfile.BadZipFile, ValueError, EOFError, OverflowError, NotImplementedError, RuntimeError, OSError)
# drl_ac's exports: what they are and the call that reads them (drl_ac.export).
_EXPORTS = {PROGRAM_FILE: ("a torch.export program", "torch.export.load(path).module()"),
            ONNX_FILE: ("an ONNX model", 'onnxruntime.InferenceSession(path) (README.md, "Python quickstart")')}


def _damage(archive: zipfile.ZipFile) -> str | None:
    """What is damaged in a zip written by torch.save, if anything. torch's reader checks no
    checksum, so a changed byte would load as a changed weight: every member's CRC-32 is checked,
    and the header fields that make torch read a member wrongly although its bytes are whole
    (the folder bit; any compression, which torch never writes)."""
    def member(name: str) -> str:  # without the archive's top folder (torch names it after the temporary file)
        return name.partition("/")[2] or name

    for info in archive.infolist():
        if info.external_attr & _DIRECTORY_ATTRIBUTE or info.compress_type != zipfile.ZIP_STORED:
            return f"the header of member {member(info.filename)} is damaged"
    bad = archive.testzip()
    return f"member {member(bad)} fails its checksum" if bad else None


def _sound_members(path: Path) -> list[str] | None:
    """The member names of the zip at ``path`` (None if it is not a zip), refused if damaged.
    Files that are not zips are left to torch.load's own errors."""
    try:
        if not zipfile.is_zipfile(path):
            return None
        with zipfile.ZipFile(path) as archive:
            damage, names = _damage(archive), archive.namelist()
    except _ZIP_DAMAGE as exc:
        damage, names = f"its zip headers are damaged: {exc}", []
    if damage:
        raise CheckpointError(f"{path}: damaged ({damage}), so it does not hold what was saved (a disk, copy "
                              "or download changed its bytes). Fix: use the run's last good copy of the file "
                              "(copy it again from where it came from) or retrain.")
    return names


def _first_byte(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(1)


def _export_error(path: Path, export: str, wants: str) -> CheckpointError:
    kind, reader = _EXPORTS[export]
    beside = path.parent / wants.split()[0]  # policy.pt, or checkpoint.pt to resume
    fix = f"give {beside}, beside it" if beside.is_file() else f"give the {wants} that experiments/train.py wrote with it"
    return CheckpointError(f"{path}: {kind} (an exported policy), not a {wants}; read it with {reader}. "
                           f"Fix: {fix}.")


def _check_archive(path: Path, wants: str) -> None:
    """Refuse, before torch.load, what it would load wrongly (a damaged zip) or call corrupt
    (drl_ac's exports)."""
    names = _sound_members(path)
    if names is None:
        if path.suffix == ".onnx" and _first_byte(path) == b"\x08":  # an ONNX ModelProto opens with ir_version
            raise _export_error(path, ONNX_FILE, wants)
    elif any(name.endswith("/archive_format") for name in names):  # torch.export's archive marker
        raise _export_error(path, PROGRAM_FILE, wants)


def load_file(path: str | Path, expected: tuple[str, ...] = (POLICY_FORMAT, CHECKPOINT_FORMAT)) -> dict:
    """The dict in a drl_ac ``policy.pt`` or ``checkpoint.pt`` whose format is in ``expected``,
    checked whole (its checksums) before it is unpickled; a ``CheckpointError`` says why not."""
    path = Path(path)
    wants = "checkpoint.pt" if expected == (CHECKPOINT_FORMAT,) else "policy.pt or checkpoint.pt"
    if path.is_dir():
        inside = [n for n in ("checkpoint.pt", "policy.pt") if (path / n).is_file()]
        hint = f" ({path / inside[0]} is there)" if inside else ""
        raise CheckpointError(f"{path}: a folder, not a file{hint}. Fix: give the path of the {wants} file "
                              "written by experiments/train.py.")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file. Fix: give the path of a {wants} "
                              "written by experiments/train.py.")
    _check_archive(path, wants)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, RuntimeError, ValueError, KeyError,
            AttributeError, OSError) as exc:
        raise CheckpointError(f"{path}: not a readable drl_ac checkpoint (corrupt, truncated or not written by "
                              f"drl_ac: {_load_failure(exc)}). Fix: give a {wants} written by "
                              "experiments/train.py (it saves atomically, so the last one a run saved is "
                              "whole), or retrain.") from None
    if not isinstance(obj, dict) or obj.get("format") not in expected:
        found = obj.get("format") if isinstance(obj, dict) else type(obj).__name__
        if found == POLICY_FORMAT and expected == (CHECKPOINT_FORMAT,):
            raise CheckpointError(f"{path}: format {found!r}, an exported policy (weights only), which cannot "
                                  "continue training. Fix: resume from the run's checkpoint.pt (train.py writes "
                                  "it next to policy.pt).")
        raise CheckpointError(f"{path}: format {found!r}, expected one of {expected}, so this is not a "
                              f"drl_ac {wants}. Fix: give a file written by drl_ac's experiments/train.py.")
    readable = READABLE_POLICY_VERSIONS if obj["format"] == POLICY_FORMAT else (FORMAT_VERSION,)
    if obj.get("version") not in readable:
        raise CheckpointError(f"{path}: format version {obj.get('version')}, this drl_ac reads {FORMAT_VERSION}. "
                              "Fix: load it with the drl_ac version that wrote it "
                              f"({obj.get('versions', {}).get('drl_ac', 'unknown')}) or retrain.")
    return obj


def policy_section(obj: dict) -> dict:
    return obj["policy"] if obj["format"] == CHECKPOINT_FORMAT else obj


def build_qnet(section: dict) -> QNetwork:
    try:
        net = QNetwork(int(section["obs_dim"]), section["scale"], tuple(section["hidden"]),
                       int(section.get("num_actions", 2)))
        net.load_state_dict(section["state_dict"])
    except (KeyError, RuntimeError, TypeError) as exc:
        raise CheckpointError(f"policy weights do not match the stored network shape ({exc}). "
                              "Fix: the file is damaged or from an incompatible version; retrain.") from None
    return net.eval()


def policy_encoding(section: dict) -> ObservationEncoding:
    """The observation encoding a policy was trained with (version 1 files: queue lengths,
    optionally busy servers, of the stored scenario's stations)."""
    if "encoding" in section:
        return ObservationEncoding.from_dict(section["encoding"])
    stations = len(section["scenario"]["stations"])
    return ObservationEncoding(stations, bool(section.get("include_in_service", False)))


class LoadedPolicy:
    """A policy, loaded once: ``policy(obs)`` maps (B, D) observations (laid out by
    ``encoding``) to (B,) actions in ``range(num_actions)``. ``section`` is what a file holds
    (``policy.pt``: weights, settings, scenario, records); ``replace`` changes its settings
    without rebuilding the network, so that the steps of a run (``drl_ac.study.Run``) pass one
    typed object from training to export. The section's ``bias`` (and, for
    control, ``default_action`` or ``default_rule``) shape the greedy rule
    (``drl_ac.learning.qnet.greedy``, ``RuleDefault``). An admission policy calibrated to
    randomise at its margin (``margin``, ``mix``: ``GreedyPolicy``; each a list, one per band of
    the arrival-rate estimate, with ``bias_edges``, when scheduled) draws its uniforms from a
    generator seeded with the section's ``mix_seed``, restarted by ``reset`` (so that candidates
    of a search see the same draws, and a run is reproducible)."""

    def __init__(self, section: dict, qnet: QNetwork | None = None):
        self.section = dict(section)  # its settings are read once, below: a later change to the caller's dict is not one
        self.metadata = {k: v for k, v in section.items() if k != "state_dict"}
        self.obs_dim = int(section["obs_dim"])
        self.num_actions = int(section.get("num_actions", 2))
        self.encoding = policy_encoding(section)
        self.bias_edges = tuple(float(e) for e in section.get("bias_edges", ()))
        if self.bias_edges and not self.encoding.rate:
            raise CheckpointError("bias_edges: a scheduled operating point switches by the arrival-rate estimate, "
                                  "which this policy does not observe. Fix: train with rate_estimate or drop "
                                  "bias_edges.")
        self.bias, self.margin, self.mix = (_point(section.get(k, 0.0)) for k in ("bias", "margin", "mix"))
        self.default = int(section.get("default_action", -1))  # control: see drl_ac.learning.qnet.greedy
        rule = RuleDefault(section["default_rule"], self.encoding.rule_columns) if section.get("default_rule") \
            else None  # a tuned rule instead
        admission = bool(section.get("admission", True))
        self.module = GreedyPolicy(build_qnet(section) if qnet is None else qnet, self.bias, admission, self.default,
                                   rule, self.margin, self.mix, self.bias_edges)
        self.randomised = admission and bool(((self.module.mix > 0) & (self.module.margin > 0)).any())
        self.mix_seed = int(section.get("mix_seed", 0))
        self.reset()

    def replace(self, **settings: Any) -> LoadedPolicy:
        """This policy with ``settings`` (e.g. ``bias``, ``margin``, ``mix``, ``default_action``,
        ``default_rule``, a record like ``calibration`` or ``metrics``) set in its section; the
        network is shared, not rebuilt (so its weights and shape cannot be among ``settings``)."""
        weights = sorted(set(settings) & {"state_dict", "obs_dim", "hidden", "scale", "num_actions", "encoding"})
        if weights:
            raise ValueError(f"replace: {', '.join(weights)} belong to the network, which replace shares. Fix: build "
                             "a new LoadedPolicy from a section with them.")
        return LoadedPolicy({**self.section, **settings}, self.module.qnet)

    def reset(self) -> None:
        """Restart the uniforms of a randomised policy."""
        self.rng = np.random.default_rng(self.mix_seed)

    def _tensor(self, obs: np.ndarray) -> torch.Tensor:
        obs = np.asarray(obs)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"obs: expected shape (B, {self.obs_dim}), got {obs.shape}. Fix: pass the "
                             "observations of the system this policy was trained on (see policy.encoding).")
        return torch.from_numpy(obs.astype(np.float32, copy=False))

    @torch.inference_mode()  # no autograd bookkeeping at all: a third off a small batch's forward
    def admit_probability(self, obs: np.ndarray) -> np.ndarray:
        """P(admit) per row of an admission policy: 1 or 0, except ``mix`` at its margin (what
        an exact evaluation of the policy, e.g. on a Markov chain, reads)."""
        x = self._tensor(obs)
        return self.module.admit_probability(self.module.qnet(x), x)[1].numpy().astype(float)

    @torch.inference_mode()
    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = self._tensor(obs)
        if not self.randomised:
            return self.module(x).numpy()
        return self.module(x, torch.from_numpy(self.rng.random(x.shape[0], dtype=np.float32))).numpy()


def _point(value: Any) -> float | tuple[float, ...]:
    """A setting of the operating point: one float, or one per band of a schedule."""
    return tuple(float(v) for v in value) if isinstance(value, (list, tuple)) else float(value)


def load_policy(path: str | Path) -> LoadedPolicy:
    """A greedy policy from ``policy.pt`` or a training ``checkpoint.pt``."""
    return LoadedPolicy(policy_section(load_file(path)))


def export_policy(policy: LoadedPolicy, folder: str | Path) -> list[Path]:
    """The greedy policy as files usable without this project: ``policy.pt2``
    (``torch.export``) and ``policy.onnx`` (see ``drl_ac.export``). An admission policy's
    graphs take the uniforms ``u`` too (one per row: it admits where ``u < P(admit)``)."""
    module, obs_dim, uniform = policy.module, policy.obs_dim, policy.module.admission
    folder = Path(folder)
    return [export_program(module, obs_dim, folder / PROGRAM_FILE, uniform),
            export_onnx(module, obs_dim, folder / ONNX_FILE, uniform)]


def finite_json(obj: Any) -> Any:
    """Plain JSON values, with null for NaN and infinities (metrics.json is strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, np.ndarray):
        return finite_json(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: str | Path, obj: Any) -> Path:
    """``obj`` as strict JSON (null where a value is undefined), written atomically."""
    text = json.dumps(finite_json(obj), indent=2, allow_nan=False) + "\n"
    return write_atomic(Path(path), lambda tmp: Path(tmp).write_text(text))


def save_policy_folder(policy: LoadedPolicy, folder: str | Path, exports: bool = True) -> list[Path]:
    """A policy as ``checkpoints/paper_tandem/`` holds it: ``policy.pt`` (its section, its
    ``metrics`` included), ``metrics.json`` (strict JSON: null where a value is undefined),
    then (with ``exports``) ``policy.pt2`` and ``policy.onnx``; returns the paths in that order.
    The first two are written before the exports, which need more packages (onnxscript) and,
    the first time in a process, several seconds (torch.export and the ONNX exporter start up)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    section = policy.section
    paths = [save_atomic(section, folder / "policy.pt"), write_json(folder / "metrics.json", section.get("metrics", {}))]
    return (paths + export_policy(policy, folder)) if exports else paths
