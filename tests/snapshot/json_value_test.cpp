// memtrail's one JSON reader: a tree of values, 64-bit integers exact, escapes decoded, and clear
// errors (with the byte offset, or the key and what was expected) for what is not JSON or not
// the shape asked for, including a document nested deep enough to exhaust a stack.

#include <gtest/gtest.h>

#include <string>

#include "memtrail/snapshot/json_value.hpp"

namespace memtrail::snapshot {
namespace {

TEST(json_value, reads_objects_arrays_and_exact_integers) {
    const json_value json = parse_json(
        R"({"path": "a.pickle", "ooms": [{"entry": 61, "remedies": {"checked": true,
            "tried": [{"setting": "expandable_segments:True", "peak_reserved": 18446744073709551615},
                      {"setting": "no memory cap", "avoids": false}]}}], "fraction": 0.25,
            "none": null})");
    EXPECT_EQ(json.at("path", "top").as_string("path"), "a.pickle");
    const auto& ooms = json.at("ooms", "top").as_array("ooms");
    ASSERT_EQ(ooms.size(), 1u);
    EXPECT_EQ(ooms[0].at("entry", "oom").as_uint("entry"), 61u);
    const auto& tried = ooms[0].at("remedies", "oom").at("tried", "remedies").as_array("tried");
    ASSERT_EQ(tried.size(), 2u);
    EXPECT_EQ(tried[0].at("peak_reserved", "t").as_uint("peak"), 18446744073709551615ull);
    EXPECT_FALSE(tried[1].at("avoids", "t").as_bool("avoids"));
    EXPECT_DOUBLE_EQ(json.at("fraction", "top").as_double("fraction"), 0.25);
    EXPECT_EQ(json.at("none", "top").kind, json_value::type::null);
    EXPECT_EQ(json.find("missing"), nullptr);
}

TEST(json_value, decodes_escapes_to_utf8) {
    const json_value json = parse_json(R"({"s": "a\"b\\c\/\n\t\u00e9\ud83d\ude00"})");
    EXPECT_EQ(json.at("s", "top").as_string("s"), "a\"b\\c/\n\t\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(json_value, rejects_what_is_not_json_naming_the_byte) {
    for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1} x", "\"\\x\"", "01a", "-", "1.",
                            "1e", "\"\\ud83d\"", "\"unterminated", "tru", "{'a':1}"}) {
        try {
            parse_json(bad);
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const json_error& e) {
            EXPECT_NE(std::string(e.what()).find("at byte "), std::string::npos) << e.what();
        }
    }
}

TEST(json_value, names_the_key_and_the_type_expected) {
    const json_value json = parse_json(R"({"n": "text", "neg": -1})");
    try {
        json.at("missing", "the report");
        FAIL() << "found";
    } catch (const json_error& e) {
        EXPECT_EQ(std::string(e.what()), "the report: the key 'missing' is missing");
    }
    EXPECT_THROW(json.at("n", "top").as_uint("n"), json_error);
    EXPECT_THROW(json.at("neg", "top").as_uint("neg"), json_error);
    EXPECT_EQ(json.at("neg", "top").as_int("neg"), -1);
}

TEST(json_value, refuses_nesting_deeper_than_its_bound) {
    const std::string deep(100000, '[');
    try {
        parse_json(deep);
        FAIL() << "accepted";
    } catch (const json_error& e) {
        EXPECT_NE(std::string(e.what()).find("nested more than"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace memtrail::snapshot
