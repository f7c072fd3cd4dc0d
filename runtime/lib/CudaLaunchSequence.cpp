//===- CudaLaunchSequence.cpp - Launches recorded and replayed ----------===//
//
// cuda::LaunchSequence (Cuda.h): kernel launches recorded once with their
// packed parameters and queued again with other buffers' addresses
// patched in. It builds on the public buffer and kernel API; each launch
// is its own TMA launch site (Kernel::launch with a site).
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include <cstring>

using namespace tessera::runtime;
using namespace tessera::runtime::cuda;

LaunchSequence::~LaunchSequence() {
  for (const auto &launch : launches)
    launch->kernel.forgetSite(launch.get());
}

int LaunchSequence::addArgument() {
  Slot slot;
  slot.argument = true;
  slots.push_back(slot);
  argumentSlots.push_back(int(slots.size()) - 1);
  return int(slots.size()) - 1;
}

Result<int> LaunchSequence::addBuffer(DType type, std::vector<int64_t> shape,
                                      bool zeroed) {
  auto count = elementCount(shape);
  if (!count)
    return count.error();
  Slot slot;
  slot.type = type;
  slot.shape = std::move(shape);
  slot.zeroed = zeroed;
  slots.push_back(std::move(slot));
  pending.push_back(int(slots.size()) - 1);
  releasesKnown = false;
  return int(slots.size()) - 1;
}

Status LaunchSequence::markResult(int buffer) {
  if (buffer < 0 || buffer >= int(slots.size()) ||
      slots[std::size_t(buffer)].argument)
    return Error{"launch sequence: result " + std::to_string(buffer) +
                 " is not one of its " + std::to_string(slots.size()) +
                 " buffers or is an argument"};
  if (slots[std::size_t(buffer)].result)
    return Error{"launch sequence: buffer " + std::to_string(buffer) +
                 " is already a result"};
  slots[std::size_t(buffer)].result = true;
  resultSlots.push_back(buffer);
  releasesKnown = false;
  return Status::ok();
}

Status LaunchSequence::addLaunch(const Kernel &kernel,
                                 const LaunchConfig &config,
                                 std::vector<char> packed,
                                 std::vector<std::size_t> offsets,
                                 std::vector<Patch> patches) {
  std::string what = "launch sequence: launch " +
                     std::to_string(launches.size()) + " (kernel '" +
                     kernel.name() + "')";
  if (kernel.deviceIndex != deviceIndex)
    return Error{what +
                 " is loaded on cuda:" + std::to_string(kernel.deviceIndex) +
                 ", the sequence runs on cuda:" + std::to_string(deviceIndex)};
  for (std::size_t off : offsets)
    if (off >= packed.size())
      return Error{what + ": parameter offset " + std::to_string(off) +
                   " lies outside its " + std::to_string(packed.size()) +
                   " bytes"};
  for (const Patch &p : patches) {
    if (p.at + 8 > packed.size() || p.at % 8)
      return Error{what + ": an address at byte " + std::to_string(p.at) +
                   " does not fit its " + std::to_string(packed.size()) +
                   " bytes of parameters as an aligned 8-byte value"};
    if (p.buffer < 0 || p.buffer >= int(slots.size()))
      return Error{what + " reads buffer " + std::to_string(p.buffer) +
                   ", the sequence has " + std::to_string(slots.size())};
  }
  auto launch = std::make_unique<Launch>(Launch{kernel,
                                                config,
                                                std::move(packed),
                                                std::move(offsets),
                                                std::move(patches),
                                                std::move(pending),
                                                {}});
  pending.clear();
  for (const Patch &p : launch->patches)
    slots[std::size_t(p.buffer)].lastUse = int(launches.size());
  launches.push_back(std::move(launch));
  releasesKnown = false;
  return Status::ok();
}

Result<std::vector<DeviceBuffer>>
LaunchSequence::run(Stream &stream,
                    const std::vector<std::uint64_t> &arguments) {
  if (stream.device() != deviceIndex)
    return Error{
        "a launch sequence of cuda:" + std::to_string(deviceIndex) +
        " cannot run on a stream of cuda:" + std::to_string(stream.device())};
  if (arguments.size() != argumentSlots.size())
    return Error{"the launch sequence takes " +
                 std::to_string(argumentSlots.size()) + " arguments, got " +
                 std::to_string(arguments.size())};
  if (!releasesKnown) {
    for (auto &launch : launches)
      launch->release.clear();
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (!slots[i].argument && !slots[i].result && slots[i].lastUse >= 0)
        launches[std::size_t(slots[i].lastUse)]->release.push_back(int(i));
    releasesKnown = true;
  }
  std::vector<DeviceBuffer> live(slots.size());
  std::vector<std::uint64_t> address(slots.size(), 0);
  for (std::size_t i = 0; i < argumentSlots.size(); ++i)
    address[std::size_t(argumentSlots[i])] = arguments[i];
  auto allocate = [&](int b) -> Status {
    const Slot &slot = slots[std::size_t(b)];
    auto buffer = slot.zeroed ? DeviceBuffer::zeros(slot.type, slot.shape,
                                                    deviceIndex, &stream)
                              : DeviceBuffer::allocate(slot.type, slot.shape,
                                                       deviceIndex, &stream);
    if (!buffer)
      return buffer.error();
    address[std::size_t(b)] = buffer->pointer();
    live[std::size_t(b)] = std::move(*buffer);
    return Status::ok();
  };
  std::vector<char> packed;
  std::vector<void *> args;
  for (const auto &launch : launches) {
    for (int b : launch->allocate) {
      Status st = allocate(b);
      if (!st)
        return st.error();
    }
    packed = launch->packed;
    for (const Patch &p : launch->patches) {
      std::uint64_t a = address[std::size_t(p.buffer)] + std::uint64_t(p.delta);
      std::memcpy(packed.data() + p.at, &a, sizeof a);
    }
    args.clear();
    for (std::size_t off : launch->offsets)
      args.push_back(packed.data() + off);
    Status st =
        launch->kernel.launch(launch->config, stream, args, launch.get());
    if (!st)
      return st.error();
    for (int b : launch->release)
      live[std::size_t(b)] = DeviceBuffer();
  }
  for (int b : pending) { // allocated after the last launch
    Status st = allocate(b);
    if (!st)
      return st.error();
  }
  std::vector<DeviceBuffer> results;
  for (int b : resultSlots)
    results.push_back(live[std::size_t(b)]);
  return results;
}
