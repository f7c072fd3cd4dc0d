//===- Signature.cpp - What a compiled function takes and returns ---------===//
//
// The manifest is line based:
//
//   tessera-manifest 1
//   function <name> <#arguments> <#results>
//   arg <dtype> <rank> <dim>...      (or: arg key)
//   result <dtype> <rank> <dim>...   (or: result key)
//
// Dims are dim expressions without spaces.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Signature.h"

#include "DimEval.h"

#include <sstream>

using namespace tessera::runtime;

std::string TensorSpec::describe() const {
  if (isKey)
    return "key";
  std::string text = std::string(isState ? "state " : "") + name(dtype) + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + dims[i];
  return text + "]";
}

std::string FunctionSignature::describe() const {
  std::string text = "@" + name + "(";
  for (size_t i = 0; i < arguments.size(); ++i)
    text += (i ? ", " : "") + arguments[i].describe();
  text += ") -> (";
  for (size_t i = 0; i < results.size(); ++i)
    text += (i ? ", " : "") + results[i].describe();
  return text + ")";
}

static void printSpec(std::ostringstream &os, const char *what,
                      const TensorSpec &spec) {
  os << what;
  if (spec.isKey) {
    os << " key\n";
    return;
  }
  os << (spec.isState ? " state " : " ") << name(spec.dtype) << " "
     << spec.dims.size();
  for (const std::string &d : spec.dims) {
    os << " ";
    for (char c : d)
      if (c != ' ')
        os << c;
  }
  os << "\n";
}

std::string
tessera::runtime::printManifest(const std::vector<FunctionSignature> &fns) {
  std::ostringstream os;
  os << "tessera-manifest 1\n";
  for (const FunctionSignature &fn : fns) {
    os << "function " << fn.name << " " << fn.arguments.size() << " "
       << fn.results.size() << "\n";
    for (const TensorSpec &a : fn.arguments)
      printSpec(os, "arg", a);
    for (const TensorSpec &r : fn.results)
      printSpec(os, "result", r);
  }
  return os.str();
}

Result<std::vector<FunctionSignature>>
tessera::runtime::parseManifest(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  unsigned lineNumber = 0;
  auto bad = [&](const std::string &why) {
    return Error{"malformed manifest, line " + std::to_string(lineNumber) +
                 ": " + why + " in '" + line + "'"};
  };
  if (!std::getline(in, line) || line != "tessera-manifest 1")
    return Error{"malformed manifest: expected 'tessera-manifest 1' first, "
                 "found '" +
                 line + "'"};
  ++lineNumber;
  std::vector<FunctionSignature> fns;
  size_t argumentsLeft = 0, resultsLeft = 0;
  while (std::getline(in, line)) {
    ++lineNumber;
    if (line.empty())
      continue;
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "function") {
      if (argumentsLeft || resultsLeft)
        return bad("the previous function has too few arguments or results");
      FunctionSignature fn;
      if (!(words >> fn.name >> argumentsLeft >> resultsLeft))
        return bad("expected 'function <name> <#arguments> <#results>'");
      fns.push_back(std::move(fn));
      continue;
    }
    bool isArgument = kind == "arg";
    if (!isArgument && kind != "result")
      return bad("expected 'function', 'arg' or 'result'");
    if (fns.empty() || (isArgument ? argumentsLeft : resultsLeft) == 0)
      return bad("more " + kind + " lines than the function declares");
    TensorSpec spec;
    std::string dtype;
    words >> dtype;
    if (dtype == "state") {
      spec.isState = true;
      words >> dtype;
    }
    if (dtype == "key" && !spec.isState) {
      spec.isKey = true;
      spec.dtype = DType::i32;
      spec.dims = {"2"};
    } else {
      auto type = parseDType(dtype);
      size_t rank;
      if (!type)
        return bad("unknown dtype '" + dtype + "'");
      if (!(words >> rank) || rank > 64)
        return bad("expected a rank");
      spec.dtype = *type;
      for (size_t i = 0; i < rank; ++i) {
        std::string dim, error;
        if (!(words >> dim))
          return bad("expected " + std::to_string(rank) + " dims");
        if (!detail::DimEval::parse(dim, error))
          return bad("bad dim '" + dim + "': " + error);
        spec.dims.push_back(dim);
      }
    }
    std::string extra;
    if (words >> extra)
      return bad("unexpected '" + extra + "'");
    (isArgument ? fns.back().arguments : fns.back().results)
        .push_back(std::move(spec));
    --(isArgument ? argumentsLeft : resultsLeft);
  }
  if (argumentsLeft || resultsLeft)
    return Error{"malformed manifest: the last function has too few "
                 "arguments or results"};
  return fns;
}
