# Lit configuration for Tessera's IR tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Tessera"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "cpu"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessera_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["tessera-opt", "FileCheck", "not", "count"],
    [config.tessera_tools_dir, config.llvm_tools_dir])

# GPU code: ptxas (from the CUDA toolkit, on PATH or in /usr/local/cuda)
# validates the PTX that the NVVM tests generate; without it those RUN
# lines are unsupported.
import shutil
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas"
    if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
    # The NVVM pipeline links libdevice (math functions) from the toolkit
    # that CUDA_ROOT names.
    config.environment["CUDA_ROOT"] = os.path.dirname(
        os.path.dirname(os.path.realpath(ptxas)))
config.substitutions.append(
    ("%extract_ptx", "python3 " + os.path.join(
        os.path.dirname(config.test_source_root), "tools", "scripts",
        "extract_ptx.py")))
