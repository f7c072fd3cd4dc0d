//===- Errors.h - Errors raised by compiled code ----------------*- C++ -*-===//
//
// Compiled code reports a failed run-time check (a shape rule that depends
// on symbol values, an iteration that did not converge, memory that could
// not be allocated) by calling into the runtime, which unwinds to the
// caller of the compiled function; the caller gets the message as a value.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_ERRORS_H
#define TESSERA_RUNTIME_ERRORS_H

#include <cstdint>
#include <optional>
#include <string>

namespace tessera::runtime {

/// Runs `body(context)` (which calls compiled code) and returns the error
/// the compiled code raised, if any. Memory the interrupted call had
/// allocated is not freed. Not re-entrant on one thread.
std::optional<std::string> callCatchingErrors(void (*body)(void *),
                                              void *context);

/// Ends the current call with `message` (see callCatchingErrors). On a
/// thread with no call in progress (an OpenMP worker) the message is
/// printed and the process aborts.
[[noreturn]] void raiseError(const std::string &message);

} // namespace tessera::runtime

extern "C" {
/// A run-time shape check failed: `message` names the op and the rule;
/// `lhs` and `rhs` are the sizes found.
void tessera_shape_check_failed(const char *message, std::int64_t lhs,
                                std::int64_t rhs);
/// An iteration stopped at its limit: `change` is the last step's largest
/// change.
void tessera_not_converged(const char *message, std::int64_t iterations,
                           double change);
/// An op has no defined result for its input (the argmax of nothing, a
/// gather from an empty dim): `message` says which and why.
void tessera_failed(const char *message);
}

#endif // TESSERA_RUNTIME_ERRORS_H
