"""The per-call fast path (`fusec.api.fast_call`): a call whose arguments match the
last specialization's key runs its program directly; any other call takes the
full path and gets the results (and specializations) the full path gives."""

from __future__ import annotations

import copy

import fusec
import pytest
import torch
from fusec.api.fast_call import MISS


def lstm_tail(gates: torch.Tensor, cx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def _same(f, fn, *args):
    torch.testing.assert_close(f(*args), fn(*args))


def test_second_call_takes_the_fast_path_and_matches_eager():
    f = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    _same(f, lstm_tail, *args)
    assert f._fast is not None
    assert f._fast(args) is not MISS
    for _ in range(3):
        _same(f, lstm_tail, *args)
        assert f.launches_per_call == 1
    # Other sizes of the same kinds (a chunk that cuts alike) stay on it.
    other = (torch.randn(5, 24), torch.randn(5, 6))
    assert f._fast(other) is not MISS
    _same(f, lstm_tail, *other)
    assert len(f.specializations) == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda g, c: (g.double(), c.double()),  # dtype
        lambda g, c: (g, c[:1]),  # a size-1 dim (broadcast)
        lambda g, c: (g, c.t().contiguous().t()),  # layout
        lambda g, c: (g[:, :8], c[:, :2]),  # strided views
        lambda g, c: (g[:, :6], c[:, :2]),  # a chunk that cuts differently (6 -> 3 pieces)
        lambda g, c: (g, 2.0),  # a scalar for a tensor
    ],
)
def test_a_different_argument_misses_and_runs_as_eager(change):
    f = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    _same(f, lstm_tail, *args)
    new = change(*args)
    assert f._fast(new) is MISS
    try:
        want = lstm_tail(*new)
    except Exception as e:  # noqa: BLE001 - eager's error is the one to see
        with pytest.raises(type(e)):
            f(*new)
    else:
        torch.testing.assert_close(f(*new), want)
    _same(f, lstm_tail, *args)  # and back


def test_grad_mode_and_requires_grad_take_the_full_path():
    f = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    with torch.no_grad():
        _same(f, lstm_tail, *args)
    assert f._fast is not None and f._fast(args) is MISS  # grad mode is on here
    gates = args[0].clone().requires_grad_()
    hy, _ = f(gates, args[1])
    assert hy.grad_fn is not None  # autograd recorded it: the training path ran
    hy.sum().backward()
    eager = args[0].clone().requires_grad_()
    lstm_tail(eager, args[1])[0].sum().backward()
    torch.testing.assert_close(gates.grad, eager.grad)


def test_keyword_arguments_take_the_full_path():
    f = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    _same(f, lstm_tail, *args)
    torch.testing.assert_close(f(args[0], cx=args[1]), lstm_tail(*args))
    with pytest.raises(TypeError):
        f(*args, bogus=1)


class Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x * self.w) + 1


def test_a_parameter_that_starts_requiring_grad_leaves_the_fast_path():
    m = Scale()
    f = fusec.compile(m)
    x = torch.randn(3, 4)
    _same(f, m, x)
    assert f._fast is not None and f._fast((x,)) is not MISS
    m.w.requires_grad_()
    assert f._fast((x,)) is MISS
    y = f(x)
    assert y.grad_fn is not None
    torch.testing.assert_close(y, m(x))


def test_guards_still_run_for_a_reused_program():
    """Past max_specializations a compiled program serves other inputs through
    its guards: the fast path of such a key keeps them."""

    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x) * y + 1

    f = fusec.compile(fn, max_specializations=1)
    _same(f, fn, torch.randn(4, 4), torch.randn(4, 4))
    assert f.launches_per_call == 1
    with pytest.warns(UserWarning):
        _same(f, fn, torch.randn(4, 4), torch.randn(1, 4))
    for _ in range(2):  # the second call is on the fast path
        _same(f, fn, torch.randn(4, 4), torch.randn(1, 4))
        assert f.launches_per_call == 0  # its guard failed: the group ran unfused
    _same(f, fn, torch.randn(4, 4), torch.randn(4, 4))
    assert f.launches_per_call == 1


def test_a_program_that_fails_on_the_fast_path_lets_eager_decide():
    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x // y) + 1

    f = fusec.compile(fn)
    x = torch.tensor([7, 8, 9])
    _same(f, fn, x, torch.tensor([2, 3, 4]))
    _same(f, fn, x, torch.tensor([2, 3, 4]))
    zero = torch.tensor([2, 0, 4])
    with pytest.raises(RuntimeError) as eager_error:
        fn(x, zero)
    with pytest.raises(RuntimeError, match=str(eager_error.value)):
        f(x, zero)
    _same(f, fn, x, torch.tensor([2, 3, 4]))
    # Eager raised too, so the inputs were bad, not the program: it stays.
    assert f.launches_per_call == 1


