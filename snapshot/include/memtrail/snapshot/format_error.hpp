#pragma once
// The errors of reading snapshots. format_error: the one error every snapshot reader throws for
// input it cannot accept (a truncated or corrupted file, an unsupported version, a value of the
// wrong type); its message says what was expected and where ("pickle: truncated BINUNICODE string
// at byte 1234: needs 500 bytes, 12 left"). load_error: a file that cannot be opened as one.

#include <stdexcept>
#include <string>

namespace memtrail::snapshot {

class format_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// A file that cannot be opened, is not a regular file, or is not a snapshot; the message starts
/// with the path ("run.pickle: truncated ...") as the CLI and the viewer print it.
class load_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

}  // namespace memtrail::snapshot
