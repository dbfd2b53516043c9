# lit configuration for fusec's FileCheck tests (`lit -v filecheck/`).
import os
import shutil

import lit.formats

config.name = "fusec"  # noqa: F821 - lit injects `config`
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["Inputs", "lit.cfg.py"]  # noqa: F821
# Tools come from the environment fusec is installed in.
config.environment["PATH"] = os.environ.get("PATH", "")  # noqa: F821
for var in ("FUSEC_CACHE_DIR", "HOME", "PYTHONPATH", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]  # noqa: F821
for tool in ("fusec-opt", "filecheck"):
    if shutil.which(tool) is None:
        lit_config.fatal(f"'{tool}' is not on PATH: install fusec with its dev extra")  # noqa: F821
# `REQUIRES: cuda-toolchain`: PTX tests need libdevice (fusec's `cuda` extra).
try:
    from fusec.backends.cuda_toolchain import find_toolchain

    if find_toolchain().libdevice is not None:
        config.available_features.add("cuda-toolchain")  # noqa: F821
except ImportError:
    pass
