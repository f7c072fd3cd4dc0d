//===- DimEval.cpp - Dim expressions of manifests -------------------------===//

#include "DimEval.h"

#include "tessera/Shape/DimSyntax.h"

using namespace tessera;
using namespace tessera::runtime::detail;

std::optional<DimEval> DimEval::parse(std::string_view text,
                                      std::string &error) {
  dimsyntax::NodePtr root = dimsyntax::parse(text, error);
  if (!root)
    return std::nullopt;
  DimEval e;
  e.root = std::move(root);
  e.text = std::string(text);
  return e;
}

bool DimEval::isUnknown() const {
  return root->kind == dimsyntax::Node::Unknown;
}

std::optional<int64_t> DimEval::getConstant() const {
  if (root->kind == dimsyntax::Node::Constant)
    return root->value;
  return std::nullopt;
}

std::optional<std::string> DimEval::getSymbol() const {
  if (root->kind == dimsyntax::Node::Symbol)
    return root->name;
  return std::nullopt;
}

std::set<std::string> DimEval::symbols() const {
  std::set<std::string> out;
  dimsyntax::forEachSymbol(*root,
                           [&](const std::string &name) { out.insert(name); });
  return out;
}

std::optional<int64_t>
DimEval::evaluate(const std::map<std::string, int64_t> &env) const {
  return dimsyntax::evaluate(
      *root, [&](const std::string &name) -> std::optional<int64_t> {
        auto it = env.find(name);
        if (it == env.end())
          return std::nullopt;
        return it->second;
      });
}
