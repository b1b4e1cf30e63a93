"""Nothing silently wrong, nothing lost: damaged files and exports are refused by name before
torch.load (which checks no checksum), and a save on a full disk says so and keeps the earlier file."""

from __future__ import annotations

import errno
import shutil
import struct
import zipfile
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
import torch

from drl_ac import TrainConfig, Trainer
from drl_ac.checkpoint import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    LoadedPolicy,
    load_file,
    load_policy,
    save_atomic,
    write_json,
)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "checkpoints" / "paper_tandem"
# torch's zip writer failing (here: out of space); it carries no errno
TORCH_WRITE_FAILED = "[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534"


def flipped(src: Path, dst: Path, positions: range | list[int], mask: int = 0xFF) -> Path:
    data = bytearray(src.read_bytes())
    for i in positions:
        data[i] ^= mask
    dst.write_bytes(bytes(data))
    return dst


def middle(path: Path, n: int = 400) -> range:
    half = path.stat().st_size // 2
    return range(half - n // 2, half + n // 2)


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and (a == b or a != a and b != b)  # NaN equals NaN here


def test_a_policy_with_damaged_bytes_is_refused_not_loaded(tmp_path):
    good = shutil.copy(SHIPPED / "policy.pt", tmp_path / "policy.pt")
    bad = flipped(Path(good), tmp_path / "damaged.pt", middle(Path(good)))
    # what torch.load alone does: the damaged weights load, and decide differently
    policy = load_policy(good)
    obs = np.random.default_rng(0).integers(0, 20, (1000, policy.obs_dim)).astype(np.float32)
    assert (policy(obs) != LoadedPolicy(torch.load(bad, weights_only=True))(obs)).any()
    with pytest.raises(CheckpointError) as caught:
        load_policy(bad)
    message = str(caught.value)
    assert message.startswith(f"{bad}: damaged (member data/3 fails its checksum)")
    assert "Fix: use the run's last good copy" in message and "\n" not in message


def test_a_training_checkpoint_with_damaged_bytes_is_refused(tmp_path):
    trainer = Trainer(TrainConfig(scenario="paper_tandem", steps=512, num_envs=8, replay_size=4096, device="cpu",
                                  lam="scenario"))
    good = trainer.save(tmp_path / "checkpoint.pt")
    assert load_file(good, expected=(CHECKPOINT_FORMAT,))["format"] == CHECKPOINT_FORMAT
    bad = flipped(good, tmp_path / "damaged.pt", middle(good))
    with pytest.raises(CheckpointError, match=r"damaged\.pt: damaged \(member data/\d+ fails its checksum"):
        Trainer.resume(bad)


def header_bytes(path: Path) -> list[int]:
    """Offsets of the zip's own bytes (local headers, central directory, end records): what
    no member's checksum covers."""
    data = path.read_bytes()
    positions = set(range(data.index(b"PK\x01\x02"), len(data)))
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            start = info.header_offset
            name_len, extra_len = struct.unpack("<HH", data[start + 26:start + 30])
            positions.update(range(start, start + 30 + name_len + extra_len))
    return sorted(positions)


def test_a_flipped_bit_in_the_zip_headers_is_refused_or_harmless(tmp_path):
    """Every header byte, one bit each: the file is refused, or loads exactly as saved."""
    src = SHIPPED / "policy.pt"
    want = load_file(src)
    outcomes = {"refused": 0, "same": 0}
    for i in header_bytes(src):
        path = flipped(src, tmp_path / "flipped.pt", [i], 1 << (i % 8))
        try:
            got = load_file(path)
        except CheckpointError:
            outcomes["refused"] += 1
            continue
        assert same(got, want), f"byte {i}, bit {i % 8}: loads different content without a word"
        outcomes["same"] += 1
    assert min(outcomes.values()) > 100


def test_a_member_marked_as_a_folder_is_refused(tmp_path):
    # torch's reader hands back no bytes for a member whose folder bit is set: the tensor keeps
    # whatever memory it got, although every checksum holds
    src = SHIPPED / "policy.pt"
    data = src.read_bytes()
    entry = data.index(b"archive/data/0", data.index(b"PK\x01\x02")) - 46  # its central directory entry
    bad = flipped(src, tmp_path / "folder.pt", [entry + 38], 0x10)  # the folder bit of its external attributes
    assert not same(torch.load(bad, weights_only=True), load_file(src))  # torch.load alone: garbage weights
    with pytest.raises(CheckpointError, match=r"folder\.pt: damaged \(the header of member data/0 is damaged\)"):
        load_file(bad)


@pytest.mark.parametrize(("name", "kind", "reader"), [
    ("policy.onnx", "an ONNX model", 'onnxruntime.InferenceSession(path) (README.md, "Python quickstart")'),
    ("policy.pt2", "a torch.export program", "torch.export.load(path).module()"),
])
def test_an_export_given_for_a_policy_is_named_with_its_reader(tmp_path, name, kind, reader):
    shipped = SHIPPED / name
    with pytest.raises(CheckpointError) as caught:
        load_policy(shipped)
    assert str(caught.value) == (f"{shipped}: {kind} (an exported policy), not a policy.pt or checkpoint.pt; "
                                 f"read it with {reader}. Fix: give {SHIPPED / 'policy.pt'}, beside it.")
    alone = shutil.copy(shipped, tmp_path / name)
    with pytest.raises(CheckpointError) as caught:
        load_file(alone, expected=(CHECKPOINT_FORMAT,))
    assert str(caught.value).endswith(f"not a checkpoint.pt; read it with {reader}. Fix: give the checkpoint.pt "
                                      "that experiments/train.py wrote with it.")


def test_junk_named_onnx_is_not_called_an_onnx_model(tmp_path):
    junk = tmp_path / "policy.onnx"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(CheckpointError, match="corrupt, truncated"):
        load_file(junk)


Usage = namedtuple("Usage", "total used free")


def fail_midway(exc: BaseException):
    """A writer that gets part of the file out, then fails as a full disk makes it fail."""
    def write(obj, f):
        Path(f).write_bytes(b"partial")
        raise exc
    return write


def assert_full_disk_reported(target: Path, before: bytes, caught: pytest.ExceptionInfo) -> None:
    assert caught.value.errno == errno.ENOSPC
    assert str(caught.value) == (f"[Errno 28] {target}: not written, the disk is full (the earlier {target.name} "
                                 "there, if any, is intact). Fix: free space on that disk, or write to another "
                                 "one, and save again.")
    assert target.read_bytes() == before
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary file left


@pytest.mark.parametrize("exc", [RuntimeError(TORCH_WRITE_FAILED), OSError(errno.ENOSPC, "No space left on device")])
def test_a_checkpoint_saved_on_a_full_disk_says_so_and_keeps_the_earlier_one(tmp_path, monkeypatch, exc):
    target = save_atomic({"format": CHECKPOINT_FORMAT, "step": 1}, tmp_path / "checkpoint.pt")
    before = target.read_bytes()
    monkeypatch.setattr(torch, "save", fail_midway(exc))
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: Usage(10 << 30, 10 << 30, 0))  # nothing left
    with pytest.raises(OSError) as caught:
        save_atomic({"format": CHECKPOINT_FORMAT, "step": 2}, target)
    assert_full_disk_reported(target, before, caught)


def test_json_written_on_a_full_disk_says_so(tmp_path, monkeypatch):
    target = write_json(tmp_path / "metrics.json", {"violation": 0.1})
    before = target.read_bytes()

    def full(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError) as caught:
        write_json(target, {"violation": 0.2})
    assert_full_disk_reported(target, before, caught)


def test_a_failed_torch_write_with_room_left_is_not_called_a_full_disk(tmp_path, monkeypatch):
    target = save_atomic({"format": CHECKPOINT_FORMAT}, tmp_path / "checkpoint.pt")
    before = target.read_bytes()
    monkeypatch.setattr(torch, "save", fail_midway(RuntimeError(TORCH_WRITE_FAILED)))
    monkeypatch.setattr(shutil, "disk_usage", lambda folder: Usage(10 << 30, 5 << 30, 5 << 30))
    with pytest.raises(RuntimeError, match="inline_container"):
        save_atomic({"format": CHECKPOINT_FORMAT}, target)
    assert target.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]
