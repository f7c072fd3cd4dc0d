# `cmake --install <build> --prefix <dir>`: the C++ API and runtime as a
# CMake package (lib/cmake/Tessera), their headers, and the tools.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS Tessera TesseraRuntime EXPORT TesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  COMPONENT tessera)
install(DIRECTORY include/tessera/API DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera
  COMPONENT tessera FILES_MATCHING PATTERN "*.h")
install(FILES include/tessera/Tessera.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera COMPONENT tessera)
install(DIRECTORY runtime/include/tessera/Runtime
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera COMPONENT tessera
  FILES_MATCHING PATTERN "*.h")
install(TARGETS tessera-opt tessera-run
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tessera)
set_target_properties(tessera-opt tessera-run PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
install(EXPORT TesseraTargets NAMESPACE Tessera::
  DESTINATION ${TESSERA_CMAKE_DIR} COMPONENT tessera)
configure_package_config_file(cmake/TesseraConfig.cmake.in
  ${CMAKE_BINARY_DIR}/TesseraConfig.cmake
  INSTALL_DESTINATION ${TESSERA_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/TesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/TesseraConfig.cmake
  ${CMAKE_BINARY_DIR}/TesseraConfigVersion.cmake
  DESTINATION ${TESSERA_CMAKE_DIR} COMPONENT tessera)
