//===- GradCheckTest.cpp - checkGradients from C++ ------------------------===//

#include "tessera/Execution/GradCheck.h"
#include "tessera/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;
namespace rt = ::tessera::runtime;

namespace {

class GradCheck : public ::testing::Test {
protected:
  GradCheck() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    mlir::tessera::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(StringRef text) {
    return parseSourceString<ModuleOp>(text, &context);
  }

  static rt::HostBuffer random(std::vector<int64_t> shape, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(-1, 1);
    auto b = rt::HostBuffer::allocate(rt::DType::f64, shape);
    for (int64_t i = 0; i < b->numElements(); ++i)
      b->as<double>()[i] = unit(rng);
    return std::move(*b);
  }

  MLIRContext context;
};

constexpr const char *kLayer = R"mlir(
func.func @layer(%x: tensor<3x4xf64>, %w: tensor<4x5xf64>) -> tensor<3x5xf64> {
  %h = tgraph.matmul %x, %w : (tensor<3x4xf64>, tensor<4x5xf64>) -> tensor<3x5xf64>
  %y = tgraph.tanh %h : tensor<3x5xf64>
  return %y : tensor<3x5xf64>
}
)mlir";

TEST_F(GradCheck, CorrectRulesPass) {
  auto module = parse(kLayer);
  ASSERT_TRUE(module);
  std::vector<rt::HostBuffer> args;
  args.push_back(random({3, 4}, 1));
  args.push_back(random({4, 5}, 2));
  mlir::tessera::GradCheckOptions options;
  options.order = 2;
  auto result =
      mlir::tessera::checkGradients(*module, "layer", {0, 1}, args, options);
  ASSERT_TRUE(succeeded(result));
  EXPECT_TRUE(result->passed);
  EXPECT_LT(result->worstError, 1e-6);
  // JVP, VJP and JVP of VJP for each of 3 directions.
  EXPECT_EQ(result->lines.size(), 9u);
}

// A custom VJP whose backward rule is off by a factor of 2: the checker
// reports the VJP and accepts the JVP (which differentiates the callee).
constexpr const char *kWrongRule = R"mlir(
func.func private @sq(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = tgraph.square %x : tensor<4xf64>
  return %y : tensor<4xf64>
}
func.func private @sq_fwd(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %y = tgraph.square %x : tensor<4xf64>
  return %y, %x : tensor<4xf64>, tensor<4xf64>
}
func.func private @sq_bwd(%x: tensor<4xf64>, %ct: tensor<4xf64>) -> tensor<4xf64> {
  %g = tgraph.mul %x, %ct : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %g : tensor<4xf64>
}
func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = tgraph.custom_vjp @sq(%x) fwd @sq_fwd bwd @sq_bwd : (tensor<4xf64>) -> tensor<4xf64>
  return %y : tensor<4xf64>
}
)mlir";

TEST_F(GradCheck, WrongRuleFails) {
  auto module = parse(kWrongRule);
  ASSERT_TRUE(module);
  std::vector<rt::HostBuffer> args;
  args.push_back(random({4}, 3));
  auto result = mlir::tessera::checkGradients(*module, "f", {0}, args);
  ASSERT_TRUE(succeeded(result));
  EXPECT_FALSE(result->passed);
  bool vjpFailed = false, jvpPassed = true;
  for (const std::string &line : result->lines) {
    if (line.rfind("VJP", 0) == 0 && line.find("FAILED") != std::string::npos)
      vjpFailed = true;
    if (line.rfind("JVP", 0) == 0 && line.find("FAILED") != std::string::npos)
      jvpPassed = false;
  }
  EXPECT_TRUE(vjpFailed);
  EXPECT_TRUE(jvpPassed);
}

TEST_F(GradCheck, NonFloat64ArgumentsAreRejected) {
  auto module = parse(kLayer);
  ASSERT_TRUE(module);
  std::vector<rt::HostBuffer> args;
  args.push_back(*rt::HostBuffer::zeros(rt::DType::f32, {3, 4}));
  args.push_back(random({4, 5}, 2));
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str();
    return success();
  });
  auto result = mlir::tessera::checkGradients(*module, "layer", {0}, args);
  EXPECT_TRUE(failed(result));
  EXPECT_NE(diagnostics.find("argument 0 must be a float64 tensor"),
            std::string::npos)
      << diagnostics;
}

} // namespace
