# Warnings on for every memtrail target; the tree builds clean with them.
function(memtrail_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra>
    # GCC 12 at -O3 reports std::string concatenation as overlapping memcpy (GCC bug 105329).
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
endfunction()
