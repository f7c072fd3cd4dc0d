//===- transformer_block.cpp - A transformer training step from C++ -------===//
//
// One training step of a pre-norm transformer block written against the
// C++ API: the block is tessera::nn::transformer_block (layernorm, q/k/v
// projections, rotary embeddings, causal attention, output projection,
// residual, layernorm, tanh-GELU MLP, residual), the loss is mean(y^2) in
// f32, and the step returns the loss and the gradient of every parameter
// (reverse mode as a Graph IR transformation). It is the step of
// bench/gpu/jit_block_bench.py, which writes it in Python: both compile to
// the same program and give the same bits.
//
//   transformer_block [--batch B] [--seq S] [--dim D] [--heads H] [--ffn F]
//                     [--dtype bf16|f32] [--inputs DIR] [--out DIR]
//                     [--device cpu|cuda|cuda:K [--autotune]] [--steps N]
//   transformer_block ... --emit-gpu FILE [--chip sm_90a] [--sms N] [--cubin]
//
// The parameters and x come from DIR/<name>.npy (attn.wq.npy, ..., x.npy)
// or are drawn from a seeded generator (weights N(0, 1/fan_in), norm scales
// near 1, small biases, x standard normal). --out writes loss.npy and
// grad.<name>.npy; --steps times that many steps. --autotune tunes the
// products' schedules on the GPU at the first compile (Module::compile's
// autotune: kept beside the compile cache, so a second run tunes nothing).
// --emit-gpu compiles the
// step for a GPU into a program file instead (no GPU needed), which
// `tessera-run FILE` or the runtime alone runs.
//
//===----------------------------------------------------------------------===//

#include "tessera/Tessera.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

using namespace tessera;
namespace rt = tessera::runtime;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "transformer_block: error: %s\n", message.c_str());
  return 1;
}

struct Options {
  int64_t batch = 1, seq = 2048, dim = 1024, heads = 16, ffn = 4096;
  DType dtype = DType::bf16;
  std::string inputs, out, device = "cpu", emitGpu, chip = "sm_90a";
  int64_t sms = 132, steps = 0;
  bool cubin = false, autotune = false;
};

/// step(params..., x) -> (loss, d loss / d params...), the parameters in
/// nn::TransformerBlock::names() order.
Result<Function> buildStep(Module &m, const Options &o) {
  std::vector<TensorSpec> specs =
      nn::TransformerBlock::specs(o.dim, o.ffn, o.dtype);
  specs.push_back({{o.batch, o.seq, o.dim}, o.dtype, "x"});
  const int64_t heads = o.heads;
  auto loss = m.trace(
      "loss", specs,
      [heads](std::vector<Tensor> a) {
        Tensor x = a.back();
        a.pop_back();
        Tensor y = nn::transformer_block(nn::TransformerBlock::fromFlat(a), x,
                                         heads);
        // As the Python step writes it: y cast to f32 twice, then squared.
        Tensor y1 = op::cast(y, DType::f32);
        Tensor y2 = op::cast(y, DType::f32);
        return std::vector<Tensor>{op::reduce_mean(y1 * y2)};
      },
      /*isPublic=*/false);
  if (!loss)
    return loss.error();
  std::vector<int> wrt(nn::TransformerBlock::names().size());
  for (size_t i = 0; i < wrt.size(); ++i)
    wrt[i] = int(i);
  auto grad = m.grad(*loss, wrt);
  if (!grad)
    return grad.error();
  return m.trace("value_and_grad_loss", specs, [&](std::vector<Tensor> a) {
    std::vector<Tensor> out = m.call(*loss, a);
    for (Tensor &g : m.call(*grad, a))
      out.push_back(g);
    return out;
  });
}

uint16_t toBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40); // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1);    // round to nearest even
  return uint16_t(u >> 16);
}

Result<rt::HostBuffer> randomBuffer(const TensorSpec &spec, std::mt19937_64 &g) {
  std::vector<int64_t> shape;
  for (const Dim &d : spec.shape)
    shape.push_back(d.size());
  auto buffer = rt::HostBuffer::allocate(spec.dtype, shape);
  if (!buffer)
    return buffer.error();
  std::normal_distribution<double> normal;
  const std::string &n = spec.name;
  bool weight = n.size() > 2 && (n.back() == 'w' || n.rfind("attn.", 0) == 0);
  double scale = weight ? 1.0 / std::sqrt(double(shape[0]))
                 : n == "x" ? 1.0
                            : 0.1;
  double shift = n.size() > 6 && n.substr(n.size() - 6) == ".scale" ? 1.0 : 0;
  for (int64_t i = 0, e = buffer->numElements(); i < e; ++i) {
    float v = float(shift + scale * normal(g));
    if (spec.dtype == DType::bf16)
      buffer->as<uint16_t>()[i] = toBF16(v);
    else
      buffer->as<float>()[i] = v;
  }
  return buffer;
}

