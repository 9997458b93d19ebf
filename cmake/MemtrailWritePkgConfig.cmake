# Run by `cmake --install` (MemtrailInstall.cmake sets the MEMTRAIL_PC_* inputs): writes
# memtrail.pc for the prefix being installed to. A library folder outside the linker's own gets a
# run path, so a program built with `pkg-config --libs memtrail` starts without LD_LIBRARY_PATH.
cmake_policy(VERSION 3.25)
set(prefix "${CMAKE_INSTALL_PREFIX}")
cmake_path(ABSOLUTE_PATH MEMTRAIL_PC_LIBDIR BASE_DIRECTORY "${prefix}" NORMALIZE
           OUTPUT_VARIABLE full_libdir)
if(IS_ABSOLUTE "${MEMTRAIL_PC_LIBDIR}")
  set(libdir "${MEMTRAIL_PC_LIBDIR}")
else()
  set(libdir "\${prefix}/${MEMTRAIL_PC_LIBDIR}")
endif()
if(IS_ABSOLUTE "${MEMTRAIL_PC_INCLUDEDIR}")
  set(includedir "${MEMTRAIL_PC_INCLUDEDIR}")
else()
  set(includedir "\${prefix}/${MEMTRAIL_PC_INCLUDEDIR}")
endif()
set(run_path "-Wl,-rpath,\${libdir} ")
if(full_libdir IN_LIST MEMTRAIL_PC_SYSTEM_LIBDIRS)
  set(run_path "")
endif()
configure_file("${MEMTRAIL_PC_TEMPLATE}" "${MEMTRAIL_PC_FILE}" @ONLY)