def test_sizes_a_chunk_cuts_alike_are_remembered_and_others_still_miss():
    f = fusec.compile(lstm_tail)
    cx = torch.randn(8, 8)
    _same(f, lstm_tail, torch.randn(8, 32), cx)
    for width in (24, 32, 24):  # 4 pieces, none of size 1: the key's class
        args = (torch.randn(8, width), torch.randn(8, width // 4))
        assert f._fast(args) is not MISS
        _same(f, lstm_tail, *args)
    for width in (7, 4):  # pieces 2, 2, 2, 1; four of size 1 (they broadcast)
        args = (torch.randn(8, width), torch.randn(8, 2 if width == 7 else 1))
        assert f._fast(args) is MISS
        _same(f, lstm_tail, *args)


def lstm_cell(x, h, c, w_ih, w_hh):
    gates = x @ w_ih.t() + h @ w_hh.t()
    return lstm_tail(gates, c)


def test_launches_are_counted_per_call_where_a_guard_is_not_implied():
    """A guard of computed values (the matmuls' gates) is checked per call, and
    its kernel may not launch; a guard of arguments the key implies always
    passes, so its kernel always launches."""
    tail = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    _same(tail, lstm_tail, *args)
    program = tail.last.program
    (guard,) = [j for j, s in enumerate(program.steps) if s.kind == "guard"]
    assert program.launches_fixed(frozenset({guard}))
    assert not program.launches_fixed(frozenset())
    cell = fusec.compile(lstm_cell)
    args = (torch.randn(8, 4), torch.randn(8, 8), torch.randn(8, 8))
    weights = (torch.randn(32, 4), torch.randn(32, 8))
    for _ in range(2):
        _same(cell, lstm_cell, *args, *weights)
        assert cell.launches_per_call == 1
    program = cell.last.program
    guards = frozenset(j for j, s in enumerate(program.steps) if s.kind == "guard")
    assert guards and not program.launches_fixed(frozenset())


def _transposed(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a.t() + b)


def _permuted(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(a.permute(2, 0, -2)) * b


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (_transposed, [(5, 3), (3, 5)]),
        (_transposed, [(1, 3), (3, 1)]),  # size-1 dims: the view's own pattern
        (_permuted, [(4, 5, 3), (3, 4, 5)]),
    ],
)
def test_the_guard_of_a_transposed_argument_is_implied_by_the_key(fn, shapes):
    """A guard of a transpose or permute of an argument is one the key implies
    (the view's sizes are the argument's, reordered): the fast path skips it."""
    from fusec.api.fast_call import _passing_guards

    f = fusec.compile(fn)
    args = [torch.randn(s) for s in shapes]
    for _ in range(3):
        _same(f, fn, *args)
        assert f.launches_per_call == 1
    program = f.last.program
    guards = {j for j, s in enumerate(program.steps) if s.kind == "guard"}
    assert guards
    assert _passing_guards(program, f.key(args)[1:], f.exact_shapes) == guards
    # Other inputs still get their own key, and the right results.
    more = [torch.randn(s) for s in shapes]
    more[0] = more[0].transpose(0, 1).contiguous().transpose(0, 1)
    _same(f, fn, *more)


# The C++ check (`SEEN`, TensorGuards) of the sizes and strides of calls that had the key.


class _Marked(torch.Tensor):
    """A tensor subclass: its own `__torch_function__` may change what ops do."""

_CHANGES = {
    "dtype": lambda g, c: (g.double(), c.double()),
    "device": lambda g, c: (g, c.to("meta")),
    "a size-1 dim": lambda g, c: (g, c[:1]),
    "contiguity": lambda g, c: (g, c.t().contiguous().t()),
    "requires_grad": lambda g, c: (g, c.clone().requires_grad_()),
    "a scalar for a tensor": lambda g, c: (g, 2.0),
    "a subclass": lambda g, c: (g, c.as_subclass(_Marked)),
}


@pytest.mark.parametrize("change", list(_CHANGES))
def test_the_cpp_check_rejects_what_the_key_rejects_and_the_call_falls_back(change):
    f = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    _same(f, lstm_tail, *args)
    seen = f._fast.__globals__["SEEN"]
    assert type(seen).__name__ == "TensorGuards"
    assert seen.check(*args)
    new = _CHANGES[change](*args)
    assert f._fast(new) is MISS
    assert not seen.check(*new)  # the C++ check rejects it too, before the key's checks
    try:
        want = lstm_tail(*new)
    except Exception as e:  # noqa: BLE001 - eager's error is the one to see
        with pytest.raises(type(e)):
            f(*new)
    else:
        got = f(*new)
        if change == "requires_grad":
            assert got[0].grad_fn is not None  # the training path ran
        torch.testing.assert_close(got, want)
    _same(f, lstm_tail, *args)  # and back, on the fast path
    assert f._fast(args) is not MISS


def test_the_cpp_check_remembers_new_sizes_of_the_same_key():
    f = fusec.compile(lstm_tail)
    _same(f, lstm_tail, torch.randn(8, 32), torch.randn(8, 8))
    other = (torch.randn(5, 24), torch.randn(5, 6))
    assert not f._fast.__globals__["SEEN"].check(*other)
    _same(f, lstm_tail, *other)  # the key's own checks pass it...
    assert f._fast.__globals__["SEEN"].check(*other)  # ...and the C++ check takes it on
    # A bounded number of times: past that, the last sizes remembered stay.
    from fusec.api import fast_call

    for b in range(2, 2 + fast_call._MAX_REMEMBERED + 2):
        _same(f, lstm_tail, torch.randn(b, 32), torch.randn(b, 8))
    assert f._fast.__globals__["REMEMBERED"] == fast_call._MAX_REMEMBERED
    args = (torch.randn(3, 32), torch.randn(3, 8))
    assert f._fast(args) is not MISS
    _same(f, lstm_tail, *args)


def test_grad_mode_is_checked_before_the_cpp_check():
    f = fusec.compile(lstm_tail)
    args = (torch.randn(8, 32), torch.randn(8, 8))
    _same(f, lstm_tail, *args)
    with torch.no_grad():
        assert f._fast(args) is MISS  # the key holds grad mode; the tensors are alike
        _same(f, lstm_tail, *args)


def test_scalars_are_checked_by_type_and_their_values_reach_the_program():
    def fn(x: torch.Tensor, s: float) -> torch.Tensor:
        return torch.sigmoid(x) * s + 1

    f = fusec.compile(fn)
    x = torch.randn(4, 4)
    _same(f, fn, x, 2.0)
    assert f.launches_per_call == 1
    for s in (3.0, -0.5):  # another value of the same type: the fast path, that value
        assert f._fast((x, s)) is not MISS
        _same(f, fn, x, s)
    assert f._fast((x, 2)) is MISS  # an int for a float: the full path
    _same(f, fn, x, 2)


def test_a_program_without_kernels_runs_as_the_original():
    calls = []

    def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return a + b

    f = fusec.compile(add)
    a, b = torch.randn(8, 1), torch.randn(1, 8)
    _same(f, add, a, b)
    assert f.launches_per_call == 0 and f.last.program.launches == 0
    calls.clear()
    torch.testing.assert_close(f(a, b), a + b)
    assert calls == [1]  # the fast path called the original once, nothing else ran it
    assert f._fast((a.double(), b)) is MISS  # and still checks the key
    torch.testing.assert_close(f(a.double(), b), a.double() + b)


def test_use_kernels_false_keeps_running_the_program():
    calls = []

    def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return torch.sigmoid(a) + b

    f = fusec.compile(add, use_kernels=False)
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    for _ in range(3):
        torch.testing.assert_close(f(a, b), torch.sigmoid(a) + b)
    assert f._fast((a, b)) is not MISS
    assert len(calls) == 1  # fx traced it once; the program ran every call


def test_parameters_take_the_fast_path_as_tensors_do():
    """AOTAutograd calls a model's forward and backward graphs with its
    `nn.Parameter`s themselves (grad mode off): they are plain strided tensors,
    so those calls stay on the fast path, and a parameter's new values are read."""

    def affine(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * w + b)

    f = fusec.compile(affine)
    x = torch.randn(8, 16)
    w, b = torch.nn.Parameter(torch.randn(16)), torch.nn.Parameter(torch.randn(16))
    with torch.no_grad():
        _same(f, affine, x, w, b)
        assert f._fast is not None and f._fast((x, w, b)) is not MISS
        w.mul_(-2.0)
        _same(f, affine, x, w, b)
        assert f.launches_per_call == 1

    # Another subclass of Tensor still takes the full path.
    class Marked(torch.Tensor):
        pass

    assert f._fast((x, w.detach().as_subclass(Marked), b)) is MISS


def test_training_graphs_of_a_model_take_the_fast_path():
    """The forward and backward graphs of `torch.compile(mlp, backend="fusec")`
    run their programs without the full path after the first step."""
    from fusec.api.training import clear_compiled_graphs, compiled_graphs

    torch._dynamo.reset()
    clear_compiled_graphs()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    reference = copy.deepcopy(model)
    x = torch.randn(5, 8)
    g = torch.compile(model, backend="fusec")
    g(x).square().sum().backward()
    graphs = compiled_graphs()
    assert {c.kind for c in graphs} == {"forward", "backward"}
    full: list[str] = []
    for c in graphs:
        inner = c.function._call

        def counted(args, kwargs, inner=inner, kind=c.kind):
            full.append(kind)
            return inner(args, kwargs)

        c.function._call = counted
    model.zero_grad()
    got = g(x)
    got.square().sum().backward()
    assert full == []
    want = reference(x)
    want.square().sum().backward()
    torch.testing.assert_close(got, want)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad)
