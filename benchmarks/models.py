"""A model zoo: eager PyTorch vs torch.compile (Inductor) vs fusec, one run per model.

    python benchmarks/models.py [--models gpt2,bert,...] [--rounds 10] [--threads 1]
                                [--cpu-time] [--first-call-rounds 1] [--no-first-call]
                                [--quick]

The zoo, built from configs with random weights (no downloads): Hugging Face
GPT-2, BERT and Llama (`transformers`, small configs: 2 layers, width 128), a
ViT-tiny (width 192, 12 layers, 3 heads, patch 16, on 96x96 images) and a
ResNet-18 (basic blocks 2-2-2-2, widths 64-512, on 64x64 images), both from
timm when it imports, else from `transformers`' ViT/ResNet classes with the
same shapes; an MLP (512-1024-1024-10, batch 256), the seeds' LSTM cell
unrolled over 50 steps (H=256, batch 32) and `nn.TransformerEncoderLayer`
(d_model 128, 4 heads, batch 8, sequence 64). Dropout is 0 (results compare
with eager's). A model whose library is missing is skipped with a note; the
`bench` extra installs them (`pip install -e ".[bench]"`). float32, CPU.

Per model and backend (eager, `torch.compile(backend="inductor")`,
`torch.compile(backend="fusec")`):
- `check`: the first training step's loss and gradients, and the first no-grad
  output, against eager's (rtol 1e-3, atol 1e-4); `MISMATCH` or `failed` if not.
- `train ms` / `infer ms`: one training step (zero_grad, forward, loss,
  backward, SGD step) and one `torch.no_grad()` forward; the backends step in
  turn, round after round, each time the median (as in `training.py`).
- `fw k` / `bw k` / `inf k`: fused kernels launched per call of the forward,
  backward and inference graphs. fusec: its graphs' `launches_per_call`.
  Inductor: the kernels it generated for those graphs
  (`torch._inductor.metrics.generated_kernel_count`, caches off; each runs
  once per call). Eager: none.
- `fw aten` / `bw aten` / `inf aten`: ATen calls per call, counted with
  `torch.profiler` (CPU activity) around one call after warm-up, the same way
  for every backend: the events whose name starts with `aten::` and that have
  no `aten::` event among their ancestors (an op's own inner ATen calls, e.g.
  `aten::linear` -> `aten::addmm`, count once, as the outer call). `fw` profiles
  the model's forward alone (the loss is computed outside), `bw` the backward
  from the output given the loss's gradient (`out.backward(grad)`: the loss's
  own backward is left out; gradient accumulation into `.grad` is in), `inf`
  the no-grad forward. The optimizer step is not counted. Allocations Inductor
  makes through ATen (`aten::empty_strided`) count; fused kernels (Inductor's
  C++ kernels, fusec's) are not ATen calls.
- `cold s` / `warm s`: the first training step (forward, loss, backward) in a
  fresh `python` process, timed from the start of the model call to the end
  of the backward: cold with empty cache directories (`FUSEC_CACHE_DIR`,
  `TORCHINDUCTOR_CACHE_DIR`), warm in a second process on the same ones
  (median over `--first-call-rounds`). `import s` is the child's import of
  torch, fusec and the model's library, excluded from the first call.
`f/e` and `f/i` (below the table): fusec's training and inference time over
eager's and Inductor's (below 1: fusec is faster). `--quick` runs tiny configs
(the smoke test in tests/test_bench_models.py uses it).
"""

from __future__ import annotations

import time

_START = time.perf_counter()

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import fusec  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import training  # noqa: E402
from training import bench, clear_compiled_graphs, compiled_graphs, no_grad_step, step_fn  # noqa: E402
from training_models import make_lstm, make_mlp  # noqa: E402

IMPORT_S = time.perf_counter() - _START
"""This process's import of torch and fusec (the model libraries import later)."""

BACKENDS = ("eager", "inductor", "fusec")
Workload = tuple[nn.Module, tuple, Callable[[Any], torch.Tensor]]


