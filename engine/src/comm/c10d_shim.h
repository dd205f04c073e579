#pragma once
// The one place that knows which LibTorch the engine is built against. PyTorch 2 moved the
// collective implementations under c10d::Backend; 1.x has them as c10d::ProcessGroup
// subclasses. Both hand out c10d::Work, and ProcessGroupGloo keeps its constructor, so
// the engine holds its groups through `GroupBackend` and nothing else changes.
#include <torch/version.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#if defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace hippie::engine::shim {

#if TORCH_VERSION_MAJOR >= 2
using GroupBackend = ::c10d::Backend;
#else
using GroupBackend = ::c10d::ProcessGroup;
#endif
using WorkPtr = c10::intrusive_ptr<::c10d::Work>;
using GroupPtr = c10::intrusive_ptr<GroupBackend>;

}  // namespace hippie::engine::shim
