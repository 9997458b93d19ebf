#include "detail/text_search.hpp"

#include <cctype>

namespace memtrail::viewer {

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

}  // namespace memtrail::viewer
