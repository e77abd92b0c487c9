# Configures the project with LibTorch found but pybind11 and zlib hidden, as on the Windows portable
# build (an embedded Python with neither pybind11 nor headers, no system zlib): the configure must
# succeed, say what is left out and why, and still generate the core library.
#   cmake -DSOURCE=... -DWORK=... -DPYTHON=... -DGENERATOR=... -P configure_without_optional_deps.cmake
file(REMOVE_RECURSE "${WORK}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}" -G "${GENERATOR}" -DPython3_EXECUTABLE=${PYTHON}
          -DHEADROOM_CUDA=OFF -DHEADROOM_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure without pybind11 and zlib failed (${rc}):\n${err}")
endif()
# CMake wraps warnings at its own width: compare with the whitespace folded.
string(REGEX REPLACE "[ \n]+" " " err "${err}")
if(NOT err MATCHES "decoder module _headroom_torch is left out: pybind11 was not found")
  message(FATAL_ERROR "configure without pybind11 did not say the decoder module is left out:\n${err}")
endif()
if(NOT err MATCHES "headroom-decode [(]the command-line decoder[)] is left out: zlib was not found")
  message(FATAL_ERROR "configure without zlib did not say headroom-decode is left out:\n${err}")
endif()
if(NOT out MATCHES "Headroom: torch=ON")
  message(FATAL_ERROR "LibTorch was not found, so this case proved nothing:\n${out}")
endif()
file(GLOB_RECURSE generated LIST_DIRECTORIES false "${WORK}/*.ninja" "${WORK}/Makefile")
set(has_core OFF)
foreach(f IN LISTS generated)
  file(READ "${f}" text)
  if(text MATCHES "_headroom_torch[.]cpython|_headroom_torch[.]pyd|headroom-decode")
    message(FATAL_ERROR "the decoder module or headroom-decode is still a target in ${f}")
  endif()
  if(text MATCHES "libheadroom_core[.]so|headroom_core[.]dll|libheadroom_core[.]dylib")
    set(has_core ON)
  endif()
endforeach()
if(NOT has_core)
  message(FATAL_ERROR "the core library is not a target of the configure without pybind11 and zlib")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "configure without pybind11 and zlib: decoder module and headroom-decode left out with their reasons, core library kept")
