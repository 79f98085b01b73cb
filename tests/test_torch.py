"""torch interop: tensors as inputs, and state sync across two gloo ranks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import streammetrics as sm

torch = pytest.importorskip("torch")


def test_tensors_are_accepted_without_copy_semantics_issues():
    y = torch.tensor([1, 0, 1, 1])
    logits = torch.tensor([2.0, -1.0, -0.5, 0.3], requires_grad=True)
    probs = torch.sigmoid(logits)
    acc = sm.BinaryConfusion(threshold=0.5).update(y, probs)
    ref = sm.BinaryConfusion(threshold=0.5).update(y.numpy(), probs.detach().numpy())
    assert acc == ref
    assert sm.ProbabilityScores().update(y.bool(), probs).n == 4
    assert sm.RegressionErrors().update(logits, logits * 2).finalize().mse > 0
    with pytest.raises(ValueError, match=r"y\[1\] = 2"):
        sm.BinaryConfusion().update(torch.tensor([1, 2]), torch.tensor([1, 0]))
    # an (n, 1) column tensor is read as the vector it holds; a (1, n) row is refused
    assert sm.BinaryConfusion(threshold=0.5).update(y, probs.reshape(4, 1)) == ref
    with pytest.raises(ValueError, match="1-D"):
        sm.BinaryConfusion(threshold=0.5).update(y, probs.reshape(1, 4))


WORKER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import torch.distributed as dist
    import streammetrics as sm
    from streammetrics.torch import sync, sync_finalize

    rank, world, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rng = np.random.default_rng(100 + rank)
    y = rng.random(1000) < 0.4
    s = rng.random(1000)
    acc = sm.BinaryConfusion(threshold=0.5).update(y, s)
    reg = sm.RegressionErrors().update(s, s * 0.9 + 0.05)
    merged = sync(acc)
    gathered = sync(reg, dst=0)
    result = {
        "rank": rank,
        "counts": merged._state["counts"].tolist(),
        "n": merged.n,
        "local_n": acc.n,
        "mse": None if gathered is None else gathered.finalize().mse,
        "f1": sync_finalize(acc).f1,
    }
    # a rank with other settings cannot be merged
    try:
        sync(sm.BinaryConfusion(threshold=0.5 if rank == 0 else 0.7))
        result["mismatch"] = "no error"
    except ValueError as exc:
        result["mismatch"] = str(exc)
    dist.destroy_process_group()
    with open(out, "w") as fh:
        json.dump(result, fh)
    """
)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_two_ranks(worker: str, tmp_path, **env):
    """Run ``worker`` as ranks 0 and 1 of a gloo group; each rank's JSON output."""
    script = tmp_path / "worker.py"
    script.write_text(worker)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), **env)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(r), "2", str(tmp_path / f"r{r}.json")], env=env)
        for r in range(2)
    ]
    for p in procs:
        assert p.wait(timeout=240) == 0
    return [json.loads((tmp_path / f"r{r}.json").read_text()) for r in range(2)]


def test_sync_across_two_gloo_ranks(tmp_path):
    results = _run_two_ranks(WORKER, tmp_path)

    ys, ss = [], []
    for r in range(2):
        rng = np.random.default_rng(100 + r)
        ys.append(rng.random(1000) < 0.4)
        ss.append(rng.random(1000))
    y, s = np.concatenate(ys), np.concatenate(ss)
    single = sm.BinaryConfusion(threshold=0.5).update(y, s)
    for res in results:
        assert res["counts"] == single._state["counts"].tolist()
        assert res["n"] == 2000 and res["local_n"] == 1000
        assert res["f1"] == single.finalize().f1
        assert "cannot be merged" in res["mismatch"] and "threshold" in res["mismatch"]
    expected_mse = sm.mse(s, s * 0.9 + 0.05)
    assert results[0]["mse"] == pytest.approx(expected_mse, rel=1e-12)
    assert results[1]["mse"] is None


def test_sync_needs_an_initialised_group():
    from streammetrics.torch import sync

    with pytest.raises(RuntimeError, match="init_process_group"):
        sync(sm.BinaryConfusion())


