#pragma once
// Case-insensitive matching for the search box.

#include <string>
#include <string_view>

namespace memtrail::viewer {

std::string lowercase(std::string_view text);

}  // namespace memtrail::viewer
