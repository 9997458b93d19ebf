#pragma once
// Who asked CUDA for memory outside memtrail's allocator: the module of the first frame, walking
// out from the hook, that is neither CUDA's (libcudart, libcuda) nor memtrail's. librecorder
// names it for people (snapshot::library_of_module: libcublasLt.so.12 is "cuBLAS").

namespace memtrail::interpose {

// That module's path as the dynamic loader knows it (the program's own: its path or ""); ""
// when the stack cannot be walked past CUDA. Walks the stack: for the rare outside calls only.
const char* caller_module();

}  // namespace memtrail::interpose
