#pragma once
// JSON pieces several reports share.

#include "common.hpp"
#include "json_writer.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/memory_state.hpp"

namespace memtrail::cli {

void write_totals(json_writer& json, const analysis::memory_totals& totals);
void write_moment(json_writer& json, const analysis::device_model& model, const moment& at);
void write_peaks(json_writer& json, const analysis::device_model& model);
void write_reconstruction(json_writer& json, const analysis::device_model& model);
// The stack as an array of frame labels, innermost first.
void write_stack(json_writer& json, const snapshot::snapshot& source, snapshot::stack_id stack);

}  // namespace memtrail::cli