Result<std::vector<rt::HostBuffer>> arguments(const Options &o) {
  std::vector<TensorSpec> specs =
      nn::TransformerBlock::specs(o.dim, o.ffn, o.dtype);
  specs.push_back({{o.batch, o.seq, o.dim}, o.dtype, "x"});
  std::vector<rt::HostBuffer> args;
  std::mt19937_64 g(0);
  for (const TensorSpec &spec : specs) {
    auto b = o.inputs.empty()
                 ? randomBuffer(spec, g)
                 : rt::HostBuffer::loadNpy(o.inputs + "/" + spec.name + ".npy",
                                           spec.dtype);
    if (!b)
      return b.error();
    args.push_back(std::move(*b));
  }
  return args;
}

bool parseInt(const char *text, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < 0)
    return false;
  out = v;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  const char *usage =
      "expected --batch B, --seq S, --dim D, --heads H, --ffn F (numbers), "
      "--dtype bf16|f32, --inputs DIR, --out DIR, --device cpu|cuda|cuda:K, "
      "--autotune, --steps N, --emit-gpu FILE, --chip sm_XX, --sms N or "
      "--cubin";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    int64_t *number = a == "--batch"   ? &o.batch
                      : a == "--seq"   ? &o.seq
                      : a == "--dim"   ? &o.dim
                      : a == "--heads" ? &o.heads
                      : a == "--ffn"   ? &o.ffn
                      : a == "--sms"   ? &o.sms
                      : a == "--steps" ? &o.steps
                                       : nullptr;
    if (number && hasValue) {
      if (!parseInt(argv[++i], *number))
        return fail(a + " takes a number >= 0, got '" + argv[i] + "'");
    } else if (a == "--dtype" && hasValue) {
      std::string d = argv[++i];
      if (d != "bf16" && d != "f32")
        return fail("--dtype takes bf16 or f32, got '" + d + "'");
      o.dtype = d == "bf16" ? DType::bf16 : DType::f32;
    } else if (a == "--inputs" && hasValue) {
      o.inputs = argv[++i];
    } else if (a == "--out" && hasValue) {
      o.out = argv[++i];
    } else if (a == "--device" && hasValue) {
      o.device = argv[++i];
    } else if (a == "--emit-gpu" && hasValue) {
      o.emitGpu = argv[++i];
    } else if (a == "--chip" && hasValue) {
      o.chip = argv[++i];
    } else if (a == "--cubin") {
      o.cubin = true;
    } else if (a == "--autotune") {
      o.autotune = true;
    } else {
      return fail("unknown argument '" + a + "' (" + usage + ")");
    }
  }
  if (o.batch < 1 || o.seq < 1 || o.dim < 1 || o.heads < 1 || o.ffn < 1)
    return fail("--batch, --seq, --dim, --heads and --ffn must be >= 1");
  if (o.dim % o.heads || (o.dim / o.heads) % 2)
    return fail("--dim " + std::to_string(o.dim) + " must be a multiple of " +
                std::to_string(o.heads) + " heads with an even head dim");
  Target target = Target::cpu();
  if (o.device.rfind("cuda", 0) == 0) {
    int64_t index = 0;
    if (o.device.size() > 4 &&
        (o.device[4] != ':' || !parseInt(o.device.c_str() + 5, index)))
      return fail("--device " + o.device + ": expected cpu, cuda or cuda:K");
    target = Target::cuda(int(index));
  } else if (o.device != "cpu") {
    return fail("--device " + o.device + ": expected cpu, cuda or cuda:K");
  }
  if (o.autotune && target.kind != Target::Kind::CUDA)
    return fail("--autotune tunes GPU schedules: it needs --device cuda");

  Module m;
  auto step = buildStep(m, o);
  if (!step)
    return fail(step.error().message);

  if (!o.emitGpu.empty()) {
    GPUCompileOptions options;
    options.entry = step->name;
    options.chip = o.chip;
    options.multiprocessors = o.sms;
    options.cubin = o.cubin;
    auto image = m.compileGPU(options);
    if (!image)
      return fail(image.error().message);
    if (rt::Status s = image->save(o.emitGpu); !s)
      return fail(s.error().message);
    std::printf("wrote %s: %zu launches\n", o.emitGpu.c_str(),
                image->steps.size());
    return 0;
  }

  auto args = arguments(o);
  if (!args)
    return fail(args.error().message);
  auto exe = m.compile({Module::defaultCacheDirectory(), target, o.autotune});
  if (!exe)
    return fail(exe.error().message);
  auto fn = (*exe)->function(step->name);
  if (!fn)
    return fail("the compiled module lacks @" + step->name);
  auto out = fn->call(*args);
  if (!out)
    return fail(out.error().message);
  const rt::HostBuffer &loss = (*out)[0];
  std::printf("loss %.6f\n", double(*loss.as<float>()));
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    const auto &names = nn::TransformerBlock::names();
    for (size_t i = 0; i < out->size(); ++i) {
      std::string path = o.out + "/" +
                         (i == 0 ? std::string("loss") : "grad." + names[i - 1]) +
                         ".npy";
      if (rt::Status s = (*out)[i].saveNpy(path); !s)
        return fail(s.error().message);
    }
  }
  if (o.steps > 0) {
    auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < o.steps; ++i)
      if (auto r = fn->call(*args); !r)
        return fail(r.error().message);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count() /
                double(o.steps);
    std::printf("%.3f ms per step on %s (host arguments, results copied "
                "back)\n",
                ms, o.device.c_str());
  }
  return 0;
}
