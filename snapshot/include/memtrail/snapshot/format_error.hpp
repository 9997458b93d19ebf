#pragma once
// The one error every snapshot reader throws for input it cannot accept: a truncated or corrupted
// file, an unsupported version, a value of the wrong type. The message says what was expected and
// where ("pickle: truncated BINUNICODE string at byte 1234: needs 500 bytes, 12 left").

#include <stdexcept>
#include <string>

namespace memtrail::snapshot {

class format_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace memtrail::snapshot
