#pragma once
// The row of a two-column table of names and values (the allocation's properties, the OOM's
// numbers, the stats): the name dim, the value plain.

#include <string>

namespace memtrail::viewer {

void name_value_row(const char* name, const std::string& value);

}  // namespace memtrail::viewer
