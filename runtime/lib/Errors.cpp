//===- Errors.cpp - Errors raised by compiled code ------------------------===//

#include "tessera/Runtime/Errors.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>

using namespace tessera::runtime;

namespace {
// The call in progress on this thread: where to unwind to and the message.
thread_local std::jmp_buf *target = nullptr;
thread_local std::string *pending = nullptr;
} // namespace

std::optional<std::string>
tessera::runtime::callCatchingErrors(void (*body)(void *), void *context) {
  std::jmp_buf here;
  std::string message;
  std::jmp_buf *outerTarget = target;
  std::string *outerPending = pending;
  target = &here;
  pending = &message;
  if (setjmp(here) != 0) {
    target = outerTarget;
    pending = outerPending;
    return message;
  }
  body(context);
  target = outerTarget;
  pending = outerPending;
  return std::nullopt;
}

void tessera::runtime::raiseError(const std::string &message) {
  if (!target) {
    std::fprintf(stderr, "tessera runtime: %s\n", message.c_str());
    std::abort();
  }
  *pending = message;
  std::longjmp(*target, 1);
}

extern "C" void tessera_shape_check_failed(const char *message,
                                           std::int64_t lhs, std::int64_t rhs) {
  raiseError(std::string("run-time shape check failed: ") + message +
             " (found " + std::to_string(lhs) + " and " + std::to_string(rhs) +
             ")");
}

extern "C" void tessera_not_converged(const char *message,
                                      std::int64_t iterations, double change) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g", change);
  raiseError(std::string(message) + "; after " + std::to_string(iterations) +
             " iterations the largest change was " + buffer);
}

extern "C" void tessera_failed(const char *message) {
  raiseError(message);
}
