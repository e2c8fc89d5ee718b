# Every dependency comes from a Debian 12 package (scripts/setup.sh installs them) and is found
# with find_package or pkg-config; nothing is vendored.

find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS graph)
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED)
find_package(dnnl REQUIRED)
# Debian's XGBoost CMake config refers to the command-line program of another package, so the
# C API library is found directly.
find_library(TANDEM_XGBOOST_LIBRARY NAMES xgboost REQUIRED)
find_path(TANDEM_XGBOOST_INCLUDE_DIR xgboost/c_api.h REQUIRED)
add_library(tandem_xgboost INTERFACE)
target_link_libraries(tandem_xgboost INTERFACE ${TANDEM_XGBOOST_LIBRARY})
target_include_directories(tandem_xgboost SYSTEM INTERFACE ${TANDEM_XGBOOST_INCLUDE_DIR})
find_package(Threads REQUIRED)

find_package(LLVM 16 REQUIRED CONFIG PATHS /usr/lib/llvm-16/lib/cmake/llvm NO_DEFAULT_PATH)
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
add_library(tandem_llvm INTERFACE)
target_include_directories(tandem_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(tandem_llvm INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(tandem_llvm INTERFACE LLVM)
target_link_directories(tandem_llvm INTERFACE ${LLVM_LIBRARY_DIRS})

# ONNX protobuf types (onnx_proto carries ONNX_NAMESPACE=onnx and ONNX_ML=1).
add_library(tandem_onnx INTERFACE)
target_link_libraries(tandem_onnx INTERFACE onnx_proto protobuf::libprotobuf)


# The CUDA toolkit is optional: detected, never required.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  message(STATUS "CUDA toolkit ${CUDAToolkit_VERSION} found at ${CUDAToolkit_BIN_DIR}")
  set(TANDEM_HAVE_CUDA ON)
else()
  message(STATUS "CUDA toolkit not found: CUDA code generation and cuBLAS are disabled")
  set(TANDEM_HAVE_CUDA OFF)
endif()
