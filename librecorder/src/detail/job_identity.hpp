#pragma once
// Who a process is in a job of many (a rank of torchrun, of Slurm): what its launcher put in its
// environment, read with every other setting (environment.cpp), and the dump path placeholders
// that name files by it.

#include <string>
#include <string_view>

#include "memtrail/snapshot/model.hpp"

namespace memtrail::recorder::librecorder {

// As the snapshot's header records it: RANK, LOCAL_RANK and WORLD_SIZE (-1, -1 and 0 when
// unset), the job id TORCHELASTIC_RUN_ID (unless torchrun's "none"), else SLURM_JOB_ID.
using job_identity = snapshot::job_identity;

// `pattern` with %r (the rank), %l (the local rank) and %j (the job id) replaced, each by
// nothing when the launcher did not set it; every other placeholder (%p, %d, %t, %%) is left for
// expand_dump_path.
std::string expand_job_placeholders(std::string_view pattern, const job_identity& job);

}  // namespace memtrail::recorder::librecorder