class FirstOutput(nn.Module):
    """A Hugging Face model's first output (logits or last hidden state), so
    every model returns one tensor."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.model(*args)[0]


def mean_square(out: torch.Tensor) -> torch.Tensor:
    return out.square().mean()


def _tokens(vocab: int, batch: int, seq: int) -> tuple[torch.Tensor]:
    return (torch.randint(0, vocab, (batch, seq)),)


def make_gpt2(quick: bool) -> Workload:
    from transformers import GPT2Config, GPT2LMHeadModel

    width, layers, vocab, batch, seq = (32, 1, 100, 2, 8) if quick else (128, 2, 1000, 8, 64)
    cfg = GPT2Config(
        n_layer=layers, n_embd=width, n_head=4, vocab_size=vocab, n_positions=seq,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return FirstOutput(GPT2LMHeadModel(cfg)), _tokens(vocab, batch, seq), mean_square


def make_bert(quick: bool) -> Workload:
    from transformers import BertConfig, BertModel

    width, layers, vocab, batch, seq = (32, 1, 100, 2, 8) if quick else (128, 2, 1000, 8, 64)
    cfg = BertConfig(
        hidden_size=width, num_hidden_layers=layers, num_attention_heads=4,
        intermediate_size=4 * width, vocab_size=vocab, max_position_embeddings=seq,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return (
        FirstOutput(BertModel(cfg, add_pooling_layer=False)),
        _tokens(vocab, batch, seq),
        mean_square,
    )


def make_llama(quick: bool) -> Workload:
    from transformers import LlamaConfig, LlamaForCausalLM

    width, layers, vocab, batch, seq = (32, 1, 100, 2, 8) if quick else (128, 2, 1000, 8, 64)
    cfg = LlamaConfig(
        hidden_size=width, intermediate_size=2 * width, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=vocab,
        max_position_embeddings=seq,
    )  # fmt: skip
    return FirstOutput(LlamaForCausalLM(cfg)), _tokens(vocab, batch, seq), mean_square


def _timm() -> Any | None:
    """timm, or None where it does not import (it needs torchvision, and PyPI's
    torchvision wheels pin a torch of their own)."""
    try:
        import timm
    except Exception:  # noqa: BLE001 - ImportError, or torchvision failing against this torch
        return None
    return timm


def make_vit_tiny(quick: bool) -> Workload:
    width, layers, heads, image, batch = (32, 1, 2, 32, 2) if quick else (192, 12, 3, 96, 4)
    images = (torch.randn(batch, 3, image, image),)
    timm = _timm()
    if timm is not None:
        model = timm.create_model(
            "vit_tiny_patch16_224", pretrained=False, img_size=image,
            embed_dim=width, depth=layers, num_heads=heads, num_classes=10,
        )  # fmt: skip
        return model, images, mean_square
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(
        hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * width, image_size=image, patch_size=16, num_labels=10,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return FirstOutput(ViTForImageClassification(cfg)), images, mean_square


def make_resnet18(quick: bool) -> Workload:
    widths, image, batch = ((8, 16, 16, 16), 32, 2) if quick else ((64, 128, 256, 512), 64, 4)
    images = (torch.randn(batch, 3, image, image),)
    timm = _timm()
    if timm is not None and not quick:
        return timm.create_model("resnet18", pretrained=False, num_classes=10), images, mean_square
    from transformers import ResNetConfig, ResNetForImageClassification

    cfg = ResNetConfig(
        embedding_size=widths[0], hidden_sizes=list(widths), depths=[2, 2, 2, 2],
        layer_type="basic", num_labels=10,
    )  # fmt: skip
    return FirstOutput(ResNetForImageClassification(cfg)), images, mean_square


def make_encoder_layer(quick: bool) -> Workload:
    width, batch, seq = (32, 2, 8) if quick else (128, 8, 64)
    layer = nn.TransformerEncoderLayer(
        d_model=width, nhead=4, dim_feedforward=4 * width, dropout=0.0, batch_first=True
    )
    return layer, (torch.randn(batch, seq, width),), mean_square


ZOO: dict[str, tuple[str | None, Callable[[bool], Workload]]] = {
    "gpt2": ("transformers", make_gpt2),
    "bert": ("transformers", make_bert),
    "llama": ("transformers", make_llama),
    "vit_tiny": ("transformers", make_vit_tiny),
    "resnet18": ("transformers", make_resnet18),
    "mlp": (None, lambda q: make_mlp(*((16, (32, 64, 10)) if q else (256, (512, 1024, 1024, 10))))),
    "lstm": (None, lambda q: make_lstm(*((4, 16, 4) if q else (32, 256, 50)))),
    "encoder_layer": (None, make_encoder_layer),
}
"""name -> (the library it needs, builder of (model, inputs, loss) given `quick`)."""


def missing_library(name: str) -> str | None:
    """The library model `name` needs and cannot import (None: all there)."""
    library = ZOO[name][0]
    if library is None:
        return None
    try:
        __import__(library)
    except ImportError:
        return library
    return None


def build(name: str, quick: bool) -> Workload:
    torch.manual_seed(0)
    model, inputs, loss_fn = ZOO[name][1](quick)
    return model.train(), inputs, loss_fn


def aten_calls(call: Callable[[], Any]) -> int:
    """ATen calls in one `call()`: profiled `aten::` events with no `aten::`
    event above them (an op's inner ATen calls count as the outer one)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        call()
    count = 0
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        count += parent is None
    return count


def train_aten_calls(forward: Callable[..., Any], inputs: tuple, loss_fn: Any) -> tuple[int, int]:
    """(ATen calls of one forward, of its backward from the output): the loss
    and its gradient are computed outside both."""
    box: dict[str, torch.Tensor] = {}
    fw = aten_calls(lambda: box.__setitem__("out", forward(*inputs)))
    out = box["out"]
    detached = out.detach().requires_grad_()
    loss_fn(detached).backward()
    grad = detached.grad
    bw = aten_calls(lambda: out.backward(grad))
    return fw, bw


def first_step(model: nn.Module, forward: Callable[..., Any], inputs: tuple, loss_fn: Any):
    """(loss, gradients) of one forward/backward, and the no-grad output."""
    model.zero_grad(set_to_none=True)
    loss = loss_fn(forward(*inputs))
    loss.backward()
    grads = [p.grad.clone() if p.grad is not None else None for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return loss.detach(), grads


def compare(got: Any, want: Any) -> str:
    """'ok', or 'MISMATCH: ...' (the first differing tensor's message)."""
    pairs = [(got[0], want[0]), *zip(got[1], want[1], strict=True)]
    for i, (g, w) in enumerate(pairs):
        if (g is None) != (w is None):
            return f"MISMATCH: gradient {i - 1} is {'missing' if g is None else 'extra'}"
        if g is None:
            continue
        try:
            torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-4)
        except AssertionError as e:
            what = "loss" if i == 0 else f"gradient {i - 1}"
            detail = " ".join(line.strip() for line in str(e).splitlines()[1:4])
            return f"MISMATCH: {what}: {detail}"
    return "ok"


@dataclass
class Row:
    """One backend's measurements of one model."""

    backend: str
    check: str = "ok"
    train_s: float = float("nan")
    infer_s: float = float("nan")
    kernels: tuple[int, int, int] | None = None
    aten: tuple[int, int, int] | None = None
    first_call: dict[str, float] = field(default_factory=dict)


def compiled(model: nn.Module, backend: str) -> Callable[..., Any]:
    return model if backend == "eager" else torch.compile(model, backend=backend)


def train_kernels(
    backend: str, forward: Callable[..., Any], m: nn.Module, inputs: tuple, loss_fn: Any
):
    """Runs the first training step on a fresh compile of `m`; returns
    (forward, its first step's result, fused kernels in forward, in backward)."""
    torch._dynamo.reset()
    if backend == "inductor":
        from torch._inductor import config, metrics

        metrics.reset()
        with config.patch(force_disable_caches=True):  # a cache hit generates no kernels
            m.zero_grad(set_to_none=True)
            loss = loss_fn(forward(*inputs))
            fw = metrics.generated_kernel_count
            loss.backward()
            bw = metrics.generated_kernel_count - fw
        grads = [p.grad.clone() if p.grad is not None else None for p in m.parameters()]
        m.zero_grad(set_to_none=True)
        return (loss.detach(), grads), fw, bw
    if backend == "fusec":
        clear_compiled_graphs()
        result = first_step(m, forward, inputs, loss_fn)
        graphs = compiled_graphs()
        fw = sum(g.launches_per_call for g in graphs if g.kind == "forward")
        bw = sum(g.launches_per_call for g in graphs if g.kind == "backward")
        return result, fw, bw
    return first_step(m, forward, inputs, loss_fn), 0, 0


def infer_kernels(backend: str, forward: Callable[..., Any], inputs: tuple) -> tuple[Any, int]:
    """(the first no-grad output of a fresh compile, its fused kernels per call)."""
    torch._dynamo.reset()
    if backend == "inductor":
        from torch._inductor import config, metrics

        metrics.reset()
        with config.patch(force_disable_caches=True), torch.no_grad():
            out = forward(*inputs)
        return out, metrics.generated_kernel_count
    known = set(map(id, fusec.dynamo_graphs()))
    with torch.no_grad():
        out = forward(*inputs)
    if backend == "fusec":
        return out, sum(g.launches_per_call for g in fusec.dynamo_graphs() if id(g) not in known)
    return out, 0


def measure(
    name: str, backends: tuple[str, ...] = BACKENDS, rounds: int = 10, quick: bool = False
) -> list[Row]:
    """Every measurement but the first-call times, of model `name`, per backend."""
    model, inputs, loss_fn = build(name, quick)
    want = first_step(model, model, inputs, loss_fn)
    rows: dict[str, Row] = {}
    train_steps: dict[str, Callable[[], Any]] = {}
    infer_steps: dict[str, Callable[[], Any]] = {}
    with torch.no_grad():
        want_out = model.eval()(*inputs)
    model.train()
    for backend in backends:
        row = rows[backend] = Row(backend)
        try:
            m = copy.deepcopy(model)
            forward = compiled(m, backend)
            got, fw_k, bw_k = train_kernels(backend, forward, m, inputs, loss_fn)
            row.check = compare(got, want)
            fw_a, bw_a = train_aten_calls(forward, inputs, loss_fn)
            train_steps[backend] = step_fn(m, forward, inputs, loss_fn)
            # Inference: another copy in eval mode (BatchNorm's running stats,
            # no autograd graph), compiled afresh.
            mi = copy.deepcopy(model).eval()
            forward_i = compiled(mi, backend)
            out, inf_k = infer_kernels(backend, forward_i, inputs)
            if row.check == "ok":
                try:
                    torch.testing.assert_close(out, want_out, rtol=1e-3, atol=1e-4)
                except AssertionError as e:
                    row.check = "MISMATCH: inference: " + " ".join(str(e).splitlines()[1:3])
            infer_steps[backend] = no_grad_step(forward_i, inputs)
            infer_steps[backend]()
            inf_a = aten_calls(infer_steps[backend])
            row.kernels = (fw_k, bw_k, inf_k)
            row.aten = (fw_a, bw_a, inf_a)
        except Exception as e:  # noqa: BLE001 - a backend's failure is reported, not fatal
            row.check = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
            train_steps.pop(backend, None)
            infer_steps.pop(backend, None)
    for s, attr in ((train_steps, "train_s"), (infer_steps, "infer_s")):
        for backend, t in (bench(s, rounds) if s else {}).items():
            setattr(rows[backend], attr, t)
    return list(rows.values())


def first_call_child(name: str, backend: str, quick: bool) -> None:
    """In a fresh process: import the model's library, build the model, time its
    first training step (forward, loss, backward); prints one JSON line."""
    t0 = time.perf_counter()
    library = ZOO[name][0]
    if library is not None:
        __import__(library)
    import_s = IMPORT_S + time.perf_counter() - t0
    model, inputs, loss_fn = build(name, quick)
    forward = compiled(model, backend)
    t0 = time.perf_counter()
    loss_fn(forward(*inputs)).backward()
    first_s = time.perf_counter() - t0
    print(json.dumps({"import_s": import_s, "first_s": first_s}))


def first_calls(
    name: str, backend: str, rounds: int, quick: bool, threads: int
) -> dict[str, float]:
    """Cold and warm first-call seconds (and import seconds) in fresh processes,
    the median over `rounds` pairs of processes."""
    cold: list[float] = []
    warm: list[float] = []
    imports: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as fusec_dir, tempfile.TemporaryDirectory() as ind_dir:
            env = {**os.environ, "FUSEC_CACHE_DIR": fusec_dir, "TORCHINDUCTOR_CACHE_DIR": ind_dir}
            cmd = [sys.executable, os.path.abspath(__file__), "--first-call-child", name, backend]
            cmd += ["--threads", str(threads)] + (["--quick"] if quick else [])
            for times in (cold, warm):
                p = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if p.returncode != 0:
                    raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr else "failed")
                run = json.loads(p.stdout.strip().splitlines()[-1])
                times.append(run["first_s"])
                imports.append(run["import_s"])
    return {
        "cold": statistics.median(cold),
        "warm": statistics.median(warm),
        "import": statistics.median(imports),
    }


