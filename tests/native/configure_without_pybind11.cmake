# Configures the project with LibTorch found but pybind11 hidden (as for the Windows portable build's
# embedded Python, which has neither pybind11 nor headers): the configure must succeed, say why the
# decoder module is left out, and still generate the core library.
#   cmake -DSOURCE=... -DWORK=... -DPYTHON=... -DGENERATOR=... -P configure_without_pybind11.cmake
file(REMOVE_RECURSE "${WORK}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}" -G "${GENERATOR}" -DPython3_EXECUTABLE=${PYTHON}
          -DHEADROOM_CUDA=OFF -DHEADROOM_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure without pybind11 failed (${rc}):\n${err}")
endif()
if(NOT err MATCHES "decoder module _headroom_torch is left out: pybind11 was not[ \n]+found")
  message(FATAL_ERROR "configure without pybind11 did not say the decoder module is left out:\n${err}")
endif()
if(NOT out MATCHES "Headroom: torch=ON")
  message(FATAL_ERROR "LibTorch was not found, so this case proved nothing:\n${out}")
endif()
file(GLOB_RECURSE generated LIST_DIRECTORIES false "${WORK}/*.ninja" "${WORK}/Makefile")
set(has_core OFF)
foreach(f IN LISTS generated)
  file(READ "${f}" text)
  if(text MATCHES "_headroom_torch[.]cpython|_headroom_torch[.]pyd")
    message(FATAL_ERROR "the decoder module is still a target in ${f}")
  endif()
  if(text MATCHES "libheadroom_core[.]so|headroom_core[.]dll|libheadroom_core[.]dylib")
    set(has_core ON)
  endif()
endforeach()
if(NOT has_core)
  message(FATAL_ERROR "the core library is not a target of the configure without pybind11")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "configure without pybind11: decoder module left out with its reason, core library kept")
