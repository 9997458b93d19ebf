#pragma once
// The CUDA runtime as a program on the simulated device sees it: the calls it needs, answered by
// the interposer over host memory (docs/recorder.md lists them). On a real device each forwards to
// the CUDA runtime unchanged.

#include <cuda_runtime_api.h>

namespace memtrail::interpose {

// The result of a call on the simulated device; an error also becomes the thread's last error,
// as the runtime keeps it (cudaGetLastError).
cudaError_t simulated_result(cudaError_t result);

}  // namespace memtrail::interpose