def _num(x: float, scale: float = 1e3, fmt: str = "{:.2f}") -> str:
    return "-" if x != x else fmt.format(x * scale)


def table(name: str, rows: list[Row]) -> str:
    """The model's rows as Markdown, and fusec's ratios."""
    lines = [
        f"### {name}",
        "",
        "| backend | train ms | infer ms | fw k | bw k | inf k | fw aten | bw aten | inf aten "
        "| cold s | warm s | import s | check |",
        "|---|" + "---:|" * 11 + "---|",
    ]
    for r in rows:
        k = r.kernels or ("-",) * 3
        a = r.aten or ("-",) * 3
        fc = r.first_call
        firsts = [
            _num(fc.get(key, float("nan")), 1, "{:.1f}") for key in ("cold", "warm", "import")
        ]
        lines.append(
            f"| {r.backend} | {_num(r.train_s)} | {_num(r.infer_s)} | {k[0]} | {k[1]} | {k[2]} "
            f"| {a[0]} | {a[1]} | {a[2]} | {' | '.join(firsts)} | {r.check} |"
        )
    t = {r.backend: r for r in rows}
    if "fusec" in t:
        ratios = []
        for attr, label in (("train_s", "train"), ("infer_s", "infer")):
            f = getattr(t["fusec"], attr)
            for other, short in (("eager", "f/e"), ("inductor", "f/i")):
                if other in t:
                    ratios.append(f"{label} {short} {f / getattr(t[other], attr):.2f}")
        lines += ["", ", ".join(ratios)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--rounds", type=int, default=10, help="timed steps per backend")
    ap.add_argument("--threads", type=int, default=0, help="threads for torch and fusec (0: all)")
    ap.add_argument("--cpu-time", action="store_true", help="time with the process's CPU time")
    ap.add_argument("--first-call-rounds", type=int, default=1)
    ap.add_argument("--no-first-call", action="store_true", help="skip the fresh processes")
    ap.add_argument("--quick", action="store_true", help="tiny configs")
    ap.add_argument(
        "--first-call-child", nargs=2, metavar=("MODEL", "BACKEND"), help=argparse.SUPPRESS
    )
    opts = ap.parse_args()
    if opts.threads:
        torch.set_num_threads(opts.threads)
        os.environ["FUSEC_NUM_THREADS"] = str(opts.threads)
    if opts.first_call_child:
        first_call_child(*opts.first_call_child, opts.quick)
        return
    if opts.cpu_time:
        training.CLOCK = time.process_time
    models = [m for m in opts.models.split(",") if m]
    backends = tuple(b for b in opts.backends.split(",") if b)
    unknown = [m for m in models if m not in ZOO]
    if unknown:
        raise SystemExit(f"--models: unknown {unknown}; known: {sorted(ZOO)}")
    timm = _timm()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}, "
        f"timm: {timm.__version__ if timm else 'not importable (ViT/ResNet from transformers)'}, "
        f"{'CPU' if opts.cpu_time else 'wall'} time, median of {opts.rounds}"
        f"{', quick configs' if opts.quick else ''}\n",
        flush=True,
    )
    for name in models:
        missing = missing_library(name)
        if missing:
            print(
                f'### {name}\n\nskipped: {missing} is not installed (`pip install -e ".[bench]"`)\n'
            )
            continue
        rows = measure(name, backends, opts.rounds, opts.quick)
        if not opts.no_first_call:
            for row in rows:
                try:
                    row.first_call = first_calls(
                        name, row.backend, opts.first_call_rounds, opts.quick, opts.threads
                    )
                except Exception as e:  # noqa: BLE001 - reported in the table
                    row.check += f"; first call failed: {str(e)[:120]}"
        print(table(name, rows), flush=True)


if __name__ == "__main__":
    main()
