#include "detail/table_row.hpp"

#include <imgui.h>

namespace memtrail::viewer {

void name_value_row(const char* name, const std::string& value) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", name);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(value.c_str());
}

}  // namespace memtrail::viewer