REGISTRY_WORKER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import torch.distributed as dist
    from streammetrics._protocol.result import jsonable
    from streammetrics.torch import sync
    from tests.registry import CASES

    rank, world, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", rank=rank, world_size=world)
    result = {}
    for case in CASES:
        arrays, w = case.data(np.random.default_rng(200 + rank))
        acc = case.make().update(*arrays, sample_weight=w if case.make().takes_weights else None)
        merged = sync(acc)
        result[case.name] = {"n": merged.n, "scores": jsonable(dict(merged.finalize()))}
    dist.destroy_process_group()
    with open(out, "w") as fh:
        json.dump(result, fh)
    """
)


def test_every_registry_accumulator_syncs_across_ranks(tmp_path):
    """Every public accumulator crosses torch.distributed without code written for it."""
    from .registry import CASES

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = _run_two_ranks(REGISTRY_WORKER, tmp_path, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    from streammetrics._protocol.result import jsonable

    for case in CASES:
        parts = []
        for r in range(2):
            arrays, w = case.data(np.random.default_rng(200 + r))
            parts.append(case.make().update(*arrays, sample_weight=w if case.make().takes_weights else None))
        want = jsonable(dict((parts[0] + parts[1]).finalize()))
        for res in results:
            got = res[case.name]
            assert got["n"] == parts[0].n + parts[1].n, case.name
            assert got["scores"] == want, case.name  # merged in rank order: identical


def test_a_type_numpy_lacks_is_refused_with_the_conversion_to_make():
    scores = torch.tensor([0.1, 0.9], dtype=torch.bfloat16)  # on the CPU already
    with pytest.raises(TypeError, match=r"convert it to a type numpy has first, e\.g\. tensor\.float\(\)"):
        sm.RankAUC().update([0, 1], scores)


def _variants(arr):
    """(name, tensor, the numpy array it holds) for one numeric numpy argument."""
    base = torch.from_numpy(np.ascontiguousarray(arr))
    out = [("same dtype", base, arr)]
    wide = torch.stack([base, base], dim=-1)  # every other element of a larger buffer
    out.append(("non-contiguous", wide[..., 0], arr))
    assert not wide[..., 0].is_contiguous()
    if arr.dtype.kind == "f":
        f32 = base.float()
        out.append(("float32", f32, f32.numpy()))
        out.append(("requires_grad", base.clone().requires_grad_(True), arr))
    elif arr.dtype.kind in "iu":
        out.append(("int32", base.int(), arr.astype(np.int32)))
    return out


def test_every_registry_accumulator_reads_tensors_as_the_arrays_they_hold():
    """Tensors (float32 and float64, int labels, requiring grad, non-contiguous) give
    the state of the numpy arrays they hold, bit for bit."""
    from .registry import CASES

    for case in CASES:
        arrays, _ = case.data(np.random.default_rng(5))
        for pos, arr in enumerate(arrays):
            if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
                continue
            for variant, tensor, held in _variants(arr):
                got = list(arrays)
                got[pos] = tensor
                want = list(arrays)
                want[pos] = held
                try:
                    ref = case.make().update(*want)
                except (ValueError, TypeError) as exc:
                    with pytest.raises(type(exc)):
                        case.make().update(*got)
                    continue
                assert case.make().update(*got) == ref, (case.name, pos, variant)  # every state array equal


def test_a_float32_tensor_is_cut_at_the_threshold_in_float32():
    p = torch.tensor([0.7, 0.69], dtype=torch.float32)
    acc = sm.BinaryConfusion(threshold=0.7).update(torch.tensor([1, 0]), p)
    assert acc == sm.BinaryConfusion(threshold=0.7).update([1, 0], p.numpy())
    assert acc.finalize().tp == 1  # 0.7 in float32 reaches the threshold 0.7


def test_a_tensor_on_a_device_is_refused_naming_the_copy_to_make():
    if not torch.cuda.is_available():
        meta = torch.empty(3, device="meta")
        with pytest.raises(TypeError, match="e.g. tensor.cpu()"):
            sm.RankAUC().update([0, 1, 1], meta)
        return
    with pytest.raises(TypeError, match=r"tensor\.cpu\(\)"):
        sm.RankAUC().update([0, 1, 1], torch.rand(3, device="cuda"))
