// Uses the installed C++ API: traces f(x) = sum(x * sin(x)), takes its
// gradient, compiles and checks it against sin(x) + x cos(x).
#include "tessera/Tessera.h"

#include <cmath>
#include <cstdio>

using namespace tessera;

int main() {
  Module m;
  auto f = m.trace("f", {{{"N"}, DType::f64, "x"}}, [](std::vector<Tensor> a) {
    return std::vector{op::reduce_sum(a[0] * op::sin(a[0]))};
  });
  if (!f)
    return std::printf("trace: %s\n", f.error().message.c_str()), 1;
  auto g = m.grad(*f, {0}, /*isPublic=*/true);
  if (!g)
    return std::printf("grad: %s\n", g.error().message.c_str()), 1;
  auto exe = m.compile();
  if (!exe)
    return std::printf("compile: %s\n", exe.error().message.c_str()), 1;
  auto fn = (*exe)->function(g->name);
  auto x = runtime::HostBuffer::allocate(DType::f64, {5});
  for (int i = 0; i < 5; ++i)
    x->as<double>()[i] = 0.3 * i - 0.7;
  auto out = fn->call({*x});
  if (!out)
    return std::printf("call: %s\n", out.error().message.c_str()), 1;
  for (int i = 0; i < 5; ++i) {
    double v = x->as<double>()[i];
    double want = std::sin(v) + v * std::cos(v);
    if (std::fabs((*out)[0].as<double>()[i] - want) > 1e-14)
      return std::printf("gradient %d: %.17g, expected %.17g\n", i,
                         (*out)[0].as<double>()[i], want),
             1;
  }
  std::printf("package ok\n");
  return 0;
}
