"""Spill files under hostile conditions: a forked child, a full disk, a file
changed on disk, and another PID namespace sharing the folder."""

from __future__ import annotations

import errno
import gc
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.metrics.ranking import spill as S

from .test_spill import BUDGET, _assert_same, _files, _spilled

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _wait(pid: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the child did not finish")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_leaves_its_parents_files_alone(tmp_path):
    acc, y, s = _spilled(tmp_path)
    ref = sm.RankAUC().update(y, s)
    files = _files(tmp_path)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: works on the state, resets it and drops it
        code = 1
        try:
            os.close(read)
            ok = acc.finalize().auc == ref.finalize().auc
            acc.update(y, s + 100.0)
            ok = ok and acc.finalize().n == 2 * len(y)
            acc.reset()
            acc.update(y, s)
            del acc
            gc.collect()
            os.write(write, b"1" if ok else b"0")
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    assert _wait(pid) == 0
    assert os.read(read, 1) == b"1"  # the child's own copy gave the right answers
    os.close(read)
    assert set(files) <= set(_files(tmp_path))  # every file of the parent's is there
    _assert_same(ref, acc)
    acc.update(y, s)
    assert acc.finalize().auc == sm.RankAUC().update(np.r_[y, y], np.r_[s, s]).finalize().auc
    acc.close()
    assert _files(tmp_path) == []  # the child's files went with it


def _failing_writes(monkeypatch, after: int):
    """Make every write past the first ``after`` fail as a full disk does."""
    real = S._RunWriter.append_records
    calls = [0]

    def append(self, rec):
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, rec)

    monkeypatch.setattr(S._RunWriter, "append_records", append)
    return calls


def _state(acc):
    return {k: v.copy() for k, v in acc.state_dict().items()}


def _same_state(a, b) -> bool:
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(("batch", "after"), [(40, 0), (40, 1), (40, 3), (5000, 0)])  # writes before the failure
def test_a_failed_spill_write_leaves_the_state_as_it_was(tmp_path, monkeypatch, after, batch):
    acc, y, s = _spilled(tmp_path)
    rng = np.random.default_rng(7)
    extra_y, extra_s = rng.integers(0, 2, batch), rng.normal(size=batch) + 10.0
    fed_y, fed_s = list(y), list(s)
    failed = False
    for i in range(0, 12_000, batch):  # until a spill is due and fails
        before, files = _state(acc), _files(tmp_path)
        _failing_writes(monkeypatch, after)
        try:
            acc.update(extra_y, extra_s + i)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            failed = True
        monkeypatch.undo()
        if failed:
            break
        fed_y += list(extra_y)
        fed_s += list(extra_s + i)
    assert failed
    assert _same_state(before, _state(acc))  # the rejected batch is not half in
    assert _files(tmp_path) == files  # and a failed spill leaves no file
    r = acc.finalize()
    assert r.n == r.n_pos + r.n_neg == len(fed_y)
    ref = sm.RankAUC().update(fed_y, fed_s)
    assert r.auc == ref.finalize().auc
    acc.update(extra_y, extra_s)  # the disk has room again
    ref.update(extra_y, extra_s)
    assert acc.finalize().auc == ref.finalize().auc
    acc.close()
    assert _files(tmp_path) == []


def test_a_failed_write_while_merging_or_compacting_changes_nothing(tmp_path, monkeypatch):
    acc, y, s = _spilled(tmp_path)
    other, y2, s2 = _spilled(tmp_path, seed=2)
    before, files = _state(acc), _files(tmp_path)
    _failing_writes(monkeypatch, 2)
    with pytest.raises(OSError):
        acc.merge(other)
    monkeypatch.undo()
    assert _same_state(before, _state(acc)) and acc.n == len(y)
    assert set(_files(tmp_path)) == set(files)
    _failing_writes(monkeypatch, 0)
    with pytest.raises(OSError):
        acc.finalize()  # compacting the runs into one file
    monkeypatch.undo()
    assert _same_state(before, _state(acc))
    _assert_same(sm.RankAUC().update(y, s), acc)
    acc.merge(other)
    _assert_same(sm.RankAUC().update(np.r_[y, y2], np.r_[s, s2]), acc)
    acc.close()
    other.close()


def test_a_spill_file_changed_on_disk_is_an_error_not_a_wrong_auc(tmp_path):
    acc, y, s = _spilled(tmp_path)
    names = _files(tmp_path)
    sizes = {n: os.path.getsize(tmp_path / n) for n in names}
    same = [n for n in names if list(sizes.values()).count(sizes[n]) > 1]
    if len(same) >= 2:  # two runs of one size swapped
        a, b = (tmp_path / same[0]), (tmp_path / same[1])
        data_a, data_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(data_b)
        b.write_bytes(data_a)
        with pytest.raises(OSError, match="changed on disk"):
            acc.finalize()
        a.write_bytes(data_a)
        b.write_bytes(data_b)
    target = tmp_path / names[0]
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(OSError, match="changed on disk"):
        acc.finalize()
    flipped = bytearray(data)
    flipped[20] ^= 1  # one bit of a count
    target.write_bytes(bytes(flipped))
    with pytest.raises(OSError, match="checksum"):
        acc.finalize()
    target.write_bytes(data)
    _assert_same(sm.RankAUC().update(y, s), acc)
    acc.close()


def _unshare_works() -> bool:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(["unshare", "-Urpf", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="cannot create a user and PID namespace here")
def test_a_live_process_in_another_pid_namespace_keeps_its_files(tmp_path):
    # the writer takes a process id that runs nothing in this namespace: a guess from ids would call it dead
    alive = ",".join(d for d in os.listdir("/proc") if d.isdigit() and int(d) < 4096)
    code = (
        "import os, sys, time, numpy as np, streammetrics as sm\n"
        "alive = set(map(int, sys.argv[2].split(',')))\n"
        "while True:\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        if os.getpid() in alive:\n"
        "            os._exit(0)\n"
        "        break\n"
        "    os.waitpid(pid, 0)\n"
        "    if pid not in alive:\n"
        "        os._exit(0)\n"
        "acc = sm.RankAUC(max_memory=4096, spill_dir=sys.argv[1])\n"
        "for k in range(6):\n"
        "    acc.update(np.arange(2000) % 2, np.arange(2000.0) + k / 7)\n"
        "assert acc.spilled\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "print(acc.finalize().auc == sm.auc(np.tile(np.arange(2000) % 2, 6),"
        " np.concatenate([np.arange(2000.0) + k / 7 for k in range(6)])), flush=True)\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    with subprocess.Popen(
        ["unshare", "-Urpf", sys.executable, "-c", code, str(tmp_path), alive],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as child:
        try:
            assert child.stdout.readline().strip() == "ready"
            theirs = _files(tmp_path)
            assert theirs
            mine = sm.RankAUC(max_memory=BUDGET, spill_dir=tmp_path)  # its first spill sweeps the folder
            for k in range(4):
                mine.update(np.arange(2000) % 2, np.arange(2000.0) + k / 5)
            assert mine.spilled and set(theirs) <= set(_files(tmp_path))
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "True"
            mine.close()
        finally:
            child.kill()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_many_spilled_states_hold_one_lock_per_folder(tmp_path):
    def locks_open():
        names = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                names.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return sum(n.startswith(str(tmp_path)) and n.endswith(".lock") for n in names)

    accs = [_spilled(tmp_path, n=600, seed=i)[0] for i in range(40)]  # as the slices of a Sliced do
    assert all(a.spilled for a in accs)
    assert locks_open() == 1
    for a in accs:
        a.close()
    assert _files(tmp_path) == []
