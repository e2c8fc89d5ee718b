# `cmake --install`: the `tandem` compiler, libtandem_runtime with its C and C++ headers, and a
# CMake package, so that another project finds both with find_package(Tandem):
#   Tandem::runtime   the runtime library (include/tandem/runtime.h, runtime.hpp) that loads
#                     and runs exported models;
#   Tandem::compiler  the `tandem` program (for add_custom_command steps that export models), and
#                     what a plugin links (examples/plugin/): the compiler's headers, installed
#                     under include/tandem/compiler/ with their own folder structure ("ir/graph.h",
#                     "plugins/plugin.h"), C++20 and the header libraries they include (fmt,
#                     nlohmann/json). The program exports its symbols, so a plugin's references to
#                     Tandem resolve against the program (or the Python module) that loads it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(tandem_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(tandem PROPERTIES EXPORT_NAME compiler INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS tandem_runtime tandem
        EXPORT TandemTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tandem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(TANDEM_COMPILER_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tandem/compiler)
foreach(folder ir kernels backends tuning passes pipelines plugins)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder} DESTINATION ${TANDEM_COMPILER_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h")
endforeach()
target_include_directories(tandem INTERFACE
                           $<INSTALL_INTERFACE:${TANDEM_COMPILER_INCLUDEDIR}>
                           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
target_compile_features(tandem INTERFACE cxx_std_20)
target_link_libraries(tandem INTERFACE $<TARGET_NAME_IF_EXISTS:fmt::fmt>
                                       $<TARGET_NAME_IF_EXISTS:nlohmann_json::nlohmann_json>)

set(TANDEM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tandem)
install(EXPORT TandemTargets NAMESPACE Tandem:: DESTINATION ${TANDEM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TandemConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/TandemConfig.cmake
                              INSTALL_DESTINATION ${TANDEM_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TandemConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TandemConfig.cmake ${PROJECT_BINARY_DIR}/TandemConfigVersion.cmake
        DESTINATION ${TANDEM_CMAKE_DIR})
