//===- Tile.cpp - Tile IR kernels to PTX ----------------------------------===//

#include "Bindings.h"

#include "tessera/API/TileKernels.h"

#include <nanobind/stl/string.h>

namespace tessera::python {

void bindTile(nb::module_ &m) {
  m.def(
      "compile_tile",
      [](const std::string &source, const std::string &chip,
         const std::string &features, int optLevel,
         const std::string &sourceName) {
        TileCompileOptions options;
        options.chip = chip;
        options.features = features;
        options.optLevel = optLevel;
        Result<CompiledTileModule> compiled = [&] {
          nb::gil_scoped_release release;
          return compileTileKernels(source, options, sourceName);
        }();
        CompiledTileModule out = take(std::move(compiled));
        nb::list kernels;
        for (const TileKernelInfo &k : out.kernels) {
          nb::dict d;
          d["name"] = k.name;
          d["num_warps"] = k.numWarps;
          d["shared_bytes"] = k.sharedBytes;
          nb::list words;
          for (int32_t w : k.launch.encode())
            words.append(w);
          d["launch"] = words;
          kernels.append(d);
        }
        nb::dict result;
        result["ptx"] = out.ptx;
        result["kernels"] = kernels;
        return result;
      },
      nb::arg("source"), nb::arg("chip") = "sm_90a",
      nb::arg("features") = "+ptx80", nb::arg("opt_level") = 3,
      nb::arg("source_name") = "<tile-kernels>",
      "Compiles the text of a module of Tile IR kernels to PTX: "
      "{'ptx': str, 'kernels': [{'name', 'num_warps', 'shared_bytes', "
      "'launch'}]} ('launch': the words of the kernel's launch record, as "
      "tessera/Runtime/LaunchRecord.h defines them).");
}

} // namespace tessera::python
