#pragma once
// Memory spaces and execution spaces, and which can read which (after Kokkos's
// MemorySpaceAccess). A KV cache declares where its tensors live
// (`memory_space`); an executor declares where it runs (`execution_space`).
// The engine refuses at compile time to pair an executor with a cache whose
// memory it cannot read.
//
//                   host_space  unified_space  device_space
//   cpu_execution      yes          yes            no
//   gpu_execution      no           yes            yes
//
// To add a space, declare the tag and specialise memory_space_access.

#include <concepts>

namespace izwi {

/// Ordinary process memory (malloc, mmap).
struct host_space {};
/// Memory that host and accelerator both address (Apple unified memory,
/// OpenCL shared virtual memory, CUDA managed memory).
struct unified_space {};
/// Accelerator memory that the host cannot dereference.
struct device_space {};

/// Runs on CPU cores.
struct cpu_execution {};
/// Runs on an accelerator (OpenCL device).
struct gpu_execution {};

template <class ExecutionSpace, class MemorySpace>
struct memory_space_access {
  static constexpr bool accessible = false;
};
template <> struct memory_space_access<cpu_execution, host_space> { static constexpr bool accessible = true; };
template <> struct memory_space_access<cpu_execution, unified_space> { static constexpr bool accessible = true; };
template <> struct memory_space_access<gpu_execution, unified_space> { static constexpr bool accessible = true; };
template <> struct memory_space_access<gpu_execution, device_space> { static constexpr bool accessible = true; };

/// True when code running in ExecutionSpace can read and write MemorySpace directly.
template <class ExecutionSpace, class MemorySpace>
concept accessible_from = memory_space_access<ExecutionSpace, MemorySpace>::accessible;

}  // namespace izwi
