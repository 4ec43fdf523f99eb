# SPDX-License-Identifier: MIT
# The inference-engine adapters (include/nnfuzz/adapters/): optional, for nnfuzz's own tests,
# examples and benchmarks. Included by the top-level CMakeLists.txt before the examples.
#
# Finds, each optional (a missing one is skipped with a message; the core never needs them):
#   OpenCV core + dnn   target nnfuzz_engine_opencv  (NNFUZZ_HAVE_OPENCV_DNN)
#   LibTorch            target nnfuzz_engine_torch   (NNFUZZ_HAVE_TORCH)
#   Debian's python3 with torch and onnx: tools/train_torch_mnist.py, which writes the test models
#                       (NNFUZZ_TORCH_PYTHON)
# and, with NNFUZZ_BUILD_TESTS, adds tests/adapters (ctest label `adapters`). The nnfuzz command
# (cli/, NNFUZZ_BUILD_CLI) is built when OpenCV DNN is found, with TorchScript support when LibTorch is.
#
# The installed package does not depend on any engine: a user includes
# <nnfuzz/adapters/opencv_dnn.hpp> or <nnfuzz/adapters/libtorch.hpp> and links nnfuzz::nnfuzz
# plus their own OpenCV or LibTorch (see docs/engines.md and tests/consumer/engine_adapter).
option(NNFUZZ_BUILD_ADAPTERS "Build the tests, example and benchmark of the OpenCV DNN and LibTorch adapters (skipped per engine when it is not found)" ON)

set(NNFUZZ_HAVE_OPENCV_DNN OFF)
set(NNFUZZ_HAVE_TORCH OFF)
if(NOT NNFUZZ_BUILD_ADAPTERS OR NOT (NNFUZZ_BUILD_TESTS OR NNFUZZ_BUILD_EXAMPLES OR NNFUZZ_BUILD_BENCHMARKS OR NNFUZZ_BUILD_CLI))
  return()  # nothing of nnfuzz's own uses the engines (an install-only configure without the nnfuzz command skips the search)
endif()

# OpenCV: its CMake package comes with libopencv-dev (all modules); Debian's libopencv-dnn-dev
# alone ships headers and libraries but no OpenCVConfig.cmake, so fall back to finding them.
find_package(OpenCV QUIET COMPONENTS core dnn)
if(OpenCV_FOUND)
  add_library(nnfuzz_engine_opencv INTERFACE)
  target_include_directories(nnfuzz_engine_opencv SYSTEM INTERFACE ${OpenCV_INCLUDE_DIRS})
  target_link_libraries(nnfuzz_engine_opencv INTERFACE ${OpenCV_LIBS})
  set(NNFUZZ_HAVE_OPENCV_DNN ON)
  message(STATUS "nnfuzz: OpenCV ${OpenCV_VERSION} found: OpenCV DNN adapter tests, example and benchmark enabled")
else()
  find_path(NNFUZZ_OPENCV_INCLUDE opencv2/dnn.hpp PATH_SUFFIXES opencv4)
  find_library(NNFUZZ_OPENCV_DNN_LIB opencv_dnn)
  find_library(NNFUZZ_OPENCV_CORE_LIB opencv_core)
  if(NNFUZZ_OPENCV_INCLUDE AND NNFUZZ_OPENCV_DNN_LIB AND NNFUZZ_OPENCV_CORE_LIB)
    add_library(nnfuzz_engine_opencv INTERFACE)
    target_include_directories(nnfuzz_engine_opencv SYSTEM INTERFACE ${NNFUZZ_OPENCV_INCLUDE})
    target_link_libraries(nnfuzz_engine_opencv INTERFACE ${NNFUZZ_OPENCV_DNN_LIB} ${NNFUZZ_OPENCV_CORE_LIB})
    set(NNFUZZ_HAVE_OPENCV_DNN ON)
    message(STATUS "nnfuzz: OpenCV DNN found (${NNFUZZ_OPENCV_DNN_LIB}, no OpenCVConfig.cmake): adapter enabled")
  else()
    message(STATUS "nnfuzz: OpenCV DNN not found (apt-get install libopencv-dnn-dev): its adapter's tests, example "
                   "and benchmark skipped")
  endif()
endif()

# LibTorch. Its config prints warnings of its own (kineto, CUDA) when they do not apply: quiet.
find_package(Torch QUIET)
if(Torch_FOUND OR TORCH_FOUND)
  add_library(nnfuzz_engine_torch INTERFACE)
  # SYSTEM: LibTorch's headers are not compiled with nnfuzz's warnings (-Wpedantic, -Werror).
  target_include_directories(nnfuzz_engine_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(nnfuzz_engine_torch INTERFACE ${TORCH_LIBRARIES})
  set(NNFUZZ_HAVE_TORCH ON)
  message(STATUS "nnfuzz: LibTorch found: LibTorch adapter tests, example and benchmark enabled")
else()
  message(STATUS "nnfuzz: LibTorch not found (apt-get install libtorch-dev): its adapter's tests, example and "
                 "benchmark skipped")
endif()

# The Python that makes the models: Debian's (python3-torch, python3-onnx), whatever python3
# comes first on the PATH (a pyenv or venv one usually has no torch).
find_program(NNFUZZ_TORCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT NNFUZZ_TORCH_PYTHON)
  find_program(NNFUZZ_TORCH_PYTHON NAMES python3)
endif()
set(NNFUZZ_MODEL_PYTHON "")  # python3 with torch and onnx, or "" (then the model-file tests skip)
if(NNFUZZ_TORCH_PYTHON AND (NNFUZZ_HAVE_OPENCV_DNN OR NNFUZZ_HAVE_TORCH))
  execute_process(COMMAND ${NNFUZZ_TORCH_PYTHON} -c "import torch, onnx"
    RESULT_VARIABLE _nnfuzz_py_rc OUTPUT_QUIET ERROR_QUIET)
  if(_nnfuzz_py_rc EQUAL 0)
    set(NNFUZZ_MODEL_PYTHON ${NNFUZZ_TORCH_PYTHON})
  else()
    message(STATUS "nnfuzz: ${NNFUZZ_TORCH_PYTHON} has no torch/onnx (apt-get install python3-torch python3-onnx): "
                   "the adapter tests will skip the parts that need model files")
  endif()
endif()

if(NNFUZZ_BUILD_TESTS AND (NNFUZZ_HAVE_OPENCV_DNN OR NNFUZZ_HAVE_TORCH))
  enable_testing()
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../tests/adapters ${CMAKE_BINARY_DIR}/tests/adapters)
endif()
