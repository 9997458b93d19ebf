"""Writes snapshot pickles with every variation torch 2.11 produces, with Python's own pickle.

    python3 torch_pickle_variants.py OUT_DIR

The values follow what PyTorch writes (torch/csrc/cuda/Module.cpp, memory_snapshot.cpp and the
symbolizer in torch/csrc/profiler/combined_traceback.cpp):
- a frame's unknown line is 2**64 - 1 where it went through uint64_t (Python frames of
  torch.compile'd and inductor code) and -1 where it did not;
- trace entries carry compile_context and user_metadata strings; entries without a stack have
  no 'frames' key;
- Python 3.14 pickles with protocol 5 by default (PROTO 5, FRAME); protocol 5 adds BYTEARRAY8.

tests/snapshot/torch_pickle_variants_test.cpp reads these files; the same files seed the fuzzer
(fuzz/snapshot/corpus/torch_pickle).
"""

import os
import pickle
import sys

U64_MAX = 2**64 - 1


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


def compiled_model_snapshot():
    """A torch.compile(mode="reduce-overhead") step: frames without lines, compile contexts."""
    user = frame("forward", "/work/model.py", 42)
    inductor = frame("call", "/tmp/torchinductor_root/xy/cxyz.py", U64_MAX)
    unknown = frame("<module>", "<eval_with_key>.3", -1)
    stack = [inductor, unknown, user]
    trace = [
        {"action": "segment_alloc", "addr": 0x7F0000000000, "size": 2097152, "stream": 0,
         "time_us": 1700000000000000, "compile_context": "0/0", "user_metadata": "",
         "frames": stack},
        {"action": "alloc", "addr": 0x7F0000000000, "size": 4096, "stream": 0,
         "time_us": 1700000000000010, "compile_context": "0/0",
         "user_metadata": "step 3", "frames": stack},
        {"action": "free_requested", "addr": 0x7F0000000000, "size": 4096, "stream": 0,
         "time_us": 1700000000000020, "compile_context": "N/A", "user_metadata": "",
         "frames": [user]},
        {"action": "free_completed", "addr": 0x7F0000000000, "size": 4096, "stream": 0,
         "time_us": 1700000000000030, "compile_context": "N/A", "user_metadata": ""},
    ]
    segment = {
        "device": 0, "address": 0x7F0000000000, "total_size": 2097152, "allocated_size": 0,
        "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "small",
        "segment_pool_id": (0, 0), "is_expandable": False, "frames": stack,
        "blocks": [{"address": 0x7F0000000000, "size": 2097152, "requested_size": 0,
                    "state": "inactive", "frames": []}],
    }
    return {
        "segments": [segment],
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None, "max_split_size": -1,
                               "garbage_collection_threshold": 0.0,
                               "expandable_segments": False,
                               "roundup_power2_divisions": {"1": 0, "2": 0}},
        "external_annotations": [],
    }


def missing_fields_snapshot():
    """Only what every PyTorch version writes: no times, stacks, contexts or settings."""
    return {
        "segments": [{"device": 0, "address": 4096, "total_size": 1024,
                      "blocks": [{"address": 4096, "size": 1024, "state": "active_allocated"}]}],
        "device_traces": [[{"action": "alloc", "addr": 4096, "size": 1000},
                           {"action": "oom", "device_free": 123, "size": 2048},
                           {"action": "snapshot"}]],
    }


def signed_stream_snapshot():
    """int64 fields may be negative (stream is int64_t(handle)); a protocol 5 bytearray."""
    s = missing_fields_snapshot()
    s["device_traces"][0][0]["stream"] = -1
    s["device_traces"][0][0]["payload"] = bytearray(b"kept out of the model")
    return s


VARIANTS = {
    "compiled_protocol4.pickle": (compiled_model_snapshot, 4),
    "compiled_protocol5.pickle": (compiled_model_snapshot, 5),
    "compiled_protocol2.pickle": (compiled_model_snapshot, 2),
    "missing_fields.pickle": (missing_fields_snapshot, 4),
    "signed_stream_protocol5.pickle": (signed_stream_snapshot, 5),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (make, protocol) in VARIANTS.items():
        with open(os.path.join(out, name), "wb") as f:
            pickle.dump(make(), f, protocol=protocol)


if __name__ == "__main__":
    main()
