"""`fusec-opt`: xdsl-opt with fusec's dialects, passes and pipelines registered.

    fusec-opt --fuse model.mlir
    fusec-opt -p canonicalize,cse --split-input-file --verify-diagnostics tests.mlir

Every error is a located diagnostic (`file:line:col: error: ...`) and exit status 1,
never a Python traceback.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
from collections.abc import Sequence
from typing import IO

from fusec.codegen.pipelines import EMIT_PIPELINES, FUSE_PIPELINE
from fusec.runtime import env
from fusec.tools.diagnostics import (
    LocatedError,
    format_parse_error,
    located_verify_error,
    parse_and_verify,
)
from fusec.tools.pass_help import wants_help
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain


class UsageError(Exception):
    """A bad command line (an unknown pass, a malformed pipeline): reported as
    `fusec-opt: error: ...`, exit status 1."""


def expand_pipeline_flags(argv: Sequence[str]) -> list[str]:
    """Rewrite `--fuse` and `--emit=<stage>` into one `-p` pipeline (and `-t` target):
    fusion first, then the user's `-p` passes, then the stage's lowering."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--fuse", action="store_true")
    pre.add_argument("--emit")
    pre.add_argument("-p", "--passes", default="")
    pre.add_argument("-t", "--target")
    known, rest = pre.parse_known_args(list(argv))
    if known.emit is not None and known.emit not in EMIT_PIPELINES:
        stages = ", ".join(sorted(EMIT_PIPELINES))
        raise UsageError(f"--emit: unknown stage '{known.emit}' (choose from {stages})")
    if not known.fuse and known.emit is None:
        return list(argv)
    stages = [FUSE_PIPELINE if known.fuse else "", known.passes]
    target: str | None = known.target
    if known.emit is not None:
        passes, stage_target = EMIT_PIPELINES[known.emit]
        stages.append(passes)
        # An explicit `-t` refines the stage's target, e.g. `-t 'ptx{arch=sm_90}'`.
        target = target or stage_target
    out = [*rest, "-p", ",".join(s for s in stages if s)]
    if target is not None:
        out += ["-t", target]
    return out


_EXTERNAL_TOOLS = {"mlir-opt": "mlir-opt"}
"""xDSL passes that run an external program, and which."""

RECURSION_LIMIT = 20_000
STACK_BYTES = 512 << 20
"""Deeply nested input (hundreds of nested regions, parentheses) recurses in the
parser, verifier and printer: fusec-opt runs in a thread with this stack and
recursion limit, and input past it is a located "nested too deeply" error."""


