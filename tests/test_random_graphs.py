"""Randomized differential test: random pointwise graphs (`random_graphs.py`)
compiled with `fusec.compile` and called several times (two calls at the
example shape, then other shapes of the same rank), each call's outputs AND the
inputs it writes compared with eager PyTorch on copies of the same inputs; when
eager raises, fusec must raise an error of the same type.

A fixed set of seeds runs by default; `pytest tests/test_random_graphs.py
--random-graphs=2000` (or `FUSEC_RANDOM_GRAPHS=2000`) runs more, and
`--random-graphs-start=N` moves the first seed. A failure prints the graph's
source and the call that mismatched.

Then what is not one function of tensors: storages of large outputs that the
caller keeps after the tensors go (the output pool must not reuse them), random
module stacks whose modes and grad modes change between calls (outputs and
buffers against an eager copy), and a module used in another mode by a second
process sharing the disk cache."""

from __future__ import annotations

import copy
import math
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import fusec
import pytest
import torch
from fusec.runtime.cpu_pool import MIN_BYTES
from random_graphs import compare, generate
from random_modules import random_module, state


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        count = metafunc.config.getoption("random_graphs")
        start = metafunc.config.getoption("random_graphs_start")
        metafunc.parametrize("seed", range(start, start + count))


def _copy(t: torch.Tensor) -> torch.Tensor:
    """A copy with `t`'s sizes and strides (stride-0 dims included) over a copy
    of its storage."""
    storage = t.untyped_storage().clone()
    return torch.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.size(), t.stride())


def _run(fn, inputs):
    try:
        return fn(*inputs), None
    except Exception as e:  # noqa: BLE001 - compared with the other side's error
        return None, e


def test_random_graph_matches_eager(seed: int) -> None:
    graph = generate(seed)
    compiled = fusec.compile(graph.fn)
    for call in range(len(graph.shapes)):
        inputs = graph.inputs(call)
        eager_inputs = [_copy(t) for t in inputs]
        fusec_inputs = [_copy(t) for t in inputs]
        where = f"graph {seed}, call {call}, shapes {[tuple(t.shape) for t in inputs]}:\n{graph.source}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, want_error = _run(graph.fn, eager_inputs)
            got, got_error = _run(compiled, fusec_inputs)
        if want_error is not None:
            assert got_error is not None, f"eager raised {want_error!r}, fusec did not; {where}"
            assert type(got_error) is type(want_error), (
                f"eager raised {want_error!r}, fusec {got_error!r}; {where}"
            )
            continue
        assert got_error is None, f"fusec raised {got_error!r}; {where}"
        try:
            compare(got, want, "output", graph.half)
            compare(fusec_inputs, eager_inputs, "input after the call", graph.half)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{where}") from None


# Large outputs come from the CPU output pool (`fusec.runtime.cpu_pool`): a
# caller that keeps only an output's storage still owns it.
BIG_ELEMENTS = 1 << 19


def _big_shape(full: tuple[int, ...]) -> tuple[int, ...]:
    """`full` with its dims other than 1 grown to about `BIG_ELEMENTS` in all."""
    grown = [d for d, s in enumerate(full) if s != 1]
    side = math.ceil(BIG_ELEMENTS ** (1 / max(len(grown), 1)))
    return tuple(side if d in grown else 1 for d in range(len(full)))


def _large_output_graphs(start: int, count: int) -> list[tuple[int, tuple[int, ...]]]:
    """The first `count` graphs from seed `start` on that eager runs at a large
    shape and that return an output of at least a pool block."""
    found = []
    seed = start
    while len(found) < count:
        graph = generate(seed)
        shape = _big_shape(graph.shapes[0])
        if math.prod(shape) >= BIG_ELEMENTS:
            inputs = [s.make(shape, torch.Generator().manual_seed(seed)) for s in graph.specs]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs, error = _run(graph.fn, inputs)
            if error is None and any(o.untyped_storage().nbytes() >= MIN_BYTES for o in outs):
                found.append((seed, shape))
        seed += 1
    return found


