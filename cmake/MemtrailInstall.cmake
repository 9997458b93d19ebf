# What `cmake --install` puts under the prefix: the `memtrail` CLI and the viewer, librecorder and
# the public C++ libraries with their headers, a CMake package (find_package(memtrail CONFIG)), a
# pkg-config file for C programs (memtrail.pc: librecorder) and the documentation.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MEMTRAIL_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/memtrail)

# Every library of the public modules is exported, so a library added to one of these folders
# joins the package with no edit here. memtrail_<name> is exported as memtrail::<name>, the name
# of its in-tree alias (a library that sets EXPORT_NAME keeps its own). In the tree a library's
# include directories are source or build folders; installed, its headers are under include/.
set(memtrail_public_modules rules core snapshot bridge replay stacks recorder live librecorder analysis)
set(memtrail_exported_libraries "")
foreach(module IN LISTS memtrail_public_modules)
  get_property(module_targets DIRECTORY ${PROJECT_SOURCE_DIR}/${module} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS module_targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "_LIBRARY$")
      continue()
    endif()
    list(APPEND memtrail_exported_libraries ${target})
    get_target_property(export_name ${target} EXPORT_NAME)
    if(NOT export_name)
      string(REGEX REPLACE "^memtrail_" "" export_name ${target})
      set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
    endif()
    # The static libraries are C++ whose headers need C++20; librecorder's header is C.
    if(type STREQUAL "STATIC_LIBRARY")
      target_compile_features(${target} INTERFACE cxx_std_20)
    endif()
    get_target_property(include_dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(include_dirs)
      set(interface_dirs "")
      foreach(dir IN LISTS include_dirs)
        cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${dir}" NORMALIZE in_source)
        cmake_path(IS_PREFIX PROJECT_BINARY_DIR "${dir}" NORMALIZE in_build)
        if(in_source OR in_build)
          list(APPEND interface_dirs "$<BUILD_INTERFACE:${dir}>")
        else()
          list(APPEND interface_dirs "${dir}")
        endif()
      endforeach()
      set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${interface_dirs}")
    endif()
  endforeach()
endforeach()

install(TARGETS ${memtrail_exported_libraries} EXPORT memtrail_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(module IN LISTS memtrail_public_modules)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${module}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
endforeach()
install(DIRECTORY ${MEMTRAIL_GENERATED_INCLUDE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The programs find the installed libraries beside them, wherever the prefix is moved (their
# RUNPATH is set once for the whole project, CMakeLists.txt).
set(memtrail_programs memtrail)
if(TARGET memtrail-viewer)
  list(APPEND memtrail_programs memtrail-viewer)
endif()
install(TARGETS ${memtrail_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `memtrail run python ...` puts this folder first on PYTHONPATH (beside the interposer).
if(TARGET memtrail_interpose)
  install(FILES ${PROJECT_SOURCE_DIR}/librecorder/src/interpose/sitecustomize.py
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/memtrail/python)
endif()

# The CMake package: memtrail-targets.cmake from the export, a config that finds the libraries'
# own dependencies first, and a version file (0.x: a new minor version may change the API).
install(EXPORT memtrail_targets NAMESPACE memtrail:: FILE memtrail-targets.cmake
        DESTINATION ${MEMTRAIL_PACKAGE_DIR})
# The toolkit memtrail was built with is where the package looks for CUDA first.
set(MEMTRAIL_PACKAGE_CUDA_ROOT "")
if(MEMTRAIL_HAVE_CUDA)
  cmake_path(GET CUDAToolkit_BIN_DIR PARENT_PATH MEMTRAIL_PACKAGE_CUDA_ROOT)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/memtrail-config.cmake.in
  ${PROJECT_BINARY_DIR}/package/memtrail-config.cmake INSTALL_DESTINATION ${MEMTRAIL_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/memtrail-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/memtrail-config.cmake
              ${PROJECT_BINARY_DIR}/package/memtrail-config-version.cmake
        DESTINATION ${MEMTRAIL_PACKAGE_DIR})

# memtrail.pc names the prefix given at install time (cmake --install --prefix), so it is written
# then, by MemtrailWritePkgConfig.cmake.
install(CODE "
  set(MEMTRAIL_PC_TEMPLATE \"${CMAKE_CURRENT_LIST_DIR}/memtrail.pc.in\")
  set(MEMTRAIL_PC_FILE \"${PROJECT_BINARY_DIR}/package/memtrail.pc\")
  set(MEMTRAIL_PC_VERSION \"${memtrail_VERSION}\")
  set(MEMTRAIL_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(MEMTRAIL_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(MEMTRAIL_PC_SYSTEM_LIBDIRS \"${CMAKE_C_IMPLICIT_LINK_DIRECTORIES}\")")
install(SCRIPT ${CMAKE_CURRENT_LIST_DIR}/MemtrailWritePkgConfig.cmake)
install(FILES ${PROJECT_BINARY_DIR}/package/memtrail.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The documentation, and the samples, which are part of it.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/samples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/samples
        PATTERN CMakeLists.txt EXCLUDE)