class FusecOptMain(xDSLOptMain):
    """xdsl-opt with fusec's registrations; the driver itself is xDSL's."""

    def __init__(self, args: Sequence[str] | None = None):
        argv = sys.argv[1:] if args is None else args
        self._help = wants_help(list(argv))
        super().__init__("fusec modular optimizer driver", expand_pipeline_flags(argv))

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        from fusec.dialects.aten import Aten
        from fusec.dialects.fusion import Fusion

        for dialect in (Aten, Fusion):
            if dialect.name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(dialect.name, lambda d=dialect: d)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        from fusec.passes import FUSEC_PASSES

        for name, factory in FUSEC_PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        from fusec.tools.targets import FUSEC_TARGETS

        self.available_targets.update(FUSEC_TARGETS)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--fuse",
            action="store_true",
            help=f"run the default fusion pipeline ({FUSE_PIPELINE or 'empty'}) before -p",
        )
        arg_parser.add_argument(
            "--emit",
            choices=sorted(EMIT_PIPELINES) or None,
            help="lower to this stage after the other passes",
        )
        arg_parser.add_argument(
            "--view-fusion-graph",
            metavar="OUT.html",
            help="write the fusion groups after the pipeline as a self-contained HTML/SVG page",
        )
        arg_parser.version = "fusec-opt"  # type: ignore[attr-defined]
        if self._help:  # describing the passes imports them all: only for --help
            from fusec.tools.pass_help import passes_help

            arg_parser.epilog = passes_help()
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter

    def apply_passes(self, prog: ModuleOp) -> None:
        # xDSL verifies the module between passes and raises the bare message:
        # point at the op that fails (or its closest located ancestor) instead.
        try:
            self._apply_passes(prog)
        except VerifyException as e:
            raise located_verify_error(prog, e) from None

    def _apply_passes(self, prog: ModuleOp) -> None:
        path = self.args.view_fusion_graph
        if not path:
            return super().apply_passes(prog)
        from fusec.tools.view_fusion_graph import FusionGraphView

        view = self.__dict__.setdefault("_view", FusionGraphView(path))
        with view.watching() as remarks:
            super().apply_passes(prog)
        view.add(prog, remarks)
        view.write()

    def setup_pipeline(self) -> None:
        # xDSL reports unknown passes and bad pass options as plain exceptions.
        try:
            super().setup_pipeline()
        except ArgSpecParseError as e:
            # Not an `Exception`: xDSL derives it from `BaseException`.
            raise UsageError(f"invalid pass pipeline: {e}") from None
        except (ValueError, KeyError, TypeError, ParseError) as e:
            msg = e.msg if isinstance(e, ParseError) else str(e)
            raise UsageError(f"invalid pass pipeline '{self.args.passes}': {msg}") from None
        for p in self.pipeline.passes:
            tool = _EXTERNAL_TOOLS.get(p.name)
            if tool is not None and shutil.which(tool) is None:
                raise UsageError(f"pass '{p.name}' needs the '{tool}' executable on PATH")

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_located

    def _parse_located(self, io: IO[bytes], line_offset: int = 0) -> ModuleOp:
        return parse_and_verify(self.ctx, io.read(), self.get_input_name(), line_offset)

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        # Split files keep their line numbers in diagnostics.
        if file_extension == "mlir" and not self.args.frontend:
            return self._parse_located(chunk, start_offset)
        return super().parse_chunk(chunk, file_extension, start_offset)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `fusec-opt` console script: `run` on a thread with a
    large stack (see `STACK_BYTES`)."""
    status: list[int] = [1]

    def target() -> None:
        status[0] = run(argv)

    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    try:
        threading.stack_size(STACK_BYTES)
        sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
        worker = threading.Thread(target=target, name="fusec-opt")
        worker.start()
    except (RuntimeError, ValueError, MemoryError):  # no big stacks here: run as is
        sys.setrecursionlimit(old_limit)
        return run(argv)
    finally:
        threading.stack_size(old_stack)
    worker.join()
    sys.setrecursionlimit(old_limit)
    return status[0]


def run(argv: Sequence[str] | None = None) -> int:
    """fusec-opt on `argv`; its exit status (0, or 1 with a diagnostic)."""
    try:
        FusecOptMain(argv).run()
    except LocatedError as e:
        print(e, file=sys.stderr)
        return 1
    except UsageError as e:
        print(f"fusec-opt: error: {e}", file=sys.stderr)
        return 1
    except ParseError as e:
        print(format_parse_error(e), file=sys.stderr)
        return 1
    except DiagnosticException as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"fusec-opt: error: {e.strerror}: '{e.filename}'", file=sys.stderr)
        return 1
    except RecursionError:
        print("fusec-opt: error: input nested too deeply", file=sys.stderr)
        return 1
    except SystemExit as e:  # argparse: usage errors are status 1, as in mlir-opt
        return 1 if e.code == 2 else (e.code if isinstance(e.code, int) else 1)
    except Exception as e:  # noqa: BLE001 - the tool promises no tracebacks
        if env.traceback():
            raise
        print(
            f"fusec-opt: internal error: {type(e).__name__}: {e}\n"
            "(set FUSEC_TRACEBACK=1 for the Python traceback)",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
