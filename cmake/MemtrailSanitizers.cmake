# MEMTRAIL_SANITIZE=address builds everything with ASan+UBSan, =thread with TSan.
if(MEMTRAIL_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(MEMTRAIL_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT MEMTRAIL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "MEMTRAIL_SANITIZE must be '', 'address' or 'thread', got '${MEMTRAIL_SANITIZE}'")
endif()

# The environment of tests whose forked children start threads: a recording child opens its own
# attach endpoint, whose accept thread TSan refuses after a multi-threaded fork unless told to go
# on (it then may miss races in the child; the parent's are checked as everywhere).
set(MEMTRAIL_FORKING_TEST_ENVIRONMENT "")
if(MEMTRAIL_SANITIZE STREQUAL "thread")
  set(MEMTRAIL_FORKING_TEST_ENVIRONMENT "TSAN_OPTIONS=die_after_fork=0")
endif()