@pytest.mark.parametrize("start", [0, 1000, 2000])
def test_kept_storages_of_large_outputs_keep_their_values(start: int) -> None:
    ((seed, shape),) = _large_output_graphs(start, 1)
    graph = generate(seed)
    compiled = fusec.compile(graph.fn)
    rnd = random.Random(seed)

    def inputs(call: int) -> list[torch.Tensor]:
        return [s.make(shape, torch.Generator().manual_seed(seed * 10 + call)) for s in graph.specs]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = compiled(*inputs(0))
        # The caller keeps some large outputs' storages only (the tensors go).
        big = [i for i, o in enumerate(outs) if o.untyped_storage().nbytes() >= MIN_BYTES]
        chosen = [i for i in big if rnd.random() < 0.7] or big[:1]
        kept = {
            i: (outs[i].untyped_storage(), outs[i].storage_offset(), outs[i].size(), outs[i].stride(), outs[i].clone())
            for i in chosen
        }
        del outs
        for call in range(1, 4):
            compiled(*inputs(call))
    for i, (storage, offset, size, stride, want) in kept.items():
        got = torch.empty(0, dtype=want.dtype).set_(storage, offset, size, stride)
        torch.testing.assert_close(
            got, want, rtol=0, atol=0, equal_nan=True,
            msg=lambda m, i=i: f"output {i}'s kept storage changed by later calls: {m}\ngraph {seed} at {shape}:\n{graph.source}",
        )


_CONTEXTS = {"no_grad": torch.no_grad, "enable_grad": torch.enable_grad, "inference_mode": torch.inference_mode}


def _compare_module(got, want, compiled_model, eager_model, where: str) -> None:
    try:
        torch.testing.assert_close(got.detach(), want.detach(), rtol=1e-4, atol=1e-4, msg=lambda m: f"output: {m}")
        got_state, want_state = state(compiled_model), state(eager_model)
        assert got_state.keys() == want_state.keys()
        for name, w in want_state.items():
            torch.testing.assert_close(got_state[name].detach(), w.detach(), rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{where}") from None


@pytest.mark.parametrize("mseed", range(4))
def test_random_module_modes_and_buffers_match_eager(mseed: int) -> None:
    """Train-mode modules called under each grad mode, switched between
    `.train()` and `.eval()`: outputs, running statistics and
    `num_batches_tracked` equal eager's after every call, the first included."""
    model, make = random_module(mseed)
    model.train()
    eager = copy.deepcopy(model)
    compiled = fusec.compile(model)
    rnd = random.Random(mseed)
    history = []
    for call in range(6):
        if call > 0 and rnd.random() < 0.4:
            mode = not model.training
            model.train(mode)
            eager.train(mode)
        context = rnd.choice(list(_CONTEXTS))
        history.append(f"call {call}: {'train' if model.training else 'eval'}, {context}")
        x = make(call)
        with _CONTEXTS[context]():
            want = eager(x.clone())
            got = compiled(x.clone())
        _compare_module(got, want, model, eager, f"module {mseed}:\n{model}\n" + "\n".join(history))


_MODULE_CHILD = """
import copy, sys, torch, fusec
sys.path.insert(0, {tests!r})
from random_modules import random_module, state
model, make = random_module({seed})
model.train({train})
eager = copy.deepcopy(model)
compiled = fusec.compile(model)
for call in range(2):
    with torch.no_grad():
        want, got = eager(make(call)), compiled(make(call))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, msg=lambda m: f"call {{call}}: output: {{m}}")
    for name, w in state(eager).items():
        torch.testing.assert_close(state(model)[name], w, rtol=1e-4, atol=1e-5, msg=lambda m: f"call {{call}}: {{name}}: {{m}}")
print(fusec.cache_stats())
"""


@pytest.mark.slow
@pytest.mark.parametrize(("mseed", "first"), [(0, "eval"), (1, "train")])
def test_a_module_in_another_mode_in_another_process(cache_dir, mseed: int, first: str) -> None:
    """Two processes share one disk cache: the first compiles a random module in
    one mode, the second calls it in the other; both match eager, buffers too."""
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir)}
    tests = str(Path(__file__).parent)
    for train in (first == "train", first != "train"):
        code = _MODULE_CHILD.format(tests=tests, seed=mseed, train=train)
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        mode = "train" if train else "eval"
        assert p.returncode == 0, f"module {mseed} in {mode} mode after {first}:\n{p.stderr[-3000:]}"
