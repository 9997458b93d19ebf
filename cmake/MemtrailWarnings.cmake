# Warnings on for every memtrail target; the tree builds clean with them.
function(memtrail_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra>)
endfunction()
